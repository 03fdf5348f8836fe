"""A replica killed mid-training is recreated by its restart policy and the run still converges.

examples/real/pytorch.yaml with restart policy ExitCode: once the Worker has
trained 20 steps, its process is killed with SIGKILL (exit code 137, as the OOM
killer does). The engine counts one restart and recreates the pod; the Master,
which keeps the weights, waits for rank 1 to join again and sends it the step
it missed; both ranks end with the right weights and the job Succeeded.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from engine.app.demo import share_scripts, with_this_python
from engine.app.up import LocalCluster, UpOptions, local_settings, running_local_cluster
from engine.kube.resources import EVENTS, PODS
from tests.integration.app.support import wait_until
from tests.kinds import PYTORCHJOBS
from tests.real.support import REAL, needs_real_extra, result_lines

pytestmark = [pytest.mark.real, pytest.mark.slow, needs_real_extra]

JOB, WORKER, MASTER = "pytorch-real", "pytorch-real-worker-0", "pytorch-real-master-0"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _on_port(node: Any, port: int) -> Any:
    """The manifest with every containerPort `port` (the hub's), so that other runs of the
    example on this machine do not collide with this one."""
    if isinstance(node, list):
        return [_on_port(item, port) for item in node]
    if isinstance(node, dict):
        return {key: port if key == "containerPort" else _on_port(value, port)
                for key, value in node.items()}
    return node


def _unbroken_result() -> str:
    """What both ranks print after their rank when nothing fails: the same steps replayed
    here, in one process, with the example's own arithmetic (examples/real/sgd.py)."""
    spec = importlib.util.spec_from_file_location("sgd", REAL / "sgd.py")
    assert spec is not None and spec.loader is not None
    sgd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sgd)
    shards = [sgd.shard(rank, 2) for rank in range(2)]
    model, loss = [0.0] * (len(sgd.TRUE_WEIGHTS) + 1), 0.0
    for _ in range(sgd.STEPS):
        sums = [sum(column) for column in zip(*(sgd.gradient(model, rows) for rows in shards),
                                              strict=True)]
        model, loss = sgd.descend(model, sums)
    return (f"rank sum 1, {sgd.STEPS} steps, loss {loss:.5f}, "
            f"max weight error {sgd.weight_error(model):.4f} (ok)")


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="process",
                        settings=local_settings({}, replica_backoff_base_s=0.5))
    with running_local_cluster(options) as running:
        share_scripts(running.client, REAL, ["default"])
        yield running


def _log(cluster: LocalCluster, pod: str) -> str:
    path = cluster.server.logs_dir / "default" / pod / "pytorch.log"
    return path.read_text() if path.exists() else ""


def test_worker_killed_mid_training_restarts_and_the_job_converges(
    cluster: LocalCluster,
) -> None:
    manifest = with_this_python(yaml.safe_load((REAL / "pytorch.yaml").read_text()))
    cluster.client.create(PYTORCHJOBS, _on_port(manifest, _free_port()), "default")

    before = wait_until(lambda: _log(cluster, WORKER), lambda text: "step 20 " in text,
                        what="the worker to train 20 steps", timeout_s=60)
    pod = cluster.client.get(PODS, WORKER, "default")
    pid = int(pod["status"]["containerStatuses"][0]["containerID"].rsplit("/", 1)[1])
    os.kill(pid, signal.SIGKILL)

    status = wait_until(lambda: cluster.client.get(PYTORCHJOBS, JOB, "default")["status"],
                        lambda seen: seen.get("phase") in ("Succeeded", "Failed"),
                        what=f"{JOB} to end", timeout_s=90)
    master, worker = _log(cluster, MASTER), _log(cluster, WORKER)
    assert status["phase"] == "Succeeded", f"{status}\n{master}\n{worker}"
    assert status.get("restarts", 0) == 1
    assert "result:" not in before
    assert "rank 1 dropped out at step" in master and master.count("rank 1 joined") == 2, master
    cluster.engine.recorder.flush(5.0)
    events, _ = cluster.client.list(EVENTS, "default",
                                    field_selector=f"involvedObject.name={JOB}")
    exited = [e["message"] for e in events if e["reason"] == "ExitedWithCode"
              and e["message"].endswith("exited with code 137")]
    assert exited == [f"Pod: default.{WORKER} exited with code 137"], exited
    restarting = [e["message"] for e in events if e["reason"] == "PyTorchJobRestarting"]
    assert restarting == [f"job {JOB} is restarting because Worker replica(s) failed."], events

    lines = [*result_lines(master), *result_lines(worker)]
    assert [line.split(": ", 1)[1] for line in lines] == [_unbroken_result()] * 2, lines
