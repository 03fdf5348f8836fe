"""The real kubectl against `jobmachine up` (process mode) with a Deployment the engine rolls
out (machines/deployment.yaml over machines/replicaset.yaml): issue 34's "Done when".

`kubectl create deployment --replicas=3` makes a ReplicaSet named by its template's hash
and three pods; `kubectl rollout status` reports success; `kubectl set image` rolls out a
second ReplicaSet within the defaults (maxSurge 25% of 3 rounds up to 1, maxUnavailable
25% rounds down to 0: never more than 4 pods wanted, never fewer than 3 available);
`kubectl rollout undo` goes back to the first ReplicaSet, whose revision becomes 3;
`kubectl rollout history` lists the revisions; `kubectl scale` resizes the new ReplicaSet.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e


def replica_sets(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    found = kubectl.get_json("rs", "-l", "app=web")["items"]
    return {rs["metadata"]["name"]: rs for rs in found}


def rollout_status(kubectl: Kubectl) -> str:
    return kubectl("rollout", "status", "deployment/web", "--timeout=120s",
                   timeout=150).stdout


class Bounds:
    """Watches, while a rollout runs, every ReplicaSet's wanted pods and the Deployment's
    available pods (`kubectl get --watch`: every change, not samples)."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl
        self.most_wanted = 0
        self.least_available = 1 << 30

    def __enter__(self) -> Bounds:
        self._sets = self.kubectl.popen(
            "get", "rs", "-l", "app=web", "--watch", "-o",
            "jsonpath={.metadata.name} {.spec.replicas}{'\\n'}")
        self._deployment = self.kubectl.popen(
            "get", "deployment", "web", "--watch", "-o",
            "jsonpath={.status.availableReplicas}{'\\n'}")
        time.sleep(1.0)  # both watches have listed
        return self

    def __exit__(self, *_: object) -> None:
        wanted: dict[str, int] = {}
        for process, lines in ((self._sets, "sets"), (self._deployment, "available")):
            process.terminate()
            out, _ = process.communicate(timeout=30)
            for line in out.splitlines():
                if not line.strip():
                    continue
                if lines == "sets":
                    name, replicas = line.split()
                    wanted[name] = int(replicas)
                    self.most_wanted = max(self.most_wanted, sum(wanted.values()))
                else:
                    self.least_available = min(self.least_available, int(line))


def wait_for_change_cause(kubectl: Kubectl, name: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while "kubernetes.io/change-cause" not in replica_sets(kubectl)[name]["metadata"].get(
            "annotations", {}):
        assert time.monotonic() < deadline, f"{name} never got the change-cause"
        time.sleep(0.5)


def test_create_roll_out_undo_and_scale_with_kubectl(cluster_kubectl: Kubectl) -> None:
    kubectl = cluster_kubectl
    kubectl("create", "deployment", "web", "--image=busybox:1.36", "--replicas=3", "--",
            "sleep", "3600")
    assert 'deployment "web" successfully rolled out' in rollout_status(kubectl)
    (first,) = replica_sets(kubectl).values()
    digest = first["metadata"]["labels"]["pod-template-hash"]
    assert first["metadata"]["name"] == f"web-{digest}"
    assert first["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": digest}
    assert first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)
    header, row = kubectl("get", "deploy", "web").stdout.splitlines()
    assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row.split()[:4] == ["web", "3/3", "3", "3"]
    conditions = {c["type"]: c for c in kubectl.get_json("deployment", "web")["status"]
                  ["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"

    with Bounds(kubectl) as bounds:
        kubectl("set", "image", "deployment/web", "busybox=busybox:1.37")
        assert 'deployment "web" successfully rolled out' in rollout_status(kubectl)
    assert bounds.most_wanted == 4 and bounds.least_available == 3
    sets = replica_sets(kubectl)
    assert len(sets) == 2
    second = next(rs for rs in sets.values() if rs["metadata"]["name"] != first["metadata"]["name"])
    assert second["spec"]["replicas"] == 3
    assert sets[first["metadata"]["name"]]["spec"]["replicas"] == 0
    assert second["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    images = kubectl("get", "pods", "-l", f"pod-template-hash="
                     f"{second['metadata']['labels']['pod-template-hash']}",
                     "-o", "jsonpath={.items[*].spec.containers[0].image}").stdout.split()
    assert images == ["busybox:1.37"] * 3
    events = kubectl("get", "events", "--field-selector", "involvedObject.name=web", "-o",
                     "jsonpath={range .items[*]}{.reason}: {.message}{'\\n'}{end}").stdout
    assert (f"ScalingReplicaSet: Scaled up replica set {second['metadata']['name']} from 0 to 1"
            in events)
    assert (f"ScalingReplicaSet: Scaled down replica set {first['metadata']['name']} from 3 to 2"
            in events)

    # The Deployment's annotations are copied to its new ReplicaSet, so a change-cause
    # written after the change names the revision it caused (as upstream's).
    kubectl("annotate", "deployment", "web", "kubernetes.io/change-cause=busybox 1.37")
    wait_for_change_cause(kubectl, second["metadata"]["name"])
    history = kubectl("rollout", "history", "deployment/web").stdout
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert rows == [["1", "<none>"], ["2", "busybox 1.37"]]  # the Deployment's change-cause
    kubectl("rollout", "undo", "deployment/web")
    assert 'deployment "web" successfully rolled out' in rollout_status(kubectl)
    sets = replica_sets(kubectl)
    back = sets[first["metadata"]["name"]]
    assert back["spec"]["replicas"] == 3
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert sets[second["metadata"]["name"]]["spec"]["replicas"] == 0

    kubectl("scale", "deployment", "web", "--replicas=5")
    assert 'deployment "web" successfully rolled out' in rollout_status(kubectl)
    assert replica_sets(kubectl)[first["metadata"]["name"]]["spec"]["replicas"] == 5
    _, row = kubectl("get", "deploy", "web").stdout.splitlines()
    assert row.split()[:4] == ["web", "5/5", "5", "5"]


def pod_hashes(kubectl: Kubectl) -> list[str]:
    """The pod-template-hash of every pod of the Deployment, being deleted or not."""
    pods = kubectl.get_json("pods", "-l", "app=web")["items"]
    return [p["metadata"]["labels"].get("pod-template-hash", "") for p in pods]


def test_recreate_starts_new_pods_only_once_every_old_one_is_gone(
    cluster_kubectl: Kubectl,
) -> None:
    kubectl = cluster_kubectl
    kubectl("create", "deployment", "web", "--image=busybox:1.36", "--replicas=2", "--",
            "sleep", "3600")
    kubectl("patch", "deployment", "web", "-p",
            '{"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}')
    assert 'deployment "web" successfully rolled out' in rollout_status(kubectl)
    old_hash = pod_hashes(kubectl)[0]
    kubectl("set", "image", "deployment/web", "busybox=busybox:1.37")
    samples = [pod_hashes(kubectl)]
    deadline = time.monotonic() + 120
    while len([h for h in samples[-1] if h != old_hash]) < 2 or old_hash in samples[-1]:
        assert time.monotonic() < deadline, f"no rollout: {samples[-1]}"
        samples.append(pod_hashes(kubectl))
    hashes_at_once = max(len(set(sample)) for sample in samples)
    assert hashes_at_once == 1
