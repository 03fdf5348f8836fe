"""Kubeflow kinds as step tables: the replica that decides when the job runs and succeeds.

These kinds share Kubeflow's lifecycle (machines/kubeflow.yaml) but name the replica
whose start means the job runs and whose end means it succeeded: MPI's Launcher,
XGBoost's Master, PaddlePaddle's Master (parameter-server mode) or every Worker
(collective mode), TFJob's Master when it has no Chief, JAX's Workers (Kubeflow's
default: any replica runs, every replica succeeded), an elastic PyTorchJob's first
Worker (and its elasticPolicy.maxRestarts). Each table walks the boundary: nothing runs
yet, exactly one pod of the deciding type runs, then the deciding replicas end one by one.
"""

from __future__ import annotations

from typing import Any

from tests.scenarios.world import (
    MASTER,
    ReplicaId,
    Step,
    World,
    exited,
    pending,
    play,
    pytorch_job,
    replica_spec,
    running,
    tf_job,
    worker,
)

LAUNCHER = ReplicaId("Launcher", 0)


def kubeflow_job(kind: str, field: str, container: str, counts: dict[str, int],
                 name: str = "train") -> dict[str, Any]:
    """A job of a Kubeflow kind whose replica specs sit at `spec.<field>`."""
    specs = {t: replica_spec(container, n, "Never") for t, n in counts.items()}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", "generation": 1},
        "spec": {field: specs},
    }


def test_an_mpijob_runs_with_its_launcher_and_succeeds_when_the_launcher_does() -> None:
    job = kubeflow_job("MPIJob", "mpiReplicaSpecs", "mpi", {"Launcher": 1, "Worker": 2})
    play(World(job), [
        Step("submitted", phase="Created",
             created=["Launcher-0", "Worker-0", "Worker-1"]),
        Step("every pod is pending: not running yet",
             {LAUNCHER: pending(), worker(0): pending(), worker(1): pending()},
             phase="Created"),
        Step("the workers run, the launcher still pends: the launcher decides",
             {worker(0): running(), worker(1): running()}, phase="Created"),
        Step("the one launcher runs", {LAUNCHER: running()}, phase="Running"),
        Step("worker-0 exits 0 first: the launcher has not ended", {worker(0): exited(0)},
             phase="Running"),
        Step("the launcher exits 0: the job succeeds, worker-1 still running",
             {LAUNCHER: exited(0)}, phase="Succeeded", job_actions=["cleanupPods"],
             conditions={"Succeeded": "True"}),
    ])


