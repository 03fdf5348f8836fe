"""What the local node runs for Kubeflow's kubectl-delivery image (images.py): an MPIJob
Launcher's init container that puts kubectl where the Launcher's kubexec.sh finds it, then
waits until every pod of the hostfile runs, so that `kubectl exec` into them can work. A
pod that has already ended (Succeeded or Failed) can never run again: it is reported and not
waited for (the real image would wait for ever), so the Launcher starts and fails to reach
it, and the job ends, instead of hanging in Init.

Run as `python -m engine.cluster.node.runtime.kubectl_delivery` inside the pod. kubectl is "copied"
as a link to the resolved `kubectl` on PATH (the pod shares this machine's files); the pods
are read with the pod's own in-cluster credentials (the `kubernetes` Service variables and
the kube-api-access volume), as the real image does with client-go, through `KubeClient`
built from the address, token and CA alone: this short-lived process never imports the
`kubernetes` package, whose import alone costs most of a second.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.cluster.apiserver.admission.service_account_admission import TOKEN_MOUNT_PATH
from engine.cluster.node.server_client import node_client
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import PODS

SERVICE_ACCOUNT_DIR = Path(TOKEN_MOUNT_PATH)
HOSTFILE = Path("/etc/mpi/hostfile")
DEFAULT_TARGET_DIR = "/opt/kube"
POLL_S = 0.5
ENDED = ("Succeeded", "Failed")


class DeliveryError(Exception):
    """kubectl-delivery cannot do its work; the message says why."""


def deliver_kubectl(target_dir: Path, *, path: str | None) -> Path:
    """Link `target_dir`/kubectl to the kubectl found on `path` (links resolved)."""
    found = shutil.which("kubectl", path=path)
    if found is None:
        raise DeliveryError("no kubectl on PATH: the local node delivers the machine's own "
                            "kubectl, so install one where the node's PATH finds it")
    target_dir.mkdir(parents=True, exist_ok=True)
    link = target_dir / "kubectl"
    link.unlink(missing_ok=True)
    link.symlink_to(Path(found).resolve())
    return link


def hostfile_pods(text: str, *, itself: str) -> list[str]:
    """The pod names of a hostfile (the first word of each line), without this pod."""
    names = [line.split()[0] for line in text.splitlines() if line.strip()]
    return [name for name in dict.fromkeys(names) if name != itself]


def in_cluster_api(environ: dict[str, str], account_dir: Path = SERVICE_ACCOUNT_DIR
                   ) -> KubeClient:
    """A client with the pod's credentials, found as client-go's in-cluster config finds
    them."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token = account_dir / "token"
    if not host or not port or not token.is_file():
        raise DeliveryError("no in-cluster config: KUBERNETES_SERVICE_HOST and "
                            f"KUBERNETES_SERVICE_PORT must be set and {token} must exist")
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    ca = account_dir / "ca.crt"
    return node_client(f"https://{address}", token=token.read_text().strip(),
                       ca_file=ca if ca.is_file() else None)


def pod_namespace(environ: dict[str, str], account_dir: Path = SERVICE_ACCOUNT_DIR) -> str:
    if environ.get("NAMESPACE"):
        return environ["NAMESPACE"]
    namespace = account_dir / "namespace"
    return namespace.read_text().strip() if namespace.is_file() else "default"


def wait_running(read_phase: Callable[[str], str], names: Sequence[str], *,
                 say: Callable[[str], None], sleep: Callable[[float], None] = time.sleep
                 ) -> None:
    """Return once every pod of `names` has been seen Running or has ended, saying what it
    waits for."""
    waiting = list(names)
    said: dict[str, str] = {}
    while waiting:
        for name in list(waiting):
            phase = read_phase(name)
            if phase == "Running":
                waiting.remove(name)
                say(f"pod {name} is Running")
            elif phase in ENDED:
                waiting.remove(name)
                say(f"pod {name} has ended ({phase}) and will not run again: not waiting for it")
            elif said.get(name) != phase:
                said[name] = phase
                say(f"waiting for pod {name} to be Running (now {phase})")
        if waiting:
            sleep(POLL_S)


def _phase_reader(api: KubeClient, namespace: str) -> Callable[[str], str]:
    def phase(name: str) -> str:
        try:
            return str((api.get(PODS, name, namespace).get("status") or {}).get("phase")
                       or "Pending")
        except NotFound:
            return "not found"
        except ApiError as exc:
            return f"unreadable: {exc}"
    return phase


def main(environ: dict[str, str] | None = None) -> int:
    env = dict(os.environ if environ is None else environ)

    def say(message: str) -> None:
        print(f"kubectl-delivery: {message}", flush=True)

    try:
        link = deliver_kubectl(Path(env.get("TARGET_DIR") or DEFAULT_TARGET_DIR),
                               path=env.get("PATH"))
        say(f"{link} -> {os.readlink(link)}")
        if not HOSTFILE.is_file():
            raise DeliveryError(f"no hostfile at {HOSTFILE} (the MPIJob's ConfigMap mounts it)")
        names = hostfile_pods(HOSTFILE.read_text(), itself=env.get("HOSTNAME", ""))
        api = in_cluster_api(env)
        try:
            wait_running(_phase_reader(api, pod_namespace(env)), names, say=say)
        finally:
            api.close()
    except (DeliveryError, OSError) as exc:
        say(f"error: {exc}")
        return 1
    say("every pod of the hostfile is Running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
