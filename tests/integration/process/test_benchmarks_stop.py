"""A benchmark stopped with SIGTERM (`kill`, a CI job's timeout) stops the servers it started.

Python's default SIGTERM ends a script without running its `finally` blocks, which left
`benchmarks/apiserver.py`'s `jobmachine apiserver` child running after the script was gone;
`benchmarks/stopping.py` turns the signal into an orderly exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.polling import eventually
from tests.processes import alive, children

ROOT = Path(__file__).resolve().parents[3]


def test_sigterm_stops_the_benchmark_and_its_api_server() -> None:
    benchmark = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "apiserver.py")], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    servers: set[int] = set()
    try:
        assert benchmark.stdout is not None
        while b"server: jobmachine apiserver" not in benchmark.stdout.readline():
            assert benchmark.poll() is None, "the benchmark ended before it measured"
        servers = eventually(lambda: children(benchmark.pid), timeout=60)
        benchmark.send_signal(signal.SIGTERM)
        assert benchmark.wait(60) == 143
        eventually(lambda: not any(alive(pid) for pid in servers), timeout=30)
    finally:
        if benchmark.poll() is None:
            os.killpg(benchmark.pid, signal.SIGKILL)
            benchmark.wait(10)
        for pid in servers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
