"""A StateMachine deleted: its running jobs finish by the revision they started with, new
jobs of its kind wait (and say why) until a machine governs the kind again; nothing is
deleted meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.app.up import LocalCluster
from engine.kube.client import KubeClient
from tests.integration.engine.custom_kinds import (
    BROKEN_GUARD,
    Lab,
    current_revision,
    delete_machine,
    lab_job,
    machine,
    new_kind,
    runs_with,
    wait_for_governed,
    wait_for_verdict,
)
from tests.integration.engine.helpers import (
    Replica,
    condition,
    count_events,
    job_events,
    pod_names,
    reconciles,
    settle,
    status,
    wait_for,
    wait_until,
)
from tests.integration.engine.machinejobs import get_obj, wait_for_phase_of


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


def test_deleted_machine_lets_running_jobs_finish_and_new_ones_wait(
    cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str
) -> None:
    """`running` (3 s) runs when its machine is deleted -> it succeeds by its revision;
    `waiting`, created after -> Governed False (NoStateMachine) saying the machine was
    deleted, no pod, nothing deleted; the machine applied again -> `waiting` starts
    (Governed True, StateMachineAssigned) and succeeds."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("gone", kind))
    wait_for_verdict(client, "gone", accepted="Valid", governing="Governing")
    revision = current_revision(client, "gone")
    client.create(kind.resource, lab_job(kind, "running", ns, Replica(run_s=3)), ns)
    wait_for_phase_of(client, kind.resource, ns, "running", "Running")

    delete_machine(client, cluster.engine, "gone", kind)
    still = get_obj(client, kind.resource, ns, "running")
    assert status(still)["phase"] == "Running", "the machine went while the job ran"
    since = reconciles(cluster)
    client.create(kind.resource, lab_job(kind, "waiting", ns), ns)

    waiting = wait_for_governed(client, kind, ns, "waiting", "NoStateMachine")
    governed = condition(waiting, "Governed")
    assert governed["status"] == "False"
    assert f"no StateMachine governs {kind.kind} (gone was deleted)" in governed["message"]
    # Events are posted after the status write, by the recorder's own thread.
    wait_for(lambda: count_events(job_events(client, waiting), "NoStateMachine"),
             lambda posted: posted >= 1, what="the NoStateMachine event")
    running = wait_for_phase_of(client, kind.resource, ns, "running", "Succeeded")
    assert runs_with(running) == revision
    settle(cluster, since)
    wait_until(lambda: count_events(job_events(client, waiting), "NoStateMachine") == 1,
               what="one NoStateMachine event")
    assert pod_names(client, ns, "waiting") == []
    assert pod_names(client, ns, "running") == ["running-worker-0"]
    assert get_obj(client, kind.resource, ns, "waiting") is not None

    lab.apply(machine("gone", kind))
    waiting = wait_for_phase_of(client, kind.resource, ns, "waiting", "Succeeded")
    governed = condition(waiting, "Governed")
    assert (governed["status"], governed["reason"]) == ("True", "StateMachineAssigned")
    assert runs_with(waiting) == revision


def test_refused_machine_of_another_kind_does_not_change_why_jobs_wait(
    cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str
) -> None:
    """Kind B's machine broken, kind A's machine deleted -> a new job of A still says
    NoStateMachine, and does not name B's machine."""
    other = new_kind()
    lab.install(other)
    lab.apply(machine("b-broken", other, when=BROKEN_GUARD))
    wait_for_verdict(client, "b-broken", accepted="Invalid", governing=None)
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("a-deleted", kind))
    wait_for_verdict(client, "a-deleted", accepted="Valid", governing="Governing")
    delete_machine(client, cluster.engine, "a-deleted", kind)
    client.create(kind.resource, lab_job(kind, "waiting", ns), ns)

    waiting = wait_for_governed(client, kind, ns, "waiting", "NoStateMachine")
    assert "b-broken" not in condition(waiting, "Governed")["message"]


def test_waiting_job_says_why_when_the_reason_changes(
    cluster: LocalCluster, client: KubeClient, lab: Lab, ns: str
) -> None:
    """`waiting` waits (NoStateMachine) after its machine was deleted; a broken machine for
    its kind applied -> it says StateMachineNotAccepted, naming that machine."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("deleted", kind))
    wait_for_verdict(client, "deleted", accepted="Valid", governing="Governing")
    delete_machine(client, cluster.engine, "deleted", kind)
    client.create(kind.resource, lab_job(kind, "waiting", ns), ns)
    wait_for_governed(client, kind, ns, "waiting", "NoStateMachine")

    lab.apply(machine("broken", kind, when=BROKEN_GUARD))
    wait_for_verdict(client, "broken", accepted="Invalid", governing=None)
    waiting = wait_for_governed(client, kind, ns, "waiting", "StateMachineNotAccepted")
    assert "machine broken is not accepted" in condition(waiting, "Governed")["message"]
    assert pod_names(client, ns, "waiting") == []
