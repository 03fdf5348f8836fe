"""MachineJob's start-up order: a replica type's pods are created only once every type it
`dependsOn` is Running (or Ready), so a chain of them starts in order.

Each check reads one pod watch, which the server sends in resourceVersion order: what the
dependency's pod looked like when the dependent pod was first seen is the last event for
it before that one. The API server rejects self and unknown dependencies (a CRD rule);
a cycle passes it and the engine fails the job (the model checks cycles).
"""

from __future__ import annotations

import re

import pytest

from engine.kube.client import KubeClient
from engine.kube.errors import Invalid
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    EXIT_CODES,
    RAN_AND_SUCCEEDED,
    Obj,
    Replica,
    condition,
    count_events,
    job_events,
    job_path,
    pod_names,
    replica_key,
    replica_path,
    status,
    watching_pods,
)
from tests.integration.engine.machinejobs import (
    MACHINEJOBS,
    after,
    first_seen,
    get_obj,
    is_ready,
    is_up,
    machinejob,
    main_state,
    pod_before,
    recording,
    wait_for_phase_of,
)


def _when_first_seen(events: list[tuple[str, Obj]], dependent: str, dependency: str) -> Obj:
    """`dependency`'s pod as it was when `dependent`'s pod first appeared (it must exist)."""
    then = pod_before(events, first_seen(events, dependent), dependency)
    assert then is not None, f"{dependent}'s pod appeared before {dependency}'s"
    return then


def _was_pending(events: list[tuple[str, Obj]], replica: str) -> bool:
    """Whether `replica`'s pod was seen with its main container not started yet."""
    return any(not main_state(pod) or "waiting" in main_state(pod)
               for _, pod in events if replica_key(pod) == replica)


def test_workers_are_created_once_the_master_runs(client: KubeClient, ns: str) -> None:
    """Worker dependsOn Master (condition Running by default): each Worker pod appears only
    after the Master's pod reported its container running; the job then succeeds."""
    job = machinejob("ordered", ns, {"Master": Replica(run_s=2.0), "Worker": Replica(2)},
                     depends_on={"Worker": [after("Master")]})
    with watching_pods(client, ns) as pods, recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "ordered", "Succeeded")
        events = pod_log.through(done["metadata"]["resourceVersion"])
        assert pods.creations() == {"Master-0": 1, "Worker-0": 1, "Worker-1": 1}

    assert _was_pending(events, "Master-0")
    for worker in ("Worker-0", "Worker-1"):
        master = _when_first_seen(events, worker, "Master-0")
        assert "running" in main_state(master), f"{worker} created while the Master was not up"
    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    assert replica_path(done, "Master-0") == ["Pending", "Running", "Succeeded"]
    for worker in ("Worker-0", "Worker-1"):
        assert replica_path(done, worker) in RAN_AND_SUCCEEDED
    record = status(done)
    assert record.get("restarts", 0) == 0
    assert {t: s.get("succeeded", 0) for t, s in record["replicaStatuses"].items()} == {
        "Master": 1, "Worker": 2}
    succeeded = condition(done, "Succeeded")
    assert succeeded is not None and succeeded["reason"] == "AllReplicasSucceeded"
    events_of_job = job_events(client, done)
    assert count_events(events_of_job, "JobRunning") == 1
    assert count_events(events_of_job, "AllReplicasSucceeded") == 1
    assert all(e["type"] == "Normal" for e in events_of_job)


def test_a_chain_of_dependencies_starts_in_order(client: KubeClient, ns: str) -> None:
    """C dependsOn B, B dependsOn A (JobSet's InOrder), declared C first -> A, B, C start in
    that order, each once its predecessor is up."""
    job = machinejob("chain", ns, {"C": Replica(run_s=0.4), "B": Replica(run_s=1.0),
                                   "A": Replica(run_s=1.0)},
                     depends_on={"C": [after("B")], "B": [after("A")]})
    with watching_pods(client, ns) as pods, recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "chain", "Succeeded")
        events = pod_log.through(done["metadata"]["resourceVersion"])
        assert pods.creations() == {"A-0": 1, "B-0": 1, "C-0": 1}

    assert first_seen(events, "A-0") < first_seen(events, "B-0") < first_seen(events, "C-0")
    assert is_up(_when_first_seen(events, "B-0", "A-0"))
    assert is_up(_when_first_seen(events, "C-0", "B-0"))
    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    assert {t: s.get("succeeded", 0) for t, s in status(done)["replicaStatuses"].items()} == {
        "A": 1, "B": 1, "C": 1}
    assert status(done).get("restarts", 0) == 0
    assert pod_names(client, ns, "chain") == ["chain-a-0", "chain-b-0", "chain-c-0"]