def test_an_xgboostjob_runs_with_its_master_and_succeeds_when_the_master_does() -> None:
    job = kubeflow_job("XGBoostJob", "xgbReplicaSpecs", "xgboost", {"Master": 1, "Worker": 2})
    play(World(job), [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0", "Worker-1"]),
        Step("every pod is pending",
             {MASTER: pending(), worker(0): pending(), worker(1): pending()},
             phase="Created"),
        Step("the workers run, the master still pends", {worker(0): running(),
             worker(1): running()}, phase="Created"),
        Step("the one master runs", {MASTER: running()}, phase="Running"),
        Step("both workers exit 0: the master has not ended",
             {worker(0): exited(0), worker(1): exited(0)}, phase="Running"),
        Step("the master exits 0", {MASTER: exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"], conditions={"Succeeded": "True"}),
    ])


def test_a_paddlejob_with_a_master_follows_its_master() -> None:
    job = kubeflow_job("PaddleJob", "paddleReplicaSpecs", "paddle",
                       {"Master": 1, "Worker": 2})
    play(World(job), [
        Step("submitted (parameter-server mode)", phase="Created",
             created=["Master-0", "Worker-0", "Worker-1"]),
        Step("every pod is pending",
             {MASTER: pending(), worker(0): pending(), worker(1): pending()},
             phase="Created"),
        Step("the workers run, the master still pends", {worker(0): running(),
             worker(1): running()}, phase="Created"),
        Step("the one master runs", {MASTER: running()}, phase="Running"),
        Step("both workers exit 0: the master decides",
             {worker(0): exited(0), worker(1): exited(0)}, phase="Running"),
        Step("the master exits 0", {MASTER: exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"], conditions={"Succeeded": "True"}),
    ])


def test_a_collective_paddlejob_runs_with_one_worker_and_succeeds_with_all() -> None:
    job = kubeflow_job("PaddleJob", "paddleReplicaSpecs", "paddle", {"Worker": 2})
    play(World(job), [
        Step("submitted (collective mode)", phase="Created",
             created=["Worker-0", "Worker-1"]),
        Step("both workers pend", {worker(0): pending(), worker(1): pending()},
             phase="Created"),
        Step("worker-1 alone runs", {worker(1): running()}, phase="Running"),
        Step("worker-0 runs too", {worker(0): running()}, phase="Running"),
        Step("worker-0 exits 0: one of two", {worker(0): exited(0)}, phase="Running"),
        Step("worker-1 exits 0: every worker succeeded", {worker(1): exited(0)},
             phase="Succeeded", job_actions=["cleanupPods"],
             conditions={"Succeeded": "True"}),
    ])


def test_a_jaxjob_runs_with_any_worker_and_succeeds_when_every_worker_has() -> None:
    job = kubeflow_job("JAXJob", "jaxReplicaSpecs", "jax", {"Worker": 2})
    play(World(job), [
        Step("submitted", phase="Created", created=["Worker-0", "Worker-1"]),
        Step("both workers pend", {worker(0): pending(), worker(1): pending()},
             phase="Created"),
        Step("worker-0 alone runs", {worker(0): running()}, phase="Running"),
        Step("worker-1 runs too", {worker(1): running()}, phase="Running"),
        Step("worker-1 exits 0: one of two", {worker(1): exited(0)}, phase="Running"),
        Step("worker-0 exits 0: every worker succeeded", {worker(0): exited(0)},
             phase="Succeeded", job_actions=["cleanupPods"],
             conditions={"Succeeded": "True"}),
    ])


def test_a_tfjob_with_a_master_and_no_chief_follows_its_master() -> None:
    play(World(tf_job(replicas={"Master": 1, "Worker": 2})), [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0", "Worker-1"]),
        Step("every pod is pending",
             {MASTER: pending(), worker(0): pending(), worker(1): pending()},
             phase="Created"),
        Step("the workers run, the master still pends", {worker(0): running(),
             worker(1): running()}, phase="Created"),
        Step("the one master runs", {MASTER: running()}, phase="Running"),
        Step("both workers exit 0: the master decides",
             {worker(0): exited(0), worker(1): exited(0)}, phase="Running"),
        Step("the master exits 0", {MASTER: exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"], conditions={"Succeeded": "True"}),
    ])


ELASTIC = {"minReplicas": 1, "maxReplicas": 2}


def test_an_elastic_pytorchjob_succeeds_when_its_first_worker_does() -> None:
    world = World(pytorch_job(masters=0, workers=2))
    world.job["spec"]["elasticPolicy"] = dict(ELASTIC)
    play(world, [
        Step("submitted", phase="Created", created=["Worker-0", "Worker-1"]),
        Step("both workers run", {worker(0): running(), worker(1): running()},
             phase="Running"),
        Step("worker-1 exits 0: one worker is enough for an elastic job",
             {worker(1): exited(0)}, phase="Succeeded", job_actions=["cleanupPods"],
             conditions={"Succeeded": "True"}),
    ])


def test_an_elastic_pytorchjob_restarts_max_restarts_times_then_fails() -> None:
    world = World(pytorch_job(masters=0, workers=1, policy="OnFailure"))
    world.job["spec"]["elasticPolicy"] = {**ELASTIC, "maxRestarts": 1}
    fails = {worker(0): exited(1)}
    play(world, [
        Step("submitted", phase="Created", created=["Worker-0"]),
        Step("it runs", {worker(0): running()}, phase="Running"),
        Step("worker-0 fails once: 1 restart, within maxRestarts 1", fails,
             phase="Restarting", deleted=["Worker-0"], restarts=1),
        Step("its pod is gone", {worker(0): None}, phase="Restarting", created=["Worker-0"]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=1),
        Step("it fails again: 2 restarts, past maxRestarts 1", fails, phase="Failing",
             deleted=["Worker-0"], job_actions=["cleanupPods"], restarts=2,
             events=["ExitedWithCode", "PyTorchJobRestarting", "BackoffLimitExceeded"]),
    ])
