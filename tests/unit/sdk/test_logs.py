"""Which pods' logs `get_job_logs` reads: the job's, narrowed by replica type and index."""

from __future__ import annotations

from engine.controller.reconcile.children import ReplicaId
from engine.sdk.logs import Selection


def test_the_label_selector_names_the_job_and_narrows_by_what_is_given() -> None:
    assert Selection().label_selector("mnist") == "jobmachine.dev/job-name=mnist"
    assert Selection("Worker", 1).label_selector("mnist") == (
        "jobmachine.dev/job-name=mnist,jobmachine.dev/replica-type=Worker,"
        "jobmachine.dev/replica-index=1")


def test_a_selection_covers_the_replicas_it_names() -> None:
    master, worker0, worker1 = (ReplicaId("Master", 0), ReplicaId("Worker", 0),
                                ReplicaId("Worker", 1))

    assert [r for r in (master, worker0, worker1) if Selection().covers(r)] == [
        master, worker0, worker1]
    assert [r for r in (master, worker0, worker1) if Selection("Worker").covers(r)] == [
        worker0, worker1]
    assert [r for r in (master, worker0, worker1) if Selection(replica_index=0).covers(r)] == [
        master, worker0]
