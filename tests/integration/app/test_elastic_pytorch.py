"""Elastic PyTorch end to end: torchrun's environment, scaling without restarts, the bounds.

PyTorchJobs with an elasticPolicy run on `jobmachine up`'s cluster in simulate
mode; the Worker count is changed while they run, by a spec edit and through
the /scale subresource.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.kube.errors import Invalid
from engine.kube.resources import PODS
from engine.settings import EngineSettings
from tests.integration.app.support import wait_until
from tests.kinds import PYTORCHJOBS


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="simulate",
                        settings=EngineSettings(replica_backoff_base_s=0.2))
    with running_local_cluster(options) as running:
        yield running


def elastic_job(name: str, *, workers: int = 2, run_seconds: int = 3,
                exit_codes: str = "0", master: bool = False,
                **policy: Any) -> dict[str, Any]:
    def replica(replicas: int) -> dict[str, Any]:
        return {
            "replicas": replicas,
            "restartPolicy": "ExitCode",
            "template": {
                "metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": str(run_seconds),
                                             "sim.jobmachine.dev/exit-codes": exit_codes}},
                "spec": {"containers": [{"name": "pytorch", "image": "pytorch"}]},
            },
        }

    specs = {"Worker": replica(workers), **({"Master": replica(1)} if master else {})}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"elasticPolicy": policy, "pytorchReplicaSpecs": specs}}


def _status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return cluster.client.get(PYTORCHJOBS, name, "default").get("status") or {}


def _finished(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return wait_until(lambda: _status(cluster, name),
                      lambda seen: seen.get("phase") in ("Succeeded", "Failed"),
                      what=f"{name} to finish", timeout_s=90)


def _pods(cluster: LocalCluster, job: str) -> dict[str, dict[str, Any]]:
    pods, _ = cluster.client.list(PODS, "default", label_selector=f"jobmachine.dev/job-name={job}")
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def _env(pod: dict[str, Any]) -> dict[str, str | None]:
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}


def _set_workers(cluster: LocalCluster, name: str, count: int) -> None:
    cluster.client.patch(PYTORCHJOBS, name,
                         {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": count}}}},
                         namespace="default")


def test_an_elastic_worker_gets_torchruns_rendezvous_environment(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, elastic_job(
        "elastic-env", minReplicas=1, maxReplicas=3, maxRestarts=4, rdzvId="run-7",
        rdzvConf=[{"key": "timeout", "value": "900"}, {"key": "read_timeout", "value": "60"}],
    ), "default")

    pod = wait_until(lambda: _pods(cluster, "elastic-env").get("elastic-env-worker-1"),
                     lambda seen: seen is not None, what="worker 1")
    env = _env(pod)

    assert {k: v for k, v in env.items() if k.startswith("PET_")} == {
        "PET_NNODES": "1:3",
        "PET_NPROC_PER_NODE": "auto",
        "PET_RDZV_ENDPOINT": "elastic-env-worker-0:23456",
        "PET_RDZV_BACKEND": "c10d",
        "PET_RDZV_ID": "run-7",
        "PET_RDZV_CONF": "timeout=900,read_timeout=60",
        "PET_MAX_RESTARTS": "4",
    }
    # Ranks come from the rendezvous, not from the engine.
    assert not {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"} & set(env)


def test_bounds_default_to_each_other_then_to_the_worker_count(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, elastic_job("elastic-max", workers=2, maxReplicas=4),
                          "default")
    cluster.client.create(PYTORCHJOBS, elastic_job("elastic-none", workers=2, rdzvHost="rdzv",
                                                   rdzvPort=29400, rdzvBackend="etcd"),
                          "default")

    found = {}
    for name in ("elastic-max", "elastic-none"):
        pod = wait_until(lambda n=name: _pods(cluster, n).get(f"{n}-worker-0"),
                         lambda seen: seen is not None, what=f"{name} worker 0")
        found[name] = _env(pod)

    assert found["elastic-max"]["PET_NNODES"] == "4:4"
    assert found["elastic-none"]["PET_NNODES"] == "2:2"
    assert found["elastic-none"]["PET_RDZV_ENDPOINT"] == "rdzv:29400"
    assert found["elastic-none"]["PET_RDZV_BACKEND"] == "etcd"


def _scale(cluster: LocalCluster, name: str, count: int) -> dict[str, Any]:
    return cluster.client.patch(PYTORCHJOBS, name, {"spec": {"replicas": count}},
                                namespace="default", subresource="scale")


def test_scaling_down_and_up_keeps_the_workers_that_stay(cluster: LocalCluster) -> None:
    """2 -> 1 (a spec edit) -> 2 (/scale) Workers: Worker 0 is the same pod throughout, and
    the job succeeds."""
    cluster.client.create(PYTORCHJOBS, elastic_job("elastic-scale", run_seconds=8,
                                                   minReplicas=1, maxReplicas=3), "default")
    pods = wait_until(lambda: _pods(cluster, "elastic-scale"),
                      lambda seen: len(seen) == 2 and all(
                          (p.get("status") or {}).get("phase") == "Running" for p in seen.values()),
                      what="two running Workers")
    first = pods["elastic-scale-worker-0"]["metadata"]["uid"]

    _set_workers(cluster, "elastic-scale", 1)
    wait_until(lambda: set(_pods(cluster, "elastic-scale")), lambda seen: seen == {
        "elastic-scale-worker-0"}, what="Worker 1 to go")
    scale = _scale(cluster, "elastic-scale", 2)
    assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 2)
    again = wait_until(lambda: _pods(cluster, "elastic-scale"), lambda seen: len(seen) == 2,
                       what="Worker 1 to come back")
    status = _finished(cluster, "elastic-scale")

    assert again["elastic-scale-worker-0"]["metadata"]["uid"] == first
    assert status["phase"] == "Succeeded"
    assert status.get("restarts", 0) == 0


def test_an_elastic_job_succeeds_once_any_worker_succeeds(cluster: LocalCluster) -> None:
    """Worker 1 is added a while after Worker 0 started, so it runs on after Worker 0 has
    succeeded: the job is Succeeded while Worker 1 still runs (a non-elastic job would wait
    for every Worker)."""
    cluster.client.create(PYTORCHJOBS, elastic_job("elastic-any", workers=1, run_seconds=6,
                                                    minReplicas=1, maxReplicas=2), "default")
    wait_until(lambda: _pods(cluster, "elastic-any").get("elastic-any-worker-0"),
               lambda seen: (seen or {}).get("status", {}).get("phase") == "Running",
               what="Worker 0 running")
    time.sleep(3)  # gives Worker 1 a later end; nothing is measured
    _set_workers(cluster, "elastic-any", 2)
    wait_until(lambda: _pods(cluster, "elastic-any").get("elastic-any-worker-1"),
               lambda seen: seen is not None, what="Worker 1")

    status = _finished(cluster, "elastic-any")
    late = _pods(cluster, "elastic-any")["elastic-any-worker-1"]

    assert status["phase"] == "Succeeded"
    assert (late.get("status") or {}).get("phase") in ("Pending", "Running")


def test_max_restarts_bounds_the_jobs_restarts(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, elastic_job("elastic-crash", workers=1, run_seconds=0,
                                                   exit_codes="137", maxRestarts=1), "default")

    status = _finished(cluster, "elastic-crash")

    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert "elasticPolicy.maxRestarts (1)" in failed["message"]
    assert status.get("restarts", 0) == 2


@pytest.mark.parametrize(("policy", "workers", "says"), [
    ({"minReplicas": 3, "maxReplicas": 2}, 2, "minReplicas must not be more than maxReplicas"),
    ({"minReplicas": 1, "maxReplicas": 2}, 3, "Worker replicas must be within"),
    ({"minReplicas": 0}, 1, "minReplicas must be at least 1"),
])
def test_bounds_outside_the_workers_are_refused(cluster: LocalCluster, policy: dict[str, int],
                                                workers: int, says: str) -> None:
    with pytest.raises(Invalid) as refused:
        cluster.client.create(PYTORCHJOBS, elastic_job("elastic-bad", workers=workers, **policy),
                              "default")

    assert says in str(refused.value)


def test_scaling_outside_the_bounds_is_refused(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, elastic_job("elastic-bounded", run_seconds=5,
                                                   minReplicas=1, maxReplicas=2), "default")

    with pytest.raises(Invalid) as edited:
        _set_workers(cluster, "elastic-bounded", 3)
    with pytest.raises(Invalid) as scaled:
        _scale(cluster, "elastic-bounded", 0)

    assert "Worker replicas must be within" in str(edited.value)
    assert "Worker replicas must be within" in str(scaled.value)
    job = cluster.client.get(PYTORCHJOBS, "elastic-bounded", "default")
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2
