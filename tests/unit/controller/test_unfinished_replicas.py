"""`replicaStatuses.<type>.unfinished`: at a job's end, the replicas whose machines stopped
short of an end, in the words the web view and the SDK use (engine.api.replica_words).

A job that ends cleanly says nothing more (its `kubectl describe` does not grow); one that
fails while replicas still run names them by index ranges, with what became of their pods,
and the words follow a kept pod that ends after the job did.
"""

from __future__ import annotations

from typing import Any

from engine.api.replica_words import replica_words
from engine.controller.reconcile.children import ReplicaId
from tests.scenarios.world import MASTER, World, exited, pytorch_job, running, worker

DELETED = "Running, stopped at job end (pod deleted)"


def _running(workers: int, clean: str) -> World:
    world = World(pytorch_job(workers=workers, run_policy={"cleanPodPolicy": clean}))
    world.reconcile()
    world.pods.update({MASTER: running(), **{worker(i): running() for i in range(workers)}})
    world.reconcile()
    return world


def _unfinished(status: dict[str, Any]) -> dict[str, Any]:
    return {replica_type: entry["unfinished"]
            for replica_type, entry in status["replicaStatuses"].items()
            if "unfinished" in entry}


def test_a_job_that_fails_while_replicas_run_names_them_with_their_deleted_pods() -> None:
    world = _running(4, "Running")
    world.pods[worker(2)] = exited(1)
    failing = world.reconcile()
    assert failing.phase == "Failing"  # deleting the pods that run: not ended yet
    assert _unfinished(failing.status) == {}
    for replica in (MASTER, worker(0), worker(1), worker(3)):
        del world.pods[replica]  # the clean-pod policy deleted those that ran
    failed = world.reconcile()
    assert failed.phase == "Failed"
    assert _unfinished(failed.status) == {"Master": {"0": DELETED},
                                          "Worker": {"0-1,3": DELETED}}


def test_a_job_that_ends_cleanly_says_nothing_more() -> None:
    world = _running(1, "Running")
    world.pods.update({MASTER: exited(0), worker(0): exited(0)})
    succeeded = world.reconcile()
    assert succeeded.phase == "Succeeded"
    assert _unfinished(succeeded.status) == {}
    assert all(set(entry) <= {"selector", "succeeded"}
               for entry in succeeded.status["replicaStatuses"].values())


def test_the_words_follow_a_kept_pod_that_ends_after_the_job() -> None:
    world = _running(1, "None")
    world.pods[worker(0)] = exited(1)
    failed = world.reconcile()
    assert failed.phase == "Failed"
    assert _unfinished(failed.status) == {
        "Master": {"0": "Running, stopped at job end (pod Running)"}}
    world.pods[MASTER] = exited(0)
    later = world.reconcile()
    assert _unfinished(later.status) == {
        "Master": {"0": "Running, stopped at job end (pod Succeeded)"}}


def test_status_words_are_the_web_views_and_the_sdks() -> None:
    world = _running(1, "Running")
    world.pods[worker(0)] = exited(1)
    world.reconcile()
    del world.pods[MASTER]
    failed = world.reconcile()
    state = failed.decision.record.replica_states[ReplicaId("Master", 0)]
    words = replica_words(state, None, job_ended=True, ended=False)
    assert _unfinished(failed.status) == {"Master": {"0": words.text}}
