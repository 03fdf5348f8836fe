"""Pools on the embedded API server: a MachineJob type of `completions` members that run at
most `parallelism` at a time, each Indexed member's pod carrying its index.

The number of live pods is read from one pod watch, in the server's order, so a moment with
one pod too many cannot hide between two polls.
"""

from __future__ import annotations

import pytest

from engine.kube.client import KubeClient
from engine.kube.errors import Invalid
from engine.kube.resources import PODS
from tests.integration.engine.helpers import RAN_AND_SUCCEEDED, Obj, Replica, replica_path
from tests.integration.engine.machinejobs import (
    MACHINEJOBS,
    machinejob,
    most_live_at_once,
    recording,
    wait_for_phase_of,
)


def pool(name: str, ns: str, **fields: object) -> Obj:
    """A MachineJob whose type Work is a pool with these fields; each pod runs 0.3 s, exits 0."""
    job = machinejob(name, ns, {"Work": Replica(run_s=0.3)})
    work = job["spec"]["replicaSpecs"]["Work"]
    del work["replicas"]
    work.update(fields)
    return job


def env_of(pod: Obj, name: str) -> str | None:
    container = pod["spec"]["containers"][0]
    return next((e.get("value") for e in container.get("env") or () if e["name"] == name), None)


def test_a_pool_runs_its_completions_parallelism_at_a_time(client: KubeClient, ns: str) -> None:
    with recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, pool("five", ns, completions=5, parallelism=2,
                                        completionMode="Indexed"), ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "five", "Succeeded")
        events = pod_log.through(done["metadata"]["resourceVersion"])

    assert most_live_at_once(events) == 2
    pods = {pod["metadata"]["name"]: pod for kind, pod in events if kind == "ADDED"}
    assert sorted(pods) == [f"five-work-{i}" for i in range(5)]
    for index in range(5):
        assert env_of(pods[f"five-work-{index}"], "JOB_COMPLETION_INDEX") == str(index)
        assert replica_path(done, f"Work-{index}") in RAN_AND_SUCCEEDED


def test_a_nonindexed_pool_gives_no_completion_index(client: KubeClient, ns: str) -> None:
    with recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, pool("plain", ns, completions=2), ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "plain", "Succeeded")
        events = pod_log.through(done["metadata"]["resourceVersion"])
    assert most_live_at_once(events) == 1
    assert {env_of(pod, "JOB_COMPLETION_INDEX") for _, pod in events} == {None}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"completions": 2, "replicas": 2}, "replicas cannot be set with completions or "
                                            "parallelism"),
        ({"parallelism": 2, "completionMode": "Indexed"}, "completions is required when "
                                                          "completionMode is Indexed"),
        ({"parallelism": 2}, "a pool needs completions here"),
        ({"completions": -1}, "should be greater than or equal to 0"),
    ],
)
def test_the_server_refuses_a_malformed_pool(
    client: KubeClient, ns: str, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(Invalid) as refused:
        client.create(MACHINEJOBS, pool("bad", ns, **fields), ns)
    assert message in str(refused.value)
