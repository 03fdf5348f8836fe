"""Kubeflow's own example manifests for XGBoostJob, PaddleJob, JAXJob and MPIJob run unchanged.

Each file of examples/kubeflow/upstream/ (byte-for-byte copies of training-operator
v1.9.0's examples) is applied as it is to `jobmachine up --node-mode simulate`
and must run to Succeeded, with the pods, services and child objects its kind's
machine says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cluster.node import Capacity
from engine.controller.machines.revisions import machine_in_name
from engine.kube.resources import CONFIGMAPS, NAMESPACES, PODS, SERVICES
from engine.settings import EngineSettings
from engine.shipped import shipped_dir
from tests.integration.app.support import wait_until
from tests.kinds import KINDS

UPSTREAM = shipped_dir("examples") / "kubeflow" / "upstream"
FILES = sorted(p for p in UPSTREAM.rglob("*.yaml"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # Room for every example at once, GPUs included (paddlepaddle/simple-gpu.yaml asks
    # for two): the local node binds a pod only when its requests fit.
    options = UpOptions(port=0, node_mode="simulate",
                        settings=EngineSettings(replica_backoff_base_s=0.2),
                        node_capacity=Capacity.parse("cpu=64,memory=256Gi,nvidia.com/gpu=8"))
    with running_local_cluster(options) as running:
        running.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "kubeflow"}})
        yield running


def _finished(cluster: LocalCluster, manifest: dict[str, Any]) -> dict[str, Any]:
    resource = KINDS[manifest["kind"]]
    name, namespace = manifest["metadata"]["name"], manifest["metadata"].get("namespace",
                                                                              "default")
    return wait_until(
        lambda: cluster.client.get(resource, name, namespace).get("status") or {},
        lambda seen: seen.get("phase") in ("Succeeded", "Failed"),
        what=f"{name} to finish", timeout_s=60,
    )


def test_every_kind_has_upstream_examples() -> None:
    kinds = {yaml.safe_load(path.read_text())["kind"] for path in FILES}
    assert kinds == {"XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"}


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(UPSTREAM)) for p in FILES])
def test_an_upstream_example_runs_unchanged_to_succeeded(cluster: LocalCluster, path: Path
                                                         ) -> None:
    manifest = yaml.safe_load(path.read_text())
    namespace = manifest["metadata"].get("namespace", "default")
    name = manifest["metadata"]["name"]
    resource = KINDS[manifest["kind"]]
    if _exists(cluster, resource, name, namespace):  # two upstream files share a name
        cluster.client.delete(resource, name, namespace)
        wait_until(lambda: _exists(cluster, resource, name, namespace), lambda seen: not seen,
                   what=f"{name} to go", timeout_s=30)
    cluster.client.create(resource, manifest, namespace)

    status = _finished(cluster, manifest)

    assert status["phase"] == "Succeeded", status
    assert machine_in_name(status["machine"]) == manifest["kind"].lower()  # the revision's name
    specs = next(v for k, v in manifest["spec"].items() if k.endswith("ReplicaSpecs"))
    pods, _ = cluster.client.list(PODS, namespace, label_selector=f"jobmachine.dev/job-name={name}")
    created = {p["metadata"]["name"] for p in pods}
    expected = {f"{name}-{t.lower()}-{i}" for t, s in specs.items()
                for i in range(s.get("replicas", 1))}
    deleted_by_policy = (manifest["spec"].get("runPolicy") or {}).get("cleanPodPolicy") or \
        manifest["spec"].get("cleanPodPolicy")
    if deleted_by_policy in (None, "None"):
        assert created == expected


def _exists(cluster: LocalCluster, resource: Any, name: str, namespace: str) -> bool:
    items, _ = cluster.client.list(resource, namespace, field_selector=f"metadata.name={name}")
    return bool(items)


def test_the_mpi_example_gets_its_hostfile_and_the_launcher_mounts_it(
    cluster: LocalCluster,
) -> None:
    manifest = yaml.safe_load((UPSTREAM / "mpi" / "tensorflow-mnist.yaml").read_text())
    manifest["metadata"]["name"] = "mnist-hostfile"
    # The Launcher runs a while, so the Workers are still there to be read.
    launcher_template = manifest["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher_template["metadata"] = {"annotations": {"sim.jobmachine.dev/run-seconds": "60"}}
    cluster.client.create(KINDS["MPIJob"], manifest, "default")

    config = wait_until(
        lambda: _get(cluster, CONFIGMAPS, "mnist-hostfile-config"), lambda seen: seen is not None,
        what="the job's ConfigMap", timeout_s=30,
    )
    launcher = wait_until(
        lambda: _get(cluster, PODS, "mnist-hostfile-launcher-0"), lambda seen: seen is not None,
        what="the launcher pod", timeout_s=30,
    )

    assert config["data"]["hostfile"] == (
        "mnist-hostfile-worker-0 slots=1\nmnist-hostfile-worker-1 slots=1\n"
    )
    assert config["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    spec = launcher["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "mpi-job-config"]
    assert volume["configMap"]["name"] == "mnist-hostfile-config"
    container = spec["containers"][0]
    assert {"name": "mpi-job-config", "mountPath": "/etc/mpi"} in container["volumeMounts"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_plm_rsh_agent"] == "/etc/mpi/kubexec.sh"
    worker = wait_until(
        lambda: _get(cluster, PODS, "mnist-hostfile-worker-0"), lambda seen: seen is not None,
        what="worker 0", timeout_s=30,
    )
    assert worker["spec"]["containers"][0]["command"] == ["sleep", "365d"]
    for index in range(2):
        assert _get(cluster, SERVICES, f"mnist-hostfile-worker-{index}") is not None
    assert _get(cluster, SERVICES, "mnist-hostfile-launcher-0") is None
    cluster.client.delete(KINDS["MPIJob"], "mnist-hostfile", "default")


def _get(cluster: LocalCluster, resource: Any, name: str) -> dict[str, Any] | None:
    items, _ = cluster.client.list(resource, "default", field_selector=f"metadata.name={name}")
    return items[0] if items else None
