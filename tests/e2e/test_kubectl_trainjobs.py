"""The real kubectl against `jobmachine up` (process mode) running Kubeflow Trainer's own
TrainJob examples unchanged (examples/trainer/, from kubeflow/trainer v2.3.0) on the shipped
torch-distributed runtime: a suspended TrainJob (the Kueue example) shows State Suspended
with its JobSet suspended, runs as Kueue would let it once resumed and ends Complete; the
multi-node example's pods get torchrun's PET_* variables; deleting a TrainJob deletes its
JobSet (owner references)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Kubectl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trainer"


def test_the_kueue_example_waits_suspended_then_runs_to_complete(
    cluster_kubectl: Kubectl,
) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "03-kueue-integration.yaml"))
    cluster_kubectl("wait", "--for=condition=Suspended", "trainjob/kueue-example",
                    "--timeout=60s", timeout=90)
    header, row = cluster_kubectl("get", "trainjob", "kueue-example").stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "AGE"]
    assert row.split()[:2] == ["kueue-example", "Suspended"]
    jobset = cluster_kubectl.get_json("jobset", "kueue-example")
    assert jobset["spec"]["suspend"] is True
    assert jobset["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"

    # Kueue admits a workload by setting suspend to false.
    cluster_kubectl("patch", "trainjob", "kueue-example", "--type=merge",
                    "-p", json.dumps({"spec": {"suspend": False}}))
    cluster_kubectl("wait", "--for=condition=Complete", "trainjob/kueue-example",
                    "--timeout=240s", timeout=270)

    trainjob = cluster_kubectl.get_json("trainjob", "kueue-example")
    states = {c["type"]: (c["status"], c["reason"], c["message"])
              for c in trainjob["status"]["conditions"]}
    assert states == {
        "Suspended": ("False", "Resumed", "TrainJob is resumed"),
        "Complete": ("True", "AllJobsCompleted", "jobset completed successfully"),
    }
    assert trainjob["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}]
    _, row = cluster_kubectl("get", "trainjob", "kueue-example").stdout.splitlines()
    assert row.split()[:2] == ["kueue-example", "Complete"]
    logs = cluster_kubectl("logs", "-l", "jobset.sigs.k8s.io/jobset-name=kueue-example",
                           "--tail=1").stdout.split("\n")
    assert [line for line in logs if line] == ["Training complete"] * 3
    cluster_kubectl("delete", "trainjob", "kueue-example", "--timeout=60s", timeout=90)
    cluster_kubectl("wait", "--for=delete", "jobset/kueue-example", "--timeout=60s",
                    timeout=90)


def test_the_multi_node_example_gives_its_pods_torchruns_variables(
    cluster_kubectl: Kubectl,
) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "01-multi-node.yaml"))
    cluster_kubectl("wait", "--for=create", "job/multi-node-example-node-0", "--timeout=60s",
                    timeout=90)

    # The pods may be gone by now (torchrun may not be on this machine): their template is
    # the Job's, made from the JobSet's replicated job.
    job = cluster_kubectl.get_json("job", "multi-node-example-node-0")
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (3, 3)
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "multi-node-example"
    (node,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in node["env"]}
    assert env["PET_NNODES"] == "3"
    assert env["PET_NPROC_PER_NODE"] == "1"  # no GPU, no CPU request: one process
    assert env["PET_MASTER_ADDR"] == "multi-node-example-node-0-0.multi-node-example"
    assert env["PET_MASTER_PORT"] == "29500"
    assert env["PET_NODE_RANK"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']")
    assert node["command"][:3] == ["torchrun", "--no-python", "python3"]
    assert node["ports"][0]["containerPort"] == 29500
    cluster_kubectl("delete", "trainjob", "multi-node-example", "--timeout=60s", timeout=90)
    cluster_kubectl("wait", "--for=delete", "jobset/multi-node-example", "--timeout=60s",
                    timeout=90)
