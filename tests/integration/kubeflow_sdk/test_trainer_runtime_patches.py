"""The Kubeflow SDK's `RuntimePatch` option against `jobmachine up`: `train()` posts the
patch under the manager `trainer.kubeflow.org/kubeflow-sdk`; the TrainJob CRD keeps every
field the SDK's patch types have, the TrainJob machine applies it to the runtime's JobSet
spec, and the nodes' pods carry it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app.up import LocalCluster
from engine.kube.resources import PODS
from tests.integration.kubeflow_sdk.support import needs_sdk, run_sdk
from tests.kinds import KINDS

pytestmark = [needs_sdk, pytest.mark.slow]

TRAIN = '''
from kubeflow.trainer.options.kubernetes import (
    ContainerPatch, JobSetSpecPatch, JobSetTemplatePatch, JobSpecPatch, JobTemplatePatch,
    PodSpecPatch, PodTemplatePatch, ReplicatedJobPatch, RuntimePatch, TrainingRuntimeSpecPatch)


def train():
    print("trained")


patch = RuntimePatch(training_runtime_spec=TrainingRuntimeSpecPatch(template=JobSetTemplatePatch(
    metadata={"labels": {"team": "sdk"}},
    spec=JobSetSpecPatch(replicated_jobs=[ReplicatedJobPatch(name="node", template=JobTemplatePatch(
        spec=JobSpecPatch(template=PodTemplatePatch(
            metadata={"labels": {"example.com/patched": "yes"}},
            spec=PodSpecPatch(
                node_selector={"kubernetes.io/os": "linux"},
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                volumes=[{"name": "scratch", "emptyDir": {}}],
                containers=[ContainerPatch(name="node", volume_mounts=[
                    {"name": "scratch", "mountPath": "/scratch"}])])))))]))))
name = client.train(runtime="torch-distributed",
                    trainer=CustomTrainer(func=train, num_nodes=2), options=[patch])
job = client.wait_for_job_status(name, polling_interval=1, timeout=240)
emit({"name": name, "status": job.status})
'''


def test_a_runtime_patch_from_the_sdk_reaches_the_nodes_pods(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    trained = run_sdk(cluster, TRAIN, tmp_path)
    assert trained["status"] == "Complete"
    name = trained["name"]
    trainjob = cluster.client.get(KINDS["TrainJob"], name, "default")
    (patch,) = trainjob["spec"]["runtimePatches"]
    assert patch["manager"] == "trainer.kubeflow.org/kubeflow-sdk"
    pods, _ = cluster.client.list(PODS, "default",
                                  label_selector=f"jobset.sigs.k8s.io/jobset-name={name}")
    assert len(pods) == 2
    for pod in pods:
        assert pod["metadata"]["labels"]["example.com/patched"] == "yes"
        assert pod["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
        assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"][
            "tolerations"]
        node = next(c for c in pod["spec"]["containers"] if c["name"] == "node")
        assert {"name": "scratch", "mountPath": "/scratch"} in node["volumeMounts"]
        assert {"name": "scratch", "emptyDir": {}} in pod["spec"]["volumes"]
