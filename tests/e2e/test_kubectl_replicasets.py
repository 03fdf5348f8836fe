"""The real kubectl against `jobmachine up` (process mode) with ReplicaSets the engine runs
(machines/replicaset.yaml): `kubectl create -f` makes its pods, `kubectl scale rs` adds and
removes them, `kubectl get rs` prints upstream's DESIRED, CURRENT and READY, and a deleted
pod is replaced."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

REPLICA_SET = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: sleepers
spec:
  replicas: 2
  selector:
    matchLabels: {app: sleepers}
  template:
    metadata:
      labels: {app: sleepers}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: sleep
        image: busybox
        command: [sleep, "3600"]
        readinessProbe:
          exec: {command: ["true"]}
          periodSeconds: 1
"""


def rs_row(kubectl: Kubectl) -> list[str]:
    header, row = kubectl("get", "rs", "sleepers").stdout.splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    return row.split()[:4]


def wait_for_row(kubectl: Kubectl, wanted: list[str], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while rs_row(kubectl) != wanted:
        assert time.monotonic() < deadline, f"kubectl get rs shows {rs_row(kubectl)}"
        time.sleep(0.5)


def pod_names(kubectl: Kubectl) -> list[str]:
    return sorted(kubectl("get", "pods", "-l", "app=sleepers", "-o",
                          "jsonpath={.items[*].metadata.name}").stdout.split())


def test_create_scale_and_replace_with_kubectl(cluster_kubectl: Kubectl) -> None:
    kubectl = cluster_kubectl
    out = kubectl("create", "-f", "-", stdin=REPLICA_SET).stdout
    assert out.strip() == "replicaset.apps/sleepers created"
    wait_for_row(kubectl, ["sleepers", "2", "2", "2"])
    available = kubectl("get", "rs", "sleepers", "-o",
                        "jsonpath={.status.availableReplicas}").stdout
    assert available == "2"
    first = pod_names(kubectl)
    assert len(first) == 2 and all(n.startswith("sleepers-") and len(n) == 14 for n in first)

    kubectl("scale", "rs", "sleepers", "--replicas=3")
    wait_for_row(kubectl, ["sleepers", "3", "3", "3"])
    three = pod_names(kubectl)
    assert set(first) < set(three)
    kubectl("scale", "rs", "sleepers", "--replicas=1")
    wait_for_row(kubectl, ["sleepers", "1", "1", "1"])
    kubectl("wait", "--for=delete", "pod", "-l", "app=sleepers,jobmachine.dev/replica-index!=0",
            "--timeout=60s", timeout=90)
    # Which one stays is upstream's rank (LogarithmicScaleDown): ready times in one
    # power-of-two bucket of age tie and the uid decides, so on a loaded machine the newest
    # may stay; tests/unit/controller/test_interchangeable_pods.py pins the order.
    (kept,) = pod_names(kubectl)
    assert kept in three

    kubectl("delete", "pod", kept, "--timeout=60s", timeout=90)
    wait_for_row(kubectl, ["sleepers", "1", "1", "1"])
    assert kept not in pod_names(kubectl)
    reasons = kubectl("get", "events", "--field-selector", "involvedObject.name=sleepers",
                      "-o", "jsonpath={range .items[*]}{.reason}{' '}{end}").stdout.split()
    assert reasons.count("SuccessfulCreate") == 4 and reasons.count("SuccessfulDelete") == 2
    kubectl("delete", "rs", "sleepers", "--timeout=60s", timeout=90)
    kubectl("wait", "--for=delete", "pod", "-l", "app=sleepers", "--timeout=60s", timeout=90)
