"""The node in a process of its own (`jobmachine node`, as `up` runs it): it registers before
`node_process` returns, runs pods with the settings it was given, keeps its token off its
command line and environment, stops on SIGTERM, and stops by itself once `up` is gone."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node.child import READY, NodeProcessError, NodeSpec, node_process
from engine.cluster.node.scheduling.capacity import Capacity
from tests.integration.node.conftest import FAST_BACKOFF, NS, pod
from tests.polling import eventually

FAST = {"sim.jobmachine.dev/run-seconds": "0.05"}


def _spec(server: RunningApiServer, tmp_path: Path) -> NodeSpec:
    return NodeSpec(url=server.url, ca_file=server.ca_file, logs_dir=server.logs_dir,
                    state_dir=tmp_path / "node", mode="simulate", restart_backoff=FAST_BACKOFF,
                    capacity=Capacity.of_this_machine({"pods": "7"}))


def _phase(core: client.CoreV1Api, name: str) -> str:
    return str(core.read_namespaced_pod(name, NS).status.phase)


def test_a_node_process_registers_runs_pods_and_stops_on_sigterm(
    server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
) -> None:
    core = client.CoreV1Api(api)
    with node_process(_spec(server, tmp_path), server.token) as child:
        # Registered before node_process returned, with the capacity it was given.
        node = api.sanitize_for_serialization(core.read_node("jobmachine-local"))
        assert node["status"]["capacity"]["pods"] == "7"
        # The token is read from stdin: neither its command line nor its environment has it.
        for name in ("cmdline", "environ"):
            assert server.token.encode() not in Path(f"/proc/{child.pid}/{name}").read_bytes()
        # The restart back-off reaches it: exit 1 then 0 under OnFailure, restarted after
        # FAST_BACKOFF's 0.5 s (the kubelet's 10 s would outlast the wait below).
        core.create_namespaced_pod(NS, pod("flaky", annotations={
            **FAST, "sim.jobmachine.dev/exit-codes": "1,1,0"}, restart_policy="OnFailure"))
        eventually(lambda: _phase(core, "flaky") == "Succeeded", timeout=20)
    assert child.returncode == 0


def test_a_node_process_refused_by_the_server_fails_node_process(
    server: RunningApiServer, tmp_path: Path,
) -> None:
    with pytest.raises(NodeProcessError, match="exited with code 1 before it registered"), \
            node_process(_spec(server, tmp_path), "not-the-token"):
        pass


def test_a_node_process_stops_once_its_parent_is_gone(
    server: RunningApiServer, tmp_path: Path,
) -> None:
    """Told that its parent is another process than the one that started it (as when `up` was
    killed and the node was re-parented), it stops by itself."""
    read_end, write_end = os.pipe()
    spec = _spec(server, tmp_path)
    child = subprocess.Popen(spec.command(ready_fd=write_end, parent_pid=os.getppid()),
                             stdin=subprocess.PIPE, pass_fds=(write_end,),
                             env=spec.environment())
    os.close(write_end)
    try:
        assert child.stdin is not None
        child.stdin.write(server.token.encode() + b"\n")
        child.stdin.close()
        assert os.read(read_end, len(READY)) == READY
        assert child.wait(timeout=30) == 0
    finally:
        os.close(read_end)
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()
