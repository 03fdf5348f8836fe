"""The job-wide values a pod's machine values read (ActionRun.template_variables): a TFJob
pod's TF_CONFIG holds `clusterSpec`, every replica's address by type, and an XGBoostJob
master's WORKER_ADDRS lists the Workers' `hosts`; training code finds its peers by them."""

from __future__ import annotations

import json
from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import ReplicaId
from tests.scenarios.test_decider_replica_scenarios import kubeflow_job
from tests.scenarios.world import pytorch_job, tf_job, worker
from tests.unit.controller.action_runs import Recorder, action_run, judged, planned, world_of
from tests.unit.controller.test_actions_services import BodiesApi


def env_of(job: dict[str, Any], replica: ReplicaId) -> dict[str, str]:
    """The environment of the pod a pass creates for `replica`."""
    world = world_of(job)
    decision, facts = judged(world, actions=(planned("createPod", replica),))
    api = BodiesApi()
    execute(action_run(world, decision, api, Recorder(), facts=facts))
    (pod,) = api.bodies.values()
    return {env["name"]: env.get("value") for container in pod["spec"]["containers"]
            for env in container.get("env", ())}


def test_a_tfjob_pod_is_told_the_cluster_spec() -> None:
    tf_config = json.loads(env_of(tf_job(replicas={"PS": 1, "Worker": 2}), worker(1))["TF_CONFIG"])
    assert tf_config["cluster"] == {
        "ps": ["dist-mnist-ps-0.team.svc:2222"],
        "worker": ["dist-mnist-worker-0.team.svc:2222", "dist-mnist-worker-1.team.svc:2222"]}
    assert tf_config["task"] == {"type": "worker", "index": 1}


def test_an_xgboost_master_is_told_the_workers_hosts() -> None:
    job = kubeflow_job("XGBoostJob", "xgbReplicaSpecs", "xgboost", {"Master": 1, "Worker": 2})
    env = env_of(job, ReplicaId("Master", 0))
    assert env["WORKER_ADDRS"] == "train-worker-0,train-worker-1"


def test_a_kubeflow_pod_restarts_in_place_when_its_replica_restarts_on_failure() -> None:
    # The machine's pod restartPolicy reads the replica's own restart policy (`policy`).
    world = world_of(pytorch_job(workers=1, policy="OnFailure"))
    decision, facts = judged(world, actions=(planned("createPod", worker(0)),))
    api = BodiesApi()
    execute(action_run(world, decision, api, Recorder(), facts=facts))
    assert api.bodies["mnist-worker-0"]["spec"]["restartPolicy"] == "OnFailure"
