"""kubectl scale on the Kubeflow kinds whose CRDs declare the scale subresource.

The shipped PyTorchJob and PaddleJob CRDs map /scale to the Worker replicas: `kubectl scale`
finds the subresource in discovery, sends a merge patch of the Scale, and the job's spec
changes; the elastic bounds (a CEL rule of the CRD) refuse a count outside them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.e2e.conftest import Kubectl, _kubectl_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCALABLE = ("pytorchjobs.kubeflow.org", "paddlejobs.kubeflow.org")


@pytest.fixture(scope="module")
def kubeflow_crds(
    apiserver: RunningApiServer, cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The shipped CRDs of the scalable kinds, created once on the session's server."""
    kubectl = _kubectl_for(apiserver, cache_dir, tmp_path_factory.mktemp("scale"), "default")
    for name in SCALABLE:
        created = kubectl.run("create", "-f", str(ROOT / "crds" / f"{name}.yaml"))
        assert created.returncode == 0 or "AlreadyExists" in created.stderr, created.stderr
        kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=30s")


def _job(kind: str, name: str, *, workers: int, elastic: bool = False) -> str:
    prefix = kind.removesuffix("Job").lower()
    worker = {
        "replicas": workers,
        "template": {"spec": {"containers": [{"name": prefix, "image": "busybox"}]}},
    }
    spec: dict[str, object] = {f"{prefix}ReplicaSpecs": {"Worker": worker}}
    if elastic:
        spec["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 3}
    return yaml.safe_dump(
        {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}
    )


def _workers(kubectl: Kubectl, resource: str, name: str, field: str) -> int:
    replicas: int = kubectl.get_json(resource, name)["spec"][field]["Worker"]["replicas"]
    return replicas


@pytest.mark.usefixtures("kubeflow_crds")
def test_kubectl_scale_sets_the_pytorchjob_workers(kubectl: Kubectl) -> None:
    kubectl.apply(_job("PyTorchJob", "elastic", workers=2, elastic=True))
    generation = kubectl.get_json("pytorchjob", "elastic")["metadata"]["generation"]

    out = kubectl("scale", "pytorchjob", "elastic", "--replicas=1").stdout

    assert out.strip() == "pytorchjob.kubeflow.org/elastic scaled"
    job = kubectl.get_json("pytorchjob", "elastic")
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1
    assert job["metadata"]["generation"] == generation + 1


@pytest.mark.usefixtures("kubeflow_crds")
def test_kubectl_scale_beyond_the_elastic_bounds_is_refused(kubectl: Kubectl) -> None:
    kubectl.apply(_job("PyTorchJob", "bounded", workers=2, elastic=True))

    refused = kubectl.run("scale", "pytorchjob", "bounded", "--replicas=5")

    assert refused.returncode != 0
    assert "Worker replicas must be within elasticPolicy's [minReplicas, maxReplicas]" in (
        refused.stderr
    )
    assert _workers(kubectl, "pytorchjob", "bounded", "pytorchReplicaSpecs") == 2


@pytest.mark.usefixtures("kubeflow_crds")
def test_get_raw_shows_the_scale(kubectl: Kubectl) -> None:
    kubectl.apply(_job("PyTorchJob", "raw", workers=2))
    path = f"/apis/kubeflow.org/v1/namespaces/{kubectl.namespace}/pytorchjobs/raw/scale"

    scale = json.loads(kubectl("get", "--raw", path).stdout)

    job = kubectl.get_json("pytorchjob", "raw")
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "raw",
            "namespace": kubectl.namespace,
            "uid": job["metadata"]["uid"],
            "resourceVersion": job["metadata"]["resourceVersion"],
            "creationTimestamp": job["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 0},
    }


@pytest.mark.usefixtures("kubeflow_crds")
def test_kubectl_get_subresource_scale_prints_desired_and_available(kubectl: Kubectl) -> None:
    kubectl.apply(_job("PyTorchJob", "table", workers=3))

    out = kubectl("get", "pytorchjob", "table", "--subresource=scale").stdout.splitlines()

    assert out[0].split() == ["NAME", "DESIRED", "AVAILABLE", "AGE"]
    assert out[1].split()[:3] == ["table", "3", "0"]


@pytest.mark.usefixtures("kubeflow_crds")
def test_kubectl_scale_paddlejob(kubectl: Kubectl) -> None:
    kubectl.apply(_job("PaddleJob", "paddle", workers=1))

    out = kubectl("scale", "paddlejob", "paddle", "--replicas=3").stdout

    assert out.strip() == "paddlejob.kubeflow.org/paddle scaled"
    assert _workers(kubectl, "paddlejob", "paddle", "paddleReplicaSpecs") == 3


@pytest.mark.usefixtures("kubeflow_crds")
def test_kubectl_scale_with_a_current_replicas_precondition(kubectl: Kubectl) -> None:
    """With --current-replicas kubectl reads the Scale and PUTs it back."""
    kubectl.apply(_job("PyTorchJob", "guarded", workers=2))

    wrong = kubectl.run("scale", "pytorchjob", "guarded", "--current-replicas=3", "--replicas=1")
    kubectl("scale", "pytorchjob", "guarded", "--current-replicas=2", "--replicas=1")

    assert wrong.returncode != 0
    assert "Expected replicas to be 3, was 2" in wrong.stderr
    assert _workers(kubectl, "pytorchjob", "guarded", "pytorchReplicaSpecs") == 1
