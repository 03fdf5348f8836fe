"""The Kubeflow SDK's `train` with a `CustomTrainer` against `jobmachine up`.

`train()` reads the runtime, turns the function into the `node` container's command (a
`bash -c` script that writes the function's source to a file and runs it with torchrun on
a torch runtime) and posts a TrainJob whose `resourcesPerNode` quantities are JSON numbers
(`1.0`); the TrainJob machine makes the JobSet, its Job and one pod per node with torchrun's
variables, and the SDK's `get_job` reads the nodes back from the pods by JobSet's labels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app.up import LocalCluster
from engine.kube.resources import PODS, Resource
from tests.integration.kubeflow_sdk.support import needs_sdk, run_sdk
from tests.kinds import KINDS

pytestmark = [needs_sdk, pytest.mark.slow]

TRAINJOBS = KINDS["TrainJob"]
JOBS = Resource("batch", "v1", "jobs", "Job")

TRAIN = '''
def fine_tune(epochs):
    print(f"fine-tuning for {epochs} epochs")


name = client.train(runtime="torch-distributed", trainer=CustomTrainer(
    func=fine_tune, func_args={"epochs": 3}, num_nodes=2,
    resources_per_node={"cpu": 1, "memory": "1Gi"}, env={"LEARNING_RATE": "0.01"}))
job = client.wait_for_job_status(name, polling_interval=1, timeout=240)
emit({"name": name, "status": job.status, "nodes": job.num_nodes, "runtime": job.runtime.name,
      "steps": [[s.name, s.status, s.pod_name, s.device, s.device_count] for s in job.steps]})
'''


def test_train_posts_a_trainjob_whose_nodes_get_the_function_and_torchruns_variables(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    trained = run_sdk(cluster, TRAIN, tmp_path)
    name = trained["name"]
    assert (trained["status"], trained["nodes"], trained["runtime"]) == (
        "Complete", 2, "torch-distributed")
    steps = {step[0]: step for step in trained["steps"]}
    assert set(steps) == {"node-0", "node-1"}
    for index, (_, status, pod, device, count) in enumerate(steps[f"node-{i}"] for i in (0, 1)):
        assert status == "Succeeded"
        pod_object = cluster.client.get(PODS, pod, "default")
        assert pod_object["metadata"]["labels"][
            "batch.kubernetes.io/job-completion-index"] == str(index)
        assert (device, count) == ("cpu", "1")

    trainjob = cluster.client.get(TRAINJOBS, name, "default")
    trainer = trainjob["spec"]["trainer"]
    assert trainjob["spec"]["runtimeRef"] == {
        "name": "torch-distributed", "kind": "ClusterTrainingRuntime",
        "apiGroup": "trainer.kubeflow.org"}
    assert trainer["numNodes"] == 2
    # Posted as 1.0 (a JSON number); kept as the API server's decoder keeps a whole number.
    assert trainer["resourcesPerNode"]["requests"] == {"cpu": 1, "memory": "1Gi"}
    bash, flag, script = trainer["command"]
    assert (bash, flag) == ("bash", "-c")
    assert "def fine_tune(epochs):" in script and "fine_tune(**{'epochs': 3})" in script
    assert script.rstrip().endswith('torchrun "sdk_program.py"')

    job = cluster.client.get(JOBS, f"{name}-node-0", "default")
    (node,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in node["env"]}
    assert env["LEARNING_RATE"] == "0.01"
    assert env["PET_NNODES"] == "2"
    assert env["PET_NPROC_PER_NODE"] == "1"  # one CPU per node
    assert env["PET_MASTER_ADDR"] == f"{name}-node-0-0.{name}"
    assert node["resources"]["limits"] == {"cpu": 1, "memory": "1Gi"}
    assert node["command"] == trainer["command"]
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (2, 2)
