"""Entering a running container's process: a command run through the entry sees what the
container sees (its mounts, working directory and environment), started the node's own way."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import pytest

from engine.cluster.apiserver.exec.container_ids import (
    is_simulated,
    process_container_id,
    process_id,
    simulated_container_id,
)
from engine.cluster.apiserver.exec.entry import EntryError, enter
from engine.cluster.node.runtime.isolation import MountIsolation, inspect, namespace_command
from engine.cluster.node.runtime.mounts import Bind, plan_mounts
from tests.polling import eventually

pytestmark = pytest.mark.skipif(shutil.which("nsenter") is None, reason="needs nsenter")


@contextmanager
def _started(argv: list[str], *, cwd: Path, env: dict[str, str]) -> Iterator[int]:
    """A container-like process: the leader of a session of its own."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True)
    try:
        # Popen returns once the program is being executed, before its environment shows.
        eventually(lambda: Path(f"/proc/{process.pid}/environ").read_bytes())
        yield process.pid
    finally:
        process.kill()
        process.wait()


def _run(pid: int, script: str) -> subprocess.CompletedProcess[str]:
    entry = enter(pid)
    try:
        return subprocess.run([*entry.prefix, "sh", "-c", script], env=entry.env,
                              pass_fds=entry.fds, capture_output=True, text=True, timeout=30,
                              check=False)
    finally:
        entry.close()


def test_a_command_sees_the_containers_hosts_file_working_directory_and_environment(
        tmp_path: Path) -> None:
    isolation = MountIsolation().entry()
    if isolation is None:
        pytest.skip("no private mount namespace can be had here")
    hosts, work, scratch = tmp_path / "hosts", tmp_path / "work", tmp_path / "scratch"
    hosts.write_text("127.0.0.1\tmy-pod\n")
    work.mkdir()
    scratch.mkdir()
    plan = plan_mounts([Bind(hosts, PurePosixPath("/etc/hosts"), directory=False)], inspect)
    argv = namespace_command(isolation, plan, ["sh", "-c", "echo up > marker; exec sleep 60"],
                             scratch=scratch, workdir=PurePosixPath(work))
    env = {**os.environ, "GREETING": "from the container"}
    with _started(argv, cwd=tmp_path, env=env) as pid:
        eventually((work / "marker").exists)
        done = _run(pid, 'cat /etc/hosts; pwd; cat marker; echo "$GREETING"')
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout.splitlines() == ["127.0.0.1\tmy-pod", str(work), "up",
                                            "from the container"]
        assert "my-pod" not in Path("/etc/hosts").read_text()


def test_a_process_without_namespaces_of_its_own_is_entered_in_its_directory(
        tmp_path: Path) -> None:
    env = {**os.environ, "GREETING": "plain"}
    with _started(["sleep", "60"], cwd=tmp_path, env=env) as pid:
        entry = enter(pid)
        entry.close()
        assert entry.prefix == [shutil.which("nsenter"), f"--wd=/proc/{pid}/cwd", "--"]
        assert entry.env["GREETING"] == "plain"
        assert _run(pid, 'pwd; echo "$GREETING"').stdout.splitlines() == [str(tmp_path),
                                                                         "plain"]


def test_a_process_that_is_not_a_containers_leader_is_refused(tmp_path: Path) -> None:
    process = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    try:
        with pytest.raises(EntryError, match=f"process {process.pid} is no longer the "):
            enter(process.pid)
    finally:
        process.kill()
        process.wait()


def test_a_process_that_has_ended_is_refused(tmp_path: Path) -> None:
    process = subprocess.Popen(["true"], cwd=tmp_path, start_new_session=True)
    process.wait()
    with pytest.raises(EntryError, match=f"process {process.pid} has ended"):
        enter(process.pid)


def test_the_container_id_names_the_process_the_node_started() -> None:
    assert process_id(process_container_id(4242)) == 4242
    assert process_container_id(4242) == "jobmachine-process://4242"
    simulated = simulated_container_id("abc")
    assert (process_id(simulated), is_simulated(simulated)) == (None, True)
    assert process_id("jobmachine-process://") is None
    assert process_id("containerd://4242") is None
    assert not is_simulated(process_container_id(1))
