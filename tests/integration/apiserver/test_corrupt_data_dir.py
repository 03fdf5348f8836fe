"""A damaged data dir, as the admin meets it: one line on stderr, then `repair-data`.

`jobmachine apiserver` and `jobmachine up` run as the admin runs them, on a data
dir whose journal has a garbled line in the middle: each exits 1 with a single
`error: FILE:LINE: ...` line naming the repair command, and no traceback.
`jobmachine repair-data` then moves that line aside and the server starts with
every other object.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.storage.persistence import JOURNAL

JOBMACHINE = Path(sys.executable).with_name("jobmachine")
GARBLED = b'{"rv":12,"op":"put","g":"","r":"configm\x00\x00\x00 garbage'
NOT_JSON = "not JSON (unexpected control character in string at column 40)"
_URL = re.compile(r"serving at (\S+)")


@contextmanager
def _core_api(kubeconfig: Path) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        yield client.CoreV1Api(api)
    finally:
        api.close()


def _jobmachine(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(JOBMACHINE), *args], capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, int]:
    """A data dir with configmaps kept-1, lost and kept-2, the line of `lost` garbled;
    the number of that line."""
    data_dir = tmp_path / "data"
    with running_apiserver(data_dir=data_dir) as server, _core_api(server.kubeconfig) as core:
        for name in ("kept-1", "lost", "kept-2"):
            core.create_namespaced_config_map(
                "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name)))
    journal = data_dir / JOURNAL
    lines = journal.read_bytes().split(b"\n")
    number = next(i for i, line in enumerate(lines, 1) if b'"name":"lost"' in line)
    lines[number - 1] = GARBLED
    journal.write_bytes(b"\n".join(lines))
    return data_dir, number


@pytest.mark.parametrize(
    "command",
    [["apiserver", "--no-tls"], ["up", "--node-mode", "simulate", "--no-engine"]],
    ids=["apiserver", "up"],
)
def test_a_damaged_data_dir_stops_the_start_in_one_line(
    damaged: tuple[Path, int], command: list[str]
) -> None:
    data_dir, number = damaged
    result = _jobmachine(*command, "--data-dir", str(data_dir), "--port", "0")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"error: {data_dir / JOURNAL}:{number}: {NOT_JSON}; to start with the good records "
        f"only, run `jobmachine repair-data --data-dir {data_dir}` (it moves the bad ones aside)"
    ]
    assert "serving at" not in result.stdout and "is up at" not in result.stdout


def test_repair_data_moves_the_line_aside_and_the_server_starts(
    damaged: tuple[Path, int],
) -> None:
    data_dir, number = damaged
    dry_run = _jobmachine("repair-data", "--data-dir", str(data_dir), "--dry-run")
    assert dry_run.returncode == 1
    assert f"would move 1 line aside:\n  line {number}: {NOT_JSON}\n" in dry_run.stdout
    assert not list(data_dir.glob("*.rejected-*"))

    repaired = _jobmachine("repair-data", "--data-dir", str(data_dir))
    assert repaired.returncode == 0, repaired.stderr
    [rejected] = data_dir.glob(f"{JOURNAL}.rejected-*")
    assert f"moved 1 line aside to {rejected}:" in repaired.stdout
    assert rejected.read_bytes().split(b"\n")[2:4] == [
        f"# line {number}: {NOT_JSON}".encode(), GARBLED]
    assert len(list(data_dir.glob(f"{JOURNAL}.bak-*"))) == 1

    process = subprocess.Popen(
        [str(JOBMACHINE), "apiserver", "--no-tls", "--data-dir", str(data_dir), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if _URL.search(line):
                break
        else:
            raise AssertionError(f"the server exited with {process.wait()}")
        with _core_api(data_dir / "kubeconfig") as core:
            items = core.list_namespaced_config_map("default").items
        names = {item.metadata.name for item in items if item.metadata is not None}
        assert names >= {"kept-1", "kept-2"}
        assert "lost" not in names
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
