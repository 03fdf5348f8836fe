"""The real kubectl against `jobmachine up` (process mode) running Kubeflow Trainer's own
TrainJob examples unchanged (examples/trainer/, from kubeflow/trainer v2.3.0) on the shipped
torch-distributed runtime: a suspended TrainJob (the Kueue example) shows State Suspended
with its JobSet suspended, runs as Kueue would let it once resumed and ends Complete; the
multi-node example's pods get torchrun's PET_* variables; the runtime patches example's
patches reach its Job; the Volcano example makes one PodGroup; the multi-step example is
refused as Trainer's webhook refuses it; deleting a TrainJob deletes its JobSet (owner
references); an MPI TrainJob (deepspeed-distributed) gets its SSH Secret and hostfile
ConfigMap, which go with it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Kubectl
from tests.polling import eventually

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


def test_the_runtime_patches_example_reaches_the_jobs_pod_template(
    cluster_kubectl: Kubectl,
) -> None:
    """kubectl apply's strict validation takes the example (the CRD has the patch schema);
    its patches are on the JobSet and the Job's pod template; they cannot change while the
    TrainJob runs."""
    cluster_kubectl("create", "serviceaccount", "training-sa")
    cluster_kubectl("apply", "-f", str(EXAMPLES / "02-runtime-patches.yaml"))
    cluster_kubectl("wait", "--for=create", "job/runtime-patches-example-node-0",
                    "--timeout=60s", timeout=90)

    jobset = cluster_kubectl.get_json("jobset", "runtime-patches-example")
    labels, annotations = jobset["metadata"]["labels"], jobset["metadata"]["annotations"]
    assert (labels["team"], labels["cost-center"]) == ("ml-platform", "research")
    assert annotations["prometheus.io/port"] == "8080"
    pod = cluster_kubectl.get_json("job", "runtime-patches-example-node-0")["spec"][
        "template"]["spec"]
    assert pod["serviceAccountName"] == "training-sa"
    assert pod["nodeSelector"] == {"node-type": "training"}
    assert pod["tolerations"] == [{"key": "training-workload", "operator": "Equal",
                                   "value": "true", "effect": "NoSchedule"}]
    refused = cluster_kubectl.run("patch", "trainjob", "runtime-patches-example", "--type=json",
                                  "-p", '[{"op": "remove", "path": "/spec/runtimePatches"}]')
    assert refused.returncode == 1
    assert ("spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the "
            "TrainJob is suspended before or after the update") in refused.stderr
    cluster_kubectl("delete", "trainjob", "runtime-patches-example", "--timeout=60s", timeout=90)


def test_the_multi_step_example_is_refused_as_trainers_webhook_refuses_it(
    cluster_kubectl: Kubectl,
) -> None:
    """Upstream's example sets spec.initializer.dataset on a runtime whose
    dataset-initializer container mounts no `initializer` volume, which Trainer v2.3's
    webhook refuses (the JobSet plugin's Validate); here the TrainJob ends Failed so, and
    no JobSet is made."""
    cluster_kubectl("apply", "-f", str(EXAMPLES / "05-multi-step.yaml"))
    cluster_kubectl("wait", "--for=condition=Failed", "trainjob/multi-step-example",
                    "--timeout=60s", timeout=90)

    trainjob = cluster_kubectl.get_json("trainjob", "multi-step-example")
    (failed,) = trainjob["status"]["conditions"]
    assert (failed["reason"], failed["message"]) == ("FailedValidation", (
        'TrainJob.trainer.kubeflow.org "multi-step-example" is invalid: spec.runtimeRef: '
        'Invalid value: {"name":"torch-with-dataset-init","apiGroup":"trainer.kubeflow.org",'
        '"kind":"TrainingRuntime"}: must have volumeMount with name - initializer in '
        "container dataset-initializer of the dataset-initializer job"))
    assert cluster_kubectl.run("get", "jobset", "multi-step-example").returncode == 1
    cluster_kubectl("delete", "trainjob", "multi-step-example", "--timeout=60s", timeout=90)
    cluster_kubectl("delete", "trainingruntime", "torch-with-dataset-init", "--timeout=60s",
                    timeout=90)


def test_the_volcano_example_makes_one_podgroup_of_its_four_nodes(
    cluster_kubectl: Kubectl,
) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "04-volcano-integration.yaml"))
    try:
        cluster_kubectl("wait", "--for=create", "podgroups.scheduling.volcano.sh/volcano-example",
                        "--timeout=60s", timeout=90)
        cluster_kubectl("wait", "--for=create", "job/volcano-example-node-0", "--timeout=60s",
                        timeout=90)
        group = cluster_kubectl.get_json("podgroups.scheduling.volcano.sh", "volcano-example")
        assert group["spec"]["minMember"] == 4
        assert group["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
        template = cluster_kubectl.get_json("job", "volcano-example-node-0")["spec"]["template"]
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == (
            "volcano-example")
        cluster_kubectl("delete", "trainjob", "volcano-example", "--timeout=60s", timeout=90)
    finally:
        cluster_kubectl("delete", "clustertrainingruntime", "torch-distributed-volcano",
                        "--ignore-not-found", "--timeout=60s", timeout=90)


def test_an_mpi_trainjob_gets_its_ssh_secret_and_hostfile_which_go_with_it(
    cluster_kubectl: Kubectl,
) -> None:
    # Process mode runs no image, so the nodes' sshd is not expected to serve: only what the
    # TrainJob makes is looked at (docs/trainer.md, the runtimes table).
    cluster_kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "ds"},
        "spec": {"runtimeRef": {"name": "deepspeed-distributed"},
                 "trainer": {"numNodes": 2, "command": ["mpirun", "hostname"]}}}))
    eventually(lambda: all(cluster_kubectl.run("get", name).returncode == 0 for name in (
        "secret/ds-mpi-ssh-auth", "configmap/ds-mpi-hostfile")), timeout=60, interval=0.5)

    secret = cluster_kubectl.get_json("secret", "ds-mpi-ssh-auth")
    assert (secret["type"], secret["immutable"]) == ("kubernetes.io/ssh-auth", True)
    assert sorted(secret["data"]) == ["ssh-privatekey", "ssh-publickey"]
    hostfile = cluster_kubectl.get_json("configmap", "ds-mpi-hostfile")
    assert hostfile["data"] == {"hostfile": "ds-node-0-0.ds slots=1\nds-launcher-0-0.ds slots=1\n"}
    for made in (secret, hostfile):
        assert [(r["kind"], r["name"]) for r in made["metadata"]["ownerReferences"]] == [
            ("TrainJob", "ds")]

    cluster_kubectl("delete", "trainjob", "ds", "--timeout=60s", timeout=90)
    cluster_kubectl("wait", "--for=delete", "secret/ds-mpi-ssh-auth",
                    "configmap/ds-mpi-hostfile", "--timeout=60s", timeout=90)
