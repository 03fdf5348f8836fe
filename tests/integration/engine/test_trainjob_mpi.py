"""A TrainJob on an MPI runtime (machines/trainjob.yaml, Trainer v2.3's MPI plugin) on the
embedded cluster: the shipped deepspeed-distributed runtime's node pods, then its launcher,
run; the SSH Secret and the hostfile ConfigMap are made before them, owned by the TrainJob,
the Secret once, and both go with the TrainJob.

Pods are simulated (each runs 0.2 s and exits 0): nothing runs sshd or mpirun.
"""

from __future__ import annotations

import base64

from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import CONFIGMAPS, SECRETS
from tests.integration.engine.helpers import Obj, wait_for
from tests.integration.engine.test_trainjob_runtime_features import pods
from tests.integration.engine.test_trainjobs import (
    TRAINJOBS,
    conditions,
    env_of,
    trainjob,
    wait_for_condition,
)


def owner(obj: Obj) -> tuple[str, str, bool]:
    (ref,) = obj["metadata"]["ownerReferences"]
    return ref["kind"], ref["name"], ref["controller"]


def test_a_deepspeed_trainjob_completes_with_its_ssh_secret_and_hostfile(
    client: KubeClient, ns: str
) -> None:
    made = client.create(TRAINJOBS, trainjob(
        "ds", ns, "deepspeed-distributed", numNodes=3, command=["mpirun", "train"]), ns)
    first = wait_for(lambda: client.list(SECRETS, ns)[0], lambda found: len(found) == 1,
                     what="the SSH Secret")[0]

    done = wait_for_condition(client, ns, "ds", "Complete")

    assert conditions(done)["Complete"]["reason"] == "AllJobsCompleted"
    secret = client.get(SECRETS, "ds-mpi-ssh-auth", ns)
    hostfile = client.get(CONFIGMAPS, "ds-mpi-hostfile", ns)
    for obj in (secret, hostfile):
        assert owner(obj) == ("TrainJob", "ds", True)
        assert obj["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    assert (secret["type"], secret["immutable"]) == ("kubernetes.io/ssh-auth", True)
    assert base64.b64decode(secret["data"]["ssh-privatekey"]).startswith(
        b"-----BEGIN EC PRIVATE KEY-----")
    assert hostfile["data"]["hostfile"] == (
        "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-launcher-0-0.ds slots=1\n")
    # Made once: not written again while the TrainJob ran (each pass renders a new pair).
    assert (secret["metadata"]["resourceVersion"], secret["data"]) == (
        first["metadata"]["resourceVersion"], first["data"])

    nodes, (launcher,) = pods(client, ns, "ds", "node"), pods(client, ns, "ds", "launcher")
    assert len(nodes) == 2
    assert env_of(launcher)["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert {v["name"]: v for v in launcher["spec"]["volumes"]}["mpi-ssh-auth"]["secret"][
        "secretName"] == "ds-mpi-ssh-auth"
    mounts = {m["name"]: m["mountPath"] for m in launcher["spec"]["containers"][0]["volumeMounts"]}
    assert (mounts["mpi-ssh-auth"], mounts["mpi-hostfile"]) == ("/home/mpiuser/.ssh", "/etc/mpi")

    client.delete(TRAINJOBS, "ds", ns)

    def gone(resource: object, name: str) -> bool:
        try:
            client.get(resource, name, ns)  # type: ignore[arg-type]
        except NotFound:
            return True
        return False

    wait_for(lambda: gone(SECRETS, "ds-mpi-ssh-auth") and gone(CONFIGMAPS, "ds-mpi-hostfile"),
             bool, what="the Secret and the ConfigMap deleted with the TrainJob")
