"""What a TrainJob on an MPI runtime is made of (machines/trainjob.yaml), as Trainer v2.3's MPI
plugin builds it: the node and launcher jobs' pod counts, the SSH Secret's and hostfile's
volumes and mounts, OpenMPI's variables on the launcher, the hostfile ConfigMap's text, the
Secret made once with a new key pair, and what the plugin's webhook refuses."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from engine.definition import RenderedObject
from engine.definition.rendering import render_objects
from tests.kinds import REPO, shipped_definitions
from tests.scenarios.test_trainjob_runtime_scenarios import (
    INVALID,
    container,
    jobset,
    pod_spec,
    refusal,
    variables,
)

RUNTIMES = {d["metadata"]["name"]: d for d in yaml.safe_load_all(
    (REPO / "manifests" / "trainer-runtimes.yaml").read_text())}
DEEPSPEED = RUNTIMES["deepspeed-distributed"]
SSH_VOLUME = {"name": "mpi-ssh-auth", "secret": {
    "secretName": "tj-mpi-ssh-auth", "defaultMode": 0o400,
    "items": [{"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
              {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
              {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644}]}}
HOSTFILE_VOLUME = {"name": "mpi-hostfile", "configMap": {
    "name": "tj-mpi-hostfile", "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}]}}
OPENMPI = [{"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
           {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
           {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
           {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"}]


def trainjob(**trainer: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "ml", "uid": "u"},
            "spec": {"runtimeRef": {"name": "deepspeed-distributed"}, "trainer": trainer}}


def with_mpi(rt: dict[str, Any], **mpi: Any) -> dict[str, Any]:
    changed = copy.deepcopy(rt)
    changed["spec"]["mlPolicy"]["mpi"].update(mpi)
    return changed


def objects(job: dict[str, Any], rt: dict[str, Any]) -> dict[str, RenderedObject]:
    wanted, _ = render_objects(shipped_definitions()["TrainJob"], variables(job, rt))
    return {o.name: o for o in wanted}


def counts(spec: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {j["name"]: (j["replicas"], j["template"]["spec"]["parallelism"],
                        j["template"]["spec"]["completions"]) for j in spec["replicatedJobs"]}


def test_deepspeed_runs_the_launcher_as_a_node_with_the_ssh_keys_and_openmpis_variables() -> None:
    job = trainjob(numNodes=3, image="img", command=["mpirun", "train"],
                   env=[{"name": "A", "value": "1"}],
                   resourcesPerNode={"limits": {"cpu": "2"}})
    spec, _ = jobset(job, DEEPSPEED)

    # runLauncherAsNode: the launcher is one of the 3 nodes, the node job has the other 2.
    assert counts(spec) == {"node": (1, 2, 2), "launcher": (1, 1, 1)}
    assert pod_spec(spec, "node")["volumes"] == [SSH_VOLUME]
    assert pod_spec(spec, "launcher")["volumes"] == [SSH_VOLUME, HOSTFILE_VOLUME]
    node, launcher = container(spec, "node", "node"), container(spec, "launcher", "node")
    assert node["volumeMounts"] == [{"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}]
    assert launcher["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"}]
    # OpenMPI's variables first, then the TrainJob's (Trainer's builder upserts them last).
    assert launcher["env"] == [*OPENMPI, {"name": "A", "value": "1"}]
    assert (launcher["image"], launcher["command"]) == ("img", ["mpirun", "train"])
    assert launcher["resources"] == {"limits": {"cpu": "2"}}
    assert "ports" not in launcher
    # The node job runs sshd as the runtime says, with the TrainJob's env and resources.
    assert node["command"] == ["/usr/sbin/sshd"]
    assert node["image"] == "ghcr.io/kubeflow/trainer/deepspeed-runtime:v2.3.0"
    assert node["env"] == [{"name": "A", "value": "1"}]
    assert node["resources"] == {"limits": {"cpu": "2"}}
    assert spec["replicatedJobs"][1]["dependsOn"] == [{"name": "node", "status": "Ready"}]

    hostfile = objects(job, DEEPSPEED)["mpi-hostfile"]
    assert (hostfile.kind, hostfile.suffix) == ("ConfigMap", "mpi-hostfile")
    assert hostfile.fields == {"data": {"hostfile": (
        "tj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\ntj-launcher-0-0.tj slots=1\n")}}


def test_without_runlauncherasnode_the_nodes_are_numnodes_and_the_launcher_is_no_host() -> None:
    rt = with_mpi(DEEPSPEED, runLauncherAsNode=False, sshAuthMountPath="/root/.ssh")
    job = trainjob(numNodes=2, numProcPerNode=4, env=[{"name": "A", "value": "1"}])
    spec, _ = jobset(job, rt)

    assert counts(spec) == {"node": (1, 2, 2), "launcher": (1, 1, 1)}
    node, launcher = container(spec, "node", "node"), container(spec, "launcher", "node")
    assert "env" not in node  # the TrainJob's env is the launcher's only
    assert node["volumeMounts"] == [{"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}]
    assert {"name": "OMPI_MCA_orte_set_default_slots", "value": "4"} in launcher["env"]
    assert objects(job, rt)["mpi-hostfile"].fields["data"]["hostfile"] == (
        "tj-node-0-0.tj slots=4\ntj-node-0-1.tj slots=4\n")


def test_the_slots_are_the_gpus_per_node_when_the_runtime_says_one() -> None:
    job = trainjob(numNodes=2, resourcesPerNode={"limits": {"nvidia.com/gpu": 8}})
    spec, _ = jobset(job, DEEPSPEED)
    assert {"name": "OMPI_MCA_orte_set_default_slots", "value": "8"} in container(
        spec, "launcher", "node")["env"]
    assert objects(job, DEEPSPEED)["mpi-hostfile"].fields["data"]["hostfile"] == (
        "tj-node-0-0.tj slots=8\ntj-launcher-0-0.tj slots=8\n")
    # One GPU keeps the runtime's slots.
    one = trainjob(numNodes=2, resourcesPerNode={"limits": {"nvidia.com/gpu": 1}})
    assert "slots=1\n" in objects(one, DEEPSPEED)["mpi-hostfile"].fields["data"]["hostfile"]


def test_the_ssh_secret_holds_a_new_key_pair_and_is_made_once() -> None:
    definition = shipped_definitions()["TrainJob"]
    (secret,) = [o for o in definition.objects if o.kind == "Secret"]
    assert (secret.name, secret.update) == ("mpi-ssh-auth", "Never")

    made = objects(trainjob(numNodes=2), DEEPSPEED)["mpi-ssh-auth"]
    assert made.fields["type"] == "kubernetes.io/ssh-auth"
    assert made.fields["immutable"] is True
    data = {k: base64.b64decode(v) for k, v in made.fields["data"].items()}
    assert sorted(data) == ["ssh-privatekey", "ssh-publickey"]
    key = serialization.load_pem_private_key(data["ssh-privatekey"], password=None)
    public = serialization.load_ssh_public_key(data["ssh-publickey"].strip())
    assert public.public_numbers() == key.public_key().public_numbers()  # type: ignore[union-attr]
    again = objects(trainjob(numNodes=2), DEEPSPEED)["mpi-ssh-auth"]
    assert again.fields["data"] != made.fields["data"]


def test_a_torch_runtime_gets_no_mpi_objects() -> None:
    assert objects(trainjob(numNodes=2), RUNTIMES["torch-distributed"]) == {}


MPI_REFUSALS = [
    ("OpenMPI's variables in the trainer's env",
     trainjob(env=[{"name": "OMPI_MCA_plm_rsh_args", "value": "x"}, {"name": "A", "value": "1"},
                   {"name": "OMPI_MCA_orte_default_hostfile", "value": "y"}]),
     DEEPSPEED,
     "spec.trainer.env: Invalid value: [...]: must not have reserved envs, invalid envs "
     "configured: [OMPI_MCA_orte_default_hostfile OMPI_MCA_plm_rsh_args]"),
    ("more than one node on a launcher-as-node runtime without a node job",
     trainjob(numNodes=2),
     {**DEEPSPEED, "spec": {**DEEPSPEED["spec"], "template": {"spec": {
         **DEEPSPEED["spec"]["template"]["spec"],
         "replicatedJobs": DEEPSPEED["spec"]["template"]["spec"]["replicatedJobs"][1:]}}}},
     "spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with "
     "enabled runLauncherAsNode does not have either launcher and node"),
]


@pytest.mark.parametrize(("says", "job", "rt", "message"), MPI_REFUSALS,
                         ids=[r[0] for r in MPI_REFUSALS])
def test_what_the_mpi_plugins_webhook_refuses_fails_the_trainjob_in_its_words(
    says: str, job: dict[str, Any], rt: dict[str, Any], message: str
) -> None:
    job["spec"]["runtimeRef"] = {"name": "rt", "apiGroup": "trainer.kubeflow.org",
                                 "kind": "ClusterTrainingRuntime"}
    assert refusal(job, rt) == ("Failed", INVALID + message)


def test_a_valid_mpi_trainjob_is_not_refused() -> None:
    assert refusal(trainjob(numNodes=3), DEEPSPEED) == ("Running", "")


def test_an_mpi_implementation_other_than_openmpi_makes_no_jobset_and_says_why() -> None:
    from tests.scenarios.test_trainjob_guard_scenarios import decide_trainjob

    decision = decide_trainjob(with_mpi(DEEPSPEED, mpiImplementation=""), None)
    events = [p.action.args for p in decision.actions if p.action.name == "event"]
    assert [(e["reason"], e["message"]) for e in events] == [(
        "TrainJobResourcesCreationFailed",
        'TrainJob resources reconciliation failed: the runtime torch has '
        'mlPolicy.mpi.mpiImplementation "", which jobmachine\'s TrainJob machine does not '
        'run yet (docs/trainer.md)')]
    # The shipped runtime (OpenMPI) is usable: no event.
    assert [p.action.name for p in decide_trainjob(DEEPSPEED, None).actions] == []