def test_workers_wait_for_the_master_to_be_ready(client: KubeClient, ns: str) -> None:
    """condition Ready: each Worker pod appears only once the Master's pod is Ready (the
    simulated node has no probes: a pod is Ready once all its containers run)."""
    job = machinejob("ready", ns, {"Master": Replica(run_s=2.0), "Worker": Replica(2)},
                     depends_on={"Worker": [after("Master", "Ready")]})
    with watching_pods(client, ns) as pods, recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "ready", "Succeeded")
        events = pod_log.through(done["metadata"]["resourceVersion"])
        assert pods.creations() == {"Master-0": 1, "Worker-0": 1, "Worker-1": 1}

    for worker in ("Worker-0", "Worker-1"):
        master = _when_first_seen(events, worker, "Master-0")
        assert is_ready(master), f"{worker} created while the Master was not Ready"
    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    assert status(done).get("restarts", 0) == 0


def test_a_running_master_that_is_not_ready_holds_the_workers(
    client: KubeClient, ns: str
) -> None:
    """The Master's main container runs, but its second container cannot start (a bad
    simulation annotation), so the pod is never Ready: the Workers, waiting for Ready,
    appear only once the Master has succeeded (a succeeded replica counts as up)."""
    job = machinejob("unready", ns, {"Master": Replica(run_s=2.0), "Worker": Replica(2)},
                     depends_on={"Worker": [after("Master", "Ready")]})
    master = job["spec"]["replicaSpecs"]["Master"]["template"]
    master["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    master["metadata"]["annotations"][f"{EXIT_CODES}.side"] = "not-a-code"
    with watching_pods(client, ns) as pods, recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "unready", "Succeeded")
        events = pod_log.through(done["metadata"]["resourceVersion"])
        assert pods.creations() == {"Master-0": 1, "Worker-0": 1, "Worker-1": 1}

    master_pods = [pod for _, pod in events if pod["metadata"]["name"] == "unready-master-0"]
    assert any("running" in main_state(p) for p in master_pods), "the Master never ran"
    assert not any(is_ready(p) for p in master_pods)
    for worker in ("Worker-0", "Worker-1"):
        then = main_state(_when_first_seen(events, worker, "Master-0"))
        assert (then.get("terminated") or {}).get("exitCode") == 0, (
            f"{worker} created before the Master succeeded: {then}")
    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    assert {t: s.get("succeeded", 0) for t, s in status(done)["replicaStatuses"].items()} == {
        "Master": 1, "Worker": 2}


@pytest.mark.parametrize(
    "depends_on",
    [{"A": [after("A")]}, {"A": [after("Z")]}],
    ids=["self", "unknown-type"],
)
def test_api_server_rejects_a_dependency_on_itself_or_an_unknown_type(
    client: KubeClient, ns: str, depends_on: dict[str, list[Obj]]
) -> None:
    job = machinejob("bad", ns, {"A": Replica(), "B": Replica()}, depends_on=depends_on)
    with pytest.raises(Invalid) as rejected:
        client.create(MACHINEJOBS, job, ns)

    assert (rejected.value.status, rejected.value.reason) == (422, "Invalid")
    assert ("replicaSpecs[*].dependsOn must name other replica types of spec.replicaSpecs "
            "(not the type itself)") in rejected.value.message
    assert get_obj(client, MACHINEJOBS, ns, "bad") is None


def test_engine_fails_a_job_whose_dependencies_form_a_cycle(client: KubeClient, ns: str) -> None:
    """A dependsOn B and B dependsOn A: the CRD rule passes it, the engine's model does not ->
    Failed (FailedValidation) with a Warning event naming the cycle, and no pod created."""
    job = machinejob("cycle", ns, {"A": Replica(), "B": Replica()},
                     depends_on={"A": [after("B")], "B": [after("A")]})
    with watching_pods(client, ns) as pods:
        client.create(MACHINEJOBS, job, ns)
        failed = wait_for_phase_of(client, MACHINEJOBS, ns, "cycle", "Failed")
        assert pods.creations() == {}

    assert job_path(failed) == ["Created", "Failing", "Failed"]
    verdict = condition(failed, "Failed")
    assert verdict is not None
    assert (verdict["status"], verdict["reason"]) == ("True", "FailedValidation")
    assert condition(failed, "FailureTarget") is None  # Failed took it over
    assert "dependsOn forms a cycle" in verdict["message"]
    assert condition(failed, "Succeeded") is None
    warnings = [e for e in job_events(client, failed)
                if e["type"] == "Warning" and e["reason"] == "FailedValidation"]
    assert len(warnings) == 1
    assert re.search(r"dependsOn forms a cycle: (A -> B -> A|B -> A -> B)", warnings[0]["message"])
    assert status(failed).get("restarts", 0) == 0
    assert pod_names(client, ns, "cycle") == []
