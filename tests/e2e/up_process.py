"""The real `jobmachine up` as a user runs it: a subprocess, read from its printed lines,
stopped with Ctrl-C (a stop that needs a kill fails the test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.polling import eventually

JOBMACHINE = str(Path(sys.executable).with_name("jobmachine"))
WAIT = 60.0


@dataclass(frozen=True)
class RunningUp:
    """Where a running `up` serves, as it printed it."""

    url: str
    kubeconfig: Path
    output: Path
    env: dict[str, str]
    """The environment it runs in, without the caller's KUBE* and HTTP* variables."""


def _printed(out: Path, err: Path, process: subprocess.Popen[str], prefix: str) -> str | None:
    """The rest of the first line `up` printed starting with `prefix`; None while it has not
    yet; fails if `up` exited."""
    for line in out.read_text().splitlines():
        if line.startswith(prefix):
            return line.removeprefix(prefix)
    if process.poll() is not None:
        raise AssertionError(f"`jobmachine up` exited {process.returncode} before serving:\n"
                             f"{err.read_text()[-3000:]}")
    return None


def stop(process: subprocess.Popen[str], err: Path) -> None:
    """Ctrl-C, then wait; killed only if it does not stop, which fails the test."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError("`jobmachine up` did not stop on Ctrl-C") from None
    assert process.returncode == 0, (
        f"`jobmachine up` exited {process.returncode}:\n{err.read_text()[-3000:]}")


@contextmanager
def running_up(home: Path, *args: str, path_first: Path | None = None) -> Iterator[RunningUp]:
    """`jobmachine up --data-dir HOME/data --port 0 ARGS` until the block ends; `path_first`
    goes first on its PATH, as an activated venv's bin folder does."""
    out, err = home / "up.out", home / "up.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "HTTP"))}
    if path_first is not None:
        env["PATH"] = os.pathsep.join((str(path_first), env.get("PATH", "")))
    command = [JOBMACHINE, "up", "--data-dir", str(home / "data"), "--port", "0", *args]
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True, env=env)
    try:
        kubeconfig = eventually(lambda: _printed(out, err, process, "export KUBECONFIG="),
                                timeout=WAIT, interval=0.1)
        url = eventually(lambda: _printed(out, err, process, "jobmachine is up at "),
                         timeout=WAIT, interval=0.1)
        assert kubeconfig is not None and url is not None
        yield RunningUp(url.split(" ", 1)[0], Path(kubeconfig), out, env)
    finally:
        stop(process, err)
