"""A finished pod costs the node no worker: nothing of its worker stays, yet its logs (and
`--previous`) are served, the node's resyncs never run it again, and deleting it (held by a
finalizer or not) still cleans up its files."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import LocalNode
from engine.cluster.node.worker import PodWorker
from tests.integration.node.conftest import FAST_BACKOFF, NS, Cluster
from tests.integration.node.test_simulate import sim
from tests.polling import eventually

NODE = "resyncing"


@pytest.fixture
def resyncing(server: RunningApiServer, api: client.ApiClient, tmp_path: Path
              ) -> Iterator[Cluster]:
    """A simulating node that hands itself every pod again (resync) every 0.2 s."""
    state_dir = tmp_path / "node"
    node = LocalNode(url=server.url, token=server.token, ca_file=server.ca_file,
                     logs_dir=server.logs_dir, state_dir=state_dir, mode="simulate",
                     name=NODE, heartbeat_s=0.2, restart_backoff=FAST_BACKOFF)
    node.start()
    try:
        yield Cluster(server, client.CoreV1Api(api), api, node, state_dir)
    finally:
        node.stop()


def _workers_of(uid: str) -> list[PodWorker]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, PodWorker) and o.uid == uid]


def _heartbeat(cluster: Cluster) -> str:
    conditions = cluster.core.read_node(NODE).status.conditions
    return str(next(c for c in conditions if c.type == "Ready").last_heartbeat_time)


def _resyncs_pass(cluster: Cluster) -> None:
    """Wait until the node has beaten (and resynced every pod after it) at least once more."""
    for _ in range(2):
        _next_heartbeat(cluster, _heartbeat(cluster))


def _next_heartbeat(cluster: Cluster, seen: str) -> None:
    eventually(lambda: _heartbeat(cluster) != seen, timeout=10)


def _finished(cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
    cluster.create(body)
    done = cluster.wait_phase(body["metadata"]["name"], "Succeeded", "Failed")
    eventually(lambda: not _workers_of(done["metadata"]["uid"]))
    return done


def test_a_finished_pod_keeps_no_worker_and_is_never_run_again(resyncing: Cluster) -> None:
    done = _finished(resyncing, sim("done", "1,0", restart_policy="OnFailure"))
    assert done["status"]["phase"] == "Succeeded"
    _resyncs_pass(resyncing)
    again = resyncing.read("done") or {}
    assert again["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]
    assert resyncing.log("done") == "simulated attempt 2: exit code 0 after 0.05s\n"
    assert resyncing.log("done", previous=True) == (
        "simulated attempt 1: exit code 1 after 0.05s\n")
    assert [e.reason for e in resyncing.events("done")].count("ImageIgnored") == 1


def test_a_finished_pod_held_by_a_finalizer_is_still_cleaned_up(resyncing: Cluster) -> None:
    body = sim("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    _finished(resyncing, body)
    logs = resyncing.server.logs_dir / NS / "held"
    assert logs.exists()
    resyncing.core.delete_namespaced_pod("held", NS)
    _resyncs_pass(resyncing)
    assert (resyncing.read("held") or {}).get("metadata", {}).get("deletionTimestamp")
    resyncing.core.patch_namespaced_pod("held", NS, {"metadata": {"finalizers": None}})
    eventually(lambda: resyncing.read("held") is None)
    eventually(lambda: not logs.exists())
