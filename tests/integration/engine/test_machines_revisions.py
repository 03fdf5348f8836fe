"""Machine revisions: a job keeps the revision it started with, whatever happens to its machine.

A valid change puts a new revision in force for new jobs only; a change that fails
validation leaves the previous revision in force; a job whose revision was deleted by
hand is left alone, and says so, until the revision is back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.app.up import LocalCluster
from engine.controller.machines.revisions import CONTROLLER_REVISIONS
from engine.kube.client import KubeClient
from tests.integration.engine.custom_kinds import (
    BROKEN_GUARD,
    SYSTEM_NAMESPACE,
    Lab,
    LabKind,
    current_revision,
    lab_job,
    machine,
    machine_condition,
    new_kind,
    pod_env,
    revisions_of,
    runs_with,
    wait_for_governed,
    wait_for_verdict,
)
from tests.integration.engine.helpers import (
    TRACKING,
    Obj,
    Replica,
    condition,
    get_pod,
    job_events,
    pods_of,
    reconciles,
    settle,
    status,
    stored,
    wait_until,
)
from tests.integration.engine.machinejobs import get_obj, wait_for_phase_of

JOB_WAIT_S = 40.0
"""Jobs here run for seconds by design; a generous bound for them to end."""


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


def test_running_job_keeps_its_revision_across_a_change(client: KubeClient, lab: Lab, ns: str
                                                        ) -> None:
    """`old` runs (its pod exits 137 after 4 s, then 0) when the machine changes from rules
    `first` to `second` -> its pod recreated after the change still gets RULES=first and it
    succeeds by the first rules; `new`, created after the change, runs by the second."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("reload", kind, rules="first"))
    wait_for_verdict(client, "reload", accepted="Valid", governing="Governing")
    first = current_revision(client, "reload")
    client.create(kind.resource, lab_job(kind, "old", ns, Replica(codes="137,0", run_s=4)), ns)
    wait_for_phase_of(client, kind.resource, ns, "old", "Running")

    lab.apply(machine("reload", kind, rules="second"))
    wait_for_verdict(client, "reload", accepted="Valid", governing="Governing", generation=2)
    second = current_revision(client, "reload")
    assert second != first
    running = get_obj(client, kind.resource, ns, "old")
    assert status(running).get("restarts", 0) == 0, "the change came after the first attempt"
    client.create(kind.resource, lab_job(kind, "new", ns), ns)

    old = wait_for_phase_of(client, kind.resource, ns, "old", "Succeeded", timeout=JOB_WAIT_S)
    assert runs_with(old) == first
    assert status(old).get("restarts", 0) == 1
    assert condition(old, "Succeeded")["reason"] == "FirstRules"
    assert [pod_env(p, "RULES") for p in pods_of(client, ns, "old")] == ["first"]
    new = wait_for_phase_of(client, kind.resource, ns, "new", "Succeeded", timeout=JOB_WAIT_S)
    assert runs_with(new) == second
    assert condition(new, "Succeeded")["reason"] == "SecondRules"
    assert [pod_env(p, "RULES") for p in pods_of(client, ns, "new")] == ["second"]


