"""`jobmachine up` and `jobmachine run --ui-port` serve the web view where they say they do.

`up` prints a link with the admin token (one click logs a browser in); `run` prints the
address only. Both run as a user runs them: subprocesses, stopped with Ctrl-C.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.up_process import JOBMACHINE, running_up
from tests.integration.app.web.browsing import request, session_cookie
from tests.polling import eventually

pytestmark = pytest.mark.slow

PREFIX = "web view: "


def _printed(out: Path) -> str:
    return next((line.removeprefix(PREFIX) for line in out.read_text().splitlines()
                 if line.startswith(PREFIX)), "")


def test_up_prints_a_login_link_and_run_serves_the_view_on_demand(tmp_path: Path) -> None:
    with running_up(tmp_path, "--no-engine", "--node-mode", "simulate", "--ui-port", "0") as up:
        link = eventually(lambda: _printed(up.output), timeout=30)
        parts = urlsplit(link)
        assert parts.hostname == "127.0.0.1"
        assert parts.query.startswith("token=")
        base = f"{parts.scheme}://{parts.netloc}"
        assert request(base + "/").status == 401
        logged_in = request(link)
        assert logged_in.status == 303
        assert request(base + "/", cookie=session_cookie(logged_in)).status == 200

        out = tmp_path / "run.out"
        with out.open("w") as stdout:
            engine = subprocess.Popen(
                [JOBMACHINE, "run", "--kubeconfig", str(up.kubeconfig), "--ui-port", "0"],
                stdout=stdout, stderr=subprocess.DEVNULL, env=up.env)
        try:
            address = eventually(lambda: _printed(out), timeout=60)
            url = address.split(" ", 1)[0]
            assert urlsplit(url).hostname == "127.0.0.1"
            assert "token=" not in address
            token = parts.query.removeprefix("token=")
            assert request(url + "/").status == 401
            assert request(url + "/", token=token).status == 200
        finally:
            _stop(engine)
        assert engine.returncode == 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, then wait; killed only if it does not stop (the test then fails)."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
