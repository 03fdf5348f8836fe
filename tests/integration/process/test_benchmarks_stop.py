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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_the_benchmark_and_its_api_server() -> None:
    benchmark = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "apiserver.py")], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    servers: list[int] = []
    try:
        assert benchmark.stdout is not None
        while b"server: jobmachine apiserver" not in benchmark.stdout.readline():
            assert benchmark.poll() is None, "the benchmark ended before it measured"
        deadline = time.monotonic() + 60
        while not servers and time.monotonic() < deadline:
            servers = _children(benchmark.pid)
            time.sleep(0.05)
        assert servers, "the benchmark started no server"
        benchmark.send_signal(signal.SIGTERM)
        assert benchmark.wait(60) == 143
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in servers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in servers), "its API server outlived it"
    finally:
        if benchmark.poll() is None:
            os.killpg(benchmark.pid, signal.SIGKILL)
            benchmark.wait(10)
        for pid in servers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
