"""The commands as a user runs them: `jobmachine up` in a subprocess (Ctrl-C stops it cleanly)
and `run_engine` (what `jobmachine run` calls) with leader election against a cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from engine.app.run import RunOptions, run_engine
from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import running_node
from engine.controller.machines.install import prepare_cluster
from engine.kube.client import KubeClient
from engine.kube.resources import LEASES
from engine.settings import EngineSettings
from tests.integration.app.support import PYTORCHJOBS, job_status, wait_until, workers_job
from tests.kinds import CRDS, MACHINES
from tests.processes import alive, children

FAST = {"sim.jobmachine.dev/run-seconds": "0.1"}


def _read_line(process: subprocess.Popen[str], prefix: str) -> str:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"`jobmachine up` ended without printing {prefix!r}")


def test_up_serves_kubectl_ready_cluster_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "up", "--data-dir", str(data_dir), "--port", "0",
         "--node-mode", "simulate"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "JOBMACHINE_REPLICA_BACKOFF_BASE_S": "0.1"},
    )
    try:
        export = _read_line(process, "export KUBECONFIG=")
        kubeconfig = Path(export.split("=", 1)[1])
        assert kubeconfig == data_dir / "kubeconfig"
        client = KubeClient.from_kubeconfig(kubeconfig)
        try:
            client.create(PYTORCHJOBS, workers_job("cli", workers=1, annotations=FAST),
                          "default")
            wait_until(lambda: job_status(client, "cli").get("phase"),
                       lambda phase: phase == "Succeeded", what="the job to succeed")
        finally:
            client.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _commands(pids: set[int]) -> dict[int, list[bytes]]:
    """Each process's command line, split at its NULs (empty: none yet, or gone)."""
    found: dict[int, list[bytes]] = {}
    for pid in pids:
        try:
            found[pid] = [arg for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                          if arg]
        except FileNotFoundError:
            found[pid] = []
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_up_runs_the_node_and_the_engine_as_processes_which_end_when_up_is_killed(
    tmp_path: Path,
) -> None:
    """The node and the engine each have a process (and a core) of their own, as a kubelet
    and a controller do, and `kill -9` of `up` leaves neither behind."""
    process = _up(tmp_path)
    started: set[int] = set()
    try:
        _read_line(process, "export KUBECONFIG=")
        # A child caught in its exec has no command line yet: wait for both.
        commands = wait_until(lambda: _commands(children(process.pid)),
                              lambda found: len(found) == 2 and all(found.values()),
                              what="two children of up with their command lines", timeout_s=30)
        started = set(commands)
        assert sorted(next(arg for arg in argv if arg in (b"run", b"node"))
                      for argv in commands.values()) == [b"node", b"run"]
        process.kill()
        process.wait()
        for pid in started:
            wait_until(lambda pid=pid: alive(pid), lambda running: not running,
                       what=f"up's child {commands[pid]} to stop once up is gone",
                       timeout_s=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in started:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_up_stops_when_its_node_process_dies(tmp_path: Path) -> None:
    """A node that is gone runs no pod: `up` says so and stops, as it does for its engine."""
    process = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "up", "--data-dir", str(tmp_path / "data"),
         "--port", "0", "--node-mode", "simulate"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _read_line(process, "export KUBECONFIG=")
        commands = wait_until(lambda: _commands(children(process.pid)),
                              lambda found: len(found) == 2 and all(found.values()),
                              what="two children of up with their command lines", timeout_s=30)
        (node,) = [pid for pid, argv in commands.items() if b"node" in argv]
        os.kill(node, signal.SIGKILL)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "the node exited with code -9; stopping" in err
    assert "stopping..." in out


def _up(tmp_path: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "up", "--data-dir", str(tmp_path / "data"),
         "--port", "0", "--node-mode", "simulate", "--restart-backoff", "0.1", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )


def _run_crashing_job(process: subprocess.Popen[str], name: str) -> None:
    """A worker that exits 2, is restarted in place by the node, then exits 0."""
    kubeconfig = Path(_read_line(process, "export KUBECONFIG=").split("=", 1)[1])
    job = workers_job(name, workers=1,
                      annotations={**FAST, "sim.jobmachine.dev/exit-codes": "2,0"})
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
    client = KubeClient.from_kubeconfig(kubeconfig)
    try:
        client.create(PYTORCHJOBS, job, "default")
        wait_until(lambda: job_status(client, name).get("phase"),
                   lambda phase: phase == "Succeeded", what="the job to succeed")
    finally:
        client.close()
    process.send_signal(signal.SIGINT)


def _output_of_up_running_a_crashing_job(tmp_path: Path, name: str, *flags: str) -> str:
    """What `jobmachine up` printed while running the job, once Ctrl-C stopped it cleanly."""
    process = _up(tmp_path, *flags)
    try:
        _run_crashing_job(process, name)
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    return out


def test_up_prints_a_line_per_job_state_change_and_replica_restart(tmp_path: Path) -> None:
    out = _output_of_up_running_a_crashing_job(tmp_path, "live")
    lines = [line for line in out.splitlines() if "default/live" in line]
    said = [line.split()[3] for line in lines]
    # Between Created and Succeeded the job restarts once and runs; in which order the
    # engine sees it depends on timing: the restart before the job's Running (the worker
    # can end at once), or after it, and then the job may be Running again or succeed
    # straight from Restarting (the restarted worker ended before it was seen running).
    # Either way a line per state change: never the same state twice in a row.
    assert (said[0], said[-1]) == ("PyTorchJobCreated", "PyTorchJobSucceeded"), out
    assert said.count("PyTorchJobRestarting") == 1, out
    assert set(said[1:-1]) <= {"PyTorchJobRestarting", "PyTorchJobRunning"}, out
    assert all(first != second for first, second in pairwise(said)), out
    [restarted] = [line for line in lines if "PyTorchJobRestarting" in line]
    assert restarted.split()[1:3] == ["default/live", "Worker-0"]
    assert "job live is restarting because Worker replica(s) failed." in restarted
    assert "\x1b[" not in out  # plain when piped


def test_up_quiet_prints_no_job_lines(tmp_path: Path) -> None:
    out = _output_of_up_running_a_crashing_job(tmp_path, "hush", "--quiet")
    assert "default/hush" not in out
    assert "stopping..." in out


@pytest.fixture
def cluster() -> Iterator[RunningApiServer]:
    with running_apiserver(tls=True) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig)
        prepare_cluster(client, crds=[CRDS], machines=MACHINES)
        client.close()
        with running_node(server, mode="simulate"):
            yield server


def test_run_engine_leads_runs_a_job_and_releases_its_lease_on_stop(
    cluster: RunningApiServer,
) -> None:
    stop = threading.Event()
    options = RunOptions(
        kubeconfig=cluster.kubeconfig, leader_elect=True, lease_namespace="default",
        settings=EngineSettings(lease_duration_s=3, renew_deadline_s=2, retry_period_s=0.5),
    )
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(run_engine(options, stop=stop)))
    runner.start()
    client = KubeClient.from_kubeconfig(cluster.kubeconfig)
    try:
        client.create(PYTORCHJOBS, workers_job("led", workers=2, annotations=FAST), "default")
        wait_until(lambda: job_status(client, "led").get("phase"),
                   lambda phase: phase == "Succeeded", what="the job to succeed")
        lease = client.get(LEASES, EngineSettings().lease_name, "default")
        assert lease["spec"]["holderIdentity"]
        stop.set()
        runner.join(60)
        assert codes == [0]
        released = client.get(LEASES, EngineSettings().lease_name, "default")
        assert not released["spec"].get("holderIdentity")
    finally:
        stop.set()
        runner.join(60)
        client.close()
