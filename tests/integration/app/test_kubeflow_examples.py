"""Kubeflow's own examples (examples/kubeflow/) run on `jobmachine up` in both node modes.

Simulate mode submits each manifest exactly as Kubeflow's documentation gives
it. Process mode changes one thing, because the node ignores images and the
image's program does not exist here: every container's `command` becomes the
example's local stand-in script. The master's (or chief's) log then shows the
replicas really met over the service names the engine created.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app.up import LocalCluster, NodeMode, UpOptions, running_local_cluster
from engine.kube.resources import NAMESPACES, PODS
from engine.settings import EngineSettings
from engine.shipped import shipped_dir
from tests.integration.app.support import wait_until
from tests.kinds import KINDS

KUBEFLOW = shipped_dir("examples") / "kubeflow"


@dataclass(frozen=True)
class KubeflowExample:
    """One example file, its stand-in, and what the logs must show in process mode."""

    file: str
    standin: str
    container: str
    replicas: Mapping[str, int]
    evidence: Mapping[str, tuple[str, ...]]

    @property
    def manifest(self) -> dict[str, Any]:
        document: dict[str, Any] = yaml.safe_load((KUBEFLOW / self.file).read_text())
        return document

    @property
    def standin_path(self) -> Path:
        return KUBEFLOW / "local" / self.standin


PYTORCH = KubeflowExample(
    file="pytorch-mnist.yaml",
    standin="pytorch_mnist_standin.py",
    container="pytorch",
    replicas={"Master": 1, "Worker": 1},
    evidence={
        "pytorch-simple-master-0": (
            "rank 0: waiting at pytorch-simple-master-0:23456 for 1 other ranks",
            "rank 0: rank 1 joined",
            "rank 0: rendezvous complete, world size 2",
            "rank 0: epoch 1 loss",
        ),
        "pytorch-simple-worker-0": (
            "rank 1: joined pytorch-simple-master-0:23456 (world 2)",
            "rank 1: epoch 1 loss",
        ),
    },
)
TF = KubeflowExample(
    file="tf-ps-workers.yaml",
    standin="tf_standin.py",
    container="tensorflow",
    replicas={"PS": 2, "Worker": 4},
    evidence={
        "dist-mnist-for-e2e-test-worker-0": (
            "TF_CONFIG task worker 0",
            "worker 0: reached ps 0 at dist-mnist-for-e2e-test-ps-0.default.svc:2222",
            "worker 0: reached ps 1 at dist-mnist-for-e2e-test-ps-1.default.svc:2223",
            "worker 0: epoch 1 step 3 loss",
        ),
        **{
            f"dist-mnist-for-e2e-test-ps-{ps}": (
                *(f"ps {ps}: worker {worker} connected" for worker in range(4)),
                f"ps {ps}: all 4 workers connected, shutting down",
            )
            for ps in range(2)
        },
    },
)


def with_local_program(manifest: Mapping[str, Any], script: Path) -> dict[str, Any]:
    """The manifest with every container's `command` replaced by [python, script]; nothing
    else changes (the same replacement docs/guide.md and the examples' comments show)."""
    local = copy.deepcopy(dict(manifest))
    for field, replica_specs in local["spec"].items():
        if field.endswith("ReplicaSpecs"):
            for replica_spec in replica_specs.values():
                for container in replica_spec["template"]["spec"]["containers"]:
                    container["command"] = [sys.executable, str(script)]
    return local


@pytest.fixture(scope="module", params=["simulate", "process"])
def node_mode(request: pytest.FixtureRequest) -> NodeMode:
    mode: NodeMode = request.param
    return mode


@pytest.fixture(scope="module")
def cluster(node_mode: NodeMode) -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode=node_mode,
                        settings=EngineSettings(replica_backoff_base_s=0.2))
    with running_local_cluster(options) as running:
        # Kubeflow's namespace, which the PyTorch example names (Kubeflow's install creates it).
        running.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "kubeflow"}})
        yield running


def _pod_phases(cluster: LocalCluster, namespace: str, job: str) -> dict[str, str]:
    pods, _ = cluster.client.list(PODS, namespace,
                                  label_selector=f"jobmachine.dev/job-name={job}")
    return {pod["metadata"]["name"]: (pod.get("status") or {}).get("phase", "") for pod in pods}


@pytest.mark.parametrize("example", [PYTORCH, TF], ids=["pytorch-mnist", "tf-ps-workers"])
def test_kubeflow_example_succeeds(
    node_mode: NodeMode, cluster: LocalCluster, example: KubeflowExample
) -> None:
    process_mode = node_mode == "process"
    manifest = example.manifest
    if process_mode:
        manifest = with_local_program(manifest, example.standin_path)
    name = manifest["metadata"]["name"]
    namespace = manifest["metadata"].get("namespace", "default")
    resource = KINDS[manifest["kind"]]
    cluster.client.create(resource, manifest, namespace)

    status = wait_until(
        lambda: cluster.client.get(resource, name, namespace).get("status") or {},
        lambda seen: seen.get("phase") in ("Succeeded", "Failed"),
        what=f"{name} to finish", timeout_s=60,
    )
    # Nothing deletes the pods (cleanPodPolicy unset), so each replica's own end shows.
    phases = wait_until(
        lambda: _pod_phases(cluster, namespace, name),
        lambda seen: len(seen) == sum(example.replicas.values())
        and set(seen.values()) <= {"Succeeded", "Failed"},
        what=f"every pod of {name} to end", timeout_s=60,
    )

    logs = cluster.server.logs_dir / namespace
    assert status["phase"] == "Succeeded", _logs_of(logs, phases, example.container)
    assert set(phases.values()) == {"Succeeded"}
    assert status.get("restarts", 0) == 0
    replica_statuses = status["replicaStatuses"]
    assert set(replica_statuses) == set(example.replicas)
    assert all(counts.get("failed", 0) == 0 for counts in replica_statuses.values())
    chief = "Master" if "Master" in example.replicas else "Worker"
    assert replica_statuses[chief].get("succeeded", 0) >= 1
    if process_mode:
        for pod, lines in example.evidence.items():
            text = (logs / pod / f"{example.container}.log").read_text()
            for line in lines:
                assert line in text, f"{pod} did not log {line!r}:\n{text}"


def _logs_of(logs: Path, pods: Mapping[str, str], container: str) -> str:
    return "\n".join(
        f"--- {pod} ({phase})\n{(logs / pod / f'{container}.log').read_text()}"
        for pod, phase in pods.items() if (logs / pod / f"{container}.log").exists()
    )