def test_invalid_change_leaves_the_previous_revision_in_force(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    """Generation 2 breaks the `succeed` guard -> Accepted False saying generation 1's
    revision stays in force; currentRevision unchanged, no revision of the broken spec,
    and a new job runs by the first rules."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("steady", kind, rules="first"))
    wait_for_verdict(client, "steady", accepted="Valid", governing="Governing")
    first = current_revision(client, "steady")

    lab.apply(machine("steady", kind, rules="second", when=BROKEN_GUARD))
    found = wait_for_verdict(client, "steady", accepted="Invalid", governing="Governing",
                             generation=2)
    accepted = machine_condition(found, "Accepted")
    assert accepted["status"] == "False"
    assert accepted["message"].startswith("generation 2 is invalid: spec.job.transitions[0].when")
    assert accepted["message"].endswith(f"revision {first} (generation 1) stays in force")
    assert status(found)["currentRevision"] == first
    assert list(revisions_of(client, "steady")) == [first]

    client.create(kind.resource, lab_job(kind, "job", ns), ns)
    job = wait_for_phase_of(client, kind.resource, ns, "job", "Succeeded")
    assert runs_with(job) == first
    assert condition(job, "Succeeded")["reason"] == "FirstRules"
    assert [pod_env(p, "RULES") for p in pods_of(client, ns, "job")] == ["first"]


def job_past_its_revision(cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str,
                          *, run_s: float) -> tuple[LabKind, Obj]:
    """A job `job` running (its Worker runs `run_s`) when its machine changes, the engine
    settled since; its kind and the revision it runs with, no longer in force."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("lost", kind, rules="first"))
    wait_for_verdict(client, "lost", accepted="Valid", governing="Governing")
    first = current_revision(client, "lost")
    client.create(kind.resource, lab_job(kind, "job", ns, Replica(run_s=run_s)), ns)
    wait_for_phase_of(client, kind.resource, ns, "job", "Running")
    since = reconciles(cluster)
    lab.apply(machine("lost", kind, rules="second"))
    wait_for_verdict(client, "lost", accepted="Valid", governing="Governing", generation=2)
    settle(cluster, since)
    return kind, revisions_of(client, "lost")[first]


def delete_revision(client: KubeClient, revision: Obj) -> None:
    client.delete(CONTROLLER_REVISIONS, revision["metadata"]["name"], SYSTEM_NAMESPACE)


def test_job_whose_revision_was_deleted_is_left_alone(
    cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str
) -> None:
    """The revision a running job records deleted by hand, then its pod ends ->
    Governed False (RevisionNotFound) naming the revision, and nothing reacts to the pod:
    not counted, not deleted, its tracking finalizer kept, no new pod."""
    # The pod must outlive the machine change and the engine settling after it, which
    # took more than 8 s once under load.
    kind, revision = job_past_its_revision(cluster, client, lab, ns, run_s=20)
    first = revision["metadata"]["name"]
    [pod] = pods_of(client, ns, "job")
    since = reconciles(cluster)
    delete_revision(client, revision)
    assert status(get_pod(client, ns, pod["metadata"]["name"]))["phase"] == "Running", (
        "the pod must end after the revision is deleted")

    job = wait_for_governed(client, kind, ns, "job", "RevisionNotFound")
    governed = condition(job, "Governed")
    assert governed["status"] == "False"
    assert f"revision {first} of machine lost" in governed["message"]
    wait_until(lambda: status(get_pod(client, ns, pod["metadata"]["name"])).get("phase")
               == "Succeeded", what="the job's pod ended", timeout=JOB_WAIT_S)
    settle(cluster, since)
    [after] = pods_of(client, ns, "job")
    assert after["metadata"]["uid"] == pod["metadata"]["uid"]
    assert "deletionTimestamp" not in after["metadata"]
    assert TRACKING in after["metadata"]["finalizers"]
    job = get_obj(client, kind.resource, ns, "job")
    assert status(job)["phase"] == "Running"
    assert stored(job)["replicas"] == {"Worker": {"Running": "0"}}
    assert runs_with(job) == first


def test_running_job_learns_at_once_that_its_revision_was_deleted(
    cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str
) -> None:
    """Its pod still runs for a minute -> Governed False (RevisionNotFound) all the same."""
    kind, revision = job_past_its_revision(cluster, client, lab, ns, run_s=60)
    delete_revision(client, revision)

    wait_for_governed(client, kind, ns, "job", "RevisionNotFound")


def test_job_goes_on_once_its_revision_is_back(
    cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str
) -> None:
    """The deleted revision (noticed when the job was edited) created again from a saved
    copy -> the job runs by it again: Governed True (StateMachineAssigned)."""
    kind, revision = job_past_its_revision(cluster, client, lab, ns, run_s=60)
    delete_revision(client, revision)
    client.patch(kind.resource, "job", {"metadata": {"labels": {"edited": "yes"}}},
                 namespace=ns)
    wait_for_governed(client, kind, ns, "job", "RevisionNotFound")

    client.create(CONTROLLER_REVISIONS, _restorable(revision), SYSTEM_NAMESPACE)
    job = wait_for_governed(client, kind, ns, "job", "StateMachineAssigned")
    assert condition(job, "Governed")["status"] == "True"
    assert runs_with(job) == revision["metadata"]["name"]


def _restorable(revision: Obj) -> Obj:
    """The revision as someone would create it again from a saved copy."""
    metadata = revision["metadata"]
    kept = {k: metadata[k] for k in ("name", "namespace", "labels", "annotations")}
    return {**revision, "metadata": kept}


def test_a_job_stuck_on_a_broken_revision_moves_to_the_fixed_one(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    """A pod value that type-checks but fails when computed (no Chief in the job) keeps the
    job from creating pods: a PodTemplateError naming the machine and its revision. Once the
    fixed machine is accepted, the job, which created no pod, runs with the new revision
    (a MachineRevisionChanged event says so) and succeeds; fixing the machine is enough."""
    kind = new_kind()
    lab.install(kind)
    broken = machine("mend", kind)
    broken["spec"]["pod"]["env"]["RULES"] = "string(job.spec.workers['Chief'].replicas)"
    lab.apply(broken)
    wait_for_verdict(client, "mend", accepted="Valid", governing="Governing")
    first = current_revision(client, "mend")
    client.create(kind.resource, lab_job(kind, "stuck", ns), ns)

    def template_errors() -> list[str]:
        job = get_obj(client, kind.resource, ns, "stuck")
        return [e["message"] for e in job_events(client, job) if e["reason"] == "PodTemplateError"]

    wait_until(template_errors, what="a PodTemplateError")
    [message] = template_errors()[:1]
    assert f"the pod values of machine mend (revision {first}) cannot be computed" in message
    assert "string(job.spec.workers['Chief'].replicas)" in message

    def replica_failure() -> Obj | None:
        job = get_obj(client, kind.resource, ns, "stuck")
        found = condition(job, "ReplicaFailure") if job else None
        return found if found and found.get("status") == "True" else None

    wait_until(replica_failure, what="the ReplicaFailure condition")
    failure = replica_failure()
    assert failure is not None and failure["reason"] == "PodTemplateError"
    assert failure["message"] == message
    assert pods_of(client, ns, "stuck") == []

    lab.apply(machine("mend", kind, rules="fixed"))
    wait_for_verdict(client, "mend", accepted="Valid", governing="Governing", generation=2)
    second = current_revision(client, "mend")
    done = wait_for_phase_of(client, kind.resource, ns, "stuck", "Succeeded", timeout=JOB_WAIT_S)
    assert runs_with(done) == second
    assert [pod_env(p, "RULES") for p in pods_of(client, ns, "stuck")] == ["fixed"]
    assert "ReplicaFailure" not in [c["type"] for c in status(done)["conditions"]]
    moved = [e["message"] for e in job_events(client, done)
             if e["reason"] == "MachineRevisionChanged"]
    assert moved == [f"the job has created no pod with revision {first} of machine mend: it "
                     f"runs with revision {second} of machine mend, the one in force"]
