"""The Kubeflow SDK's `list_runtimes` and `get_runtime` against `jobmachine up`.

`TrainerClient()` reads the ConfigMap `kubeflow-system/kubeflow-trainer-public` `up` applies,
lists the ClusterTrainingRuntimes and the TrainingRuntimes of its namespace (a namespaced
one wins over a cluster one of the same name), skips runtimes without the label
`trainer.kubeflow.org/framework`, and reads each one's `node` container and ML policy.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from engine.app.up import LocalCluster
from tests.integration.kubeflow_sdk.support import needs_sdk, run_sdk
from tests.kinds import NAMED

pytestmark = [needs_sdk, pytest.mark.slow]

CLUSTER_RUNTIMES, RUNTIMES = NAMED["ClusterTrainingRuntime"], NAMED["TrainingRuntime"]

LIST = '''
emit({"runtimes": [
    {"name": r.name, "kind": r.kind.value, "framework": r.trainer.framework,
     "nodes": r.trainer.num_nodes, "image": r.trainer.image,
     "command": list(r.trainer.command),
     "entrypoint": r.trainer.command[-1].split()[-2] if len(r.trainer.command) > 2 else None}
    for r in client.list_runtimes()]})
'''


def _runtime(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return cluster.client.get(CLUSTER_RUNTIMES, name)


def test_the_shipped_runtimes_are_listed_with_their_framework_and_entrypoint(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    listed = run_sdk(cluster, LIST, tmp_path)["runtimes"]
    by_name = {runtime["name"]: runtime for runtime in listed}
    assert set(by_name) == {"torch-distributed", "jax-distributed", "xgboost-distributed",
                            "torch-distributed-with-cache", "deepspeed-distributed",
                            "mlx-distributed"}
    torch = by_name["torch-distributed"]
    assert torch["kind"] == "ClusterTrainingRuntime"
    assert torch["framework"] == "torch"
    assert torch["nodes"] == 1
    # The SDK runs a CustomTrainer's function with torchrun on a torch runtime, python else.
    assert torch["entrypoint"] == "torchrun"
    assert by_name["jax-distributed"]["entrypoint"] == "python"
    # On an MPI runtime the SDK runs it with mpirun over the hostfile the TrainJob mounts.
    deepspeed = by_name["deepspeed-distributed"]
    assert deepspeed["framework"] == "deepspeed"
    assert deepspeed["command"][:3] == ["mpirun", "--hostfile", "/etc/mpi/hostfile"]
    assert deepspeed["entrypoint"] == "python"
    node = _runtime(cluster, "torch-distributed")["spec"]["template"]["spec"][
        "replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert torch["image"] == node["image"]


def test_a_runtime_without_the_framework_label_is_skipped_and_a_namespaced_one_wins(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    unlabelled = copy.deepcopy(_runtime(cluster, "jax-distributed"))
    unlabelled["metadata"] = {"name": "no-framework-label"}
    cluster.client.create(CLUSTER_RUNTIMES, unlabelled)
    mine = copy.deepcopy(_runtime(cluster, "torch-distributed"))
    mine["apiVersion"], mine["kind"] = RUNTIMES.api_version, "TrainingRuntime"
    mine["metadata"] = {"name": "torch-distributed",
                        "labels": {"trainer.kubeflow.org/framework": "torch"}}
    mine["spec"]["mlPolicy"]["numNodes"] = 3
    cluster.client.create(RUNTIMES, mine, "default")
    try:
        listed = run_sdk(cluster, LIST, tmp_path)["runtimes"]
        got = run_sdk(cluster, '''
            runtime = client.get_runtime("torch-distributed")
            emit({"kind": runtime.kind.value, "nodes": runtime.trainer.num_nodes})
        ''', tmp_path)
    finally:
        cluster.client.delete(CLUSTER_RUNTIMES, "no-framework-label")
        cluster.client.delete(RUNTIMES, "torch-distributed", "default")
    names = sorted(runtime["name"] for runtime in listed)
    assert names == ["deepspeed-distributed", "jax-distributed", "mlx-distributed",
                     "torch-distributed", "torch-distributed-with-cache", "xgboost-distributed"]
    torch = next(runtime for runtime in listed if runtime["name"] == "torch-distributed")
    assert (torch["kind"], torch["nodes"]) == ("TrainingRuntime", 3)
    assert got == {"kind": "TrainingRuntime", "nodes": 3}


def test_get_runtime_of_a_missing_name_says_both_scopes_were_asked(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    said = run_sdk(cluster, '''
        try:
            client.get_runtime("no-such-runtime")
        except RuntimeError as error:
            emit({"error": str(error), "status": getattr(error.__cause__, "status", None)})
    ''', tmp_path)
    assert said == {"error": "Failed to get Runtime: no-such-runtime (checked both namespaced "
                             "and cluster scope)", "status": 404}
