"""A Kubeflow replica restart as Kubeflow's training operator says and does it
(pkg/controller.v1/common/pod.go, ReconcilePods): ExitedWithCode, then <Kind>Restarting,
the job's Restarting condition, the pod created again at once; Running again after.
Running and Restarting replace each other (Kubeflow's filterOutCondition), so a job shows
one of them, never the other beside it as False."""

from __future__ import annotations

from engine.controller.reconcile.children import ReplicaId
from tests.scenarios.world import World, exited, pytorch_job, running, worker
from tests.unit.controller.test_decide import started


def running_job(**run_policy: object) -> World:
    """A PyTorchJob (a Master, two Workers, restartPolicy ExitCode) whose replicas all run."""
    world = World(pytorch_job(policy="ExitCode", run_policy=dict(run_policy) or None))
    started(world)
    return world


def test_a_retryable_exit_says_exited_with_code_then_kind_restarting() -> None:
    world = running_job()
    world.pods[worker(0)] = exited(137)
    failed = world.reconcile()
    assert failed.posted == [
        ("Normal", "ExitedWithCode", "Pod: team.mnist-worker-0 exited with code 137"),
        ("Warning", "PyTorchJobRestarting",
         "job mnist is restarting because Worker replica(s) failed."),
    ]
    assert failed.notices == []  # the transitions themselves are silent
    restarting = failed.condition("Restarting")
    assert restarting is not None
    assert (restarting["status"], restarting["reason"], restarting["message"]) == (
        "True", "PyTorchJobRestarting", "job mnist is restarting because Worker replica(s) failed.")
    assert [c["type"] for c in failed.status["conditions"]] == ["Created", "Restarting"]
    assert failed.status["restarts"] == 1


def test_the_pod_is_created_again_at_once_and_the_job_runs_again() -> None:
    world = running_job()
    world.pods[worker(0)] = exited(137)
    world.reconcile()
    del world.pods[worker(0)]
    recreated = world.reconcile()
    assert recreated.made == ["Worker-0"]  # no re-creation back-off
    world.pods[worker(0)] = running()
    again = world.reconcile()
    assert [(c["type"], c["status"]) for c in again.status["conditions"]] == [
        ("Created", "True"), ("Running", "True")]
    assert ("Restarting", "Running") in [(f, t) for f, t, _ in again.job_path]


def test_a_restarted_job_ends_with_kubeflows_conditions() -> None:
    """Created, Running False and Succeeded: no Restarting beside Running as False."""
    world = running_job()
    world.pods[worker(0)] = exited(137)
    world.reconcile()
    del world.pods[worker(0)]
    world.reconcile()
    world.pods[worker(0)] = running()
    world.reconcile()
    world.pods[ReplicaId("Master", 0)] = exited(0)
    ending = world.reconcile()
    world.pods.clear()
    ended = world.reconcile() if ending.phase != "Succeeded" else ending
    assert ended.phase == "Succeeded"
    assert [(c["type"], c["status"]) for c in ended.status["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Succeeded", "True")]


def test_recreation_backoff_true_waits_the_engines_back_off() -> None:
    world = running_job(recreationBackoff=True)
    world.pods[worker(0)] = exited(137)
    world.reconcile()
    del world.pods[worker(0)]
    assert world.reconcile().made == []
    world.advance(11)
    assert world.reconcile().made == ["Worker-0"]


def test_a_permanent_exit_says_exited_with_code_and_the_policy() -> None:
    world = running_job()
    world.pods[worker(0)] = exited(1)
    failed = world.reconcile()
    said = [(n.type, n.reason, n.message) for n in failed.notices if n.replica == "Worker-0"]
    assert said == [("Normal", "ExitedWithCode",
                     "Pod: team.mnist-worker-0 exited with code 1; restart policy ExitCode "
                     "does not retry it (exit code 1).")]


def test_a_second_failure_in_a_row_waits_the_back_off_so_a_crash_loop_does_not_spin() -> None:
    world = running_job()
    for attempt in (1, 2):
        world.pods[worker(0)] = exited(137)
        world.reconcile()
        del world.pods[worker(0)]
        made = world.reconcile().made
        if attempt == 1:
            assert made == ["Worker-0"]  # at once, as Kubeflow
            world.pods[worker(0)] = running()
            world.reconcile()
    assert made == []
    world.advance(11)
    assert world.reconcile().made == ["Worker-0"]


def test_one_pass_creates_every_missing_pod_of_a_type() -> None:
    """Expectations are asked once per pass, as the Job controller asks once per sync: the
    pass's own first creation, not yet observed, does not hold back the others of its type
    (a wide job got one pod per watch round trip)."""
    assert World(pytorch_job(workers=3)).reconcile().made == [
        "Master-0", "Worker-0", "Worker-1", "Worker-2"]
