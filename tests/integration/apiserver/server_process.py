"""`jobmachine apiserver` as a subprocess, for tests of what survives the process."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kubernetes import client, config

_URL = re.compile(r"serving at (\S+)")


@contextmanager
def apiserver_process(data_dir: Path, *flags: str, kill: bool = False
                      ) -> Iterator[client.CoreV1Api]:
    """`jobmachine apiserver --port 0 --data-dir DIR FLAGS`, and a client for it; stopped at the
    end with SIGTERM, or with SIGKILL when `kill` (nothing flushed, as a crash)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "apiserver", "--port", "0", "--data-dir",
         str(data_dir), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert process.stdout is not None
        if not any(_URL.search(line) for line in process.stdout):
            raise AssertionError(f"the server exited with {process.wait()}")
        api = config.new_client_from_config(config_file=str(data_dir / "kubeconfig"))
        try:
            yield client.CoreV1Api(api)
        finally:
            api.close()
    finally:
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
