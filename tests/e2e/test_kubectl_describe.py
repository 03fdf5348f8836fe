"""kubectl describe, including the events recorded about the object."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import pod

pytestmark = pytest.mark.e2e


def _event(namespace: str, name: str, uid: str, reason: str, message: str) -> str:
    return f"""
apiVersion: v1
kind: Event
metadata:
  name: {name}.{reason.lower()}
type: Warning
reason: {reason}
message: {message}
involvedObject:
  apiVersion: v1
  kind: Pod
  name: {name}
  namespace: {namespace}
  uid: {uid}
source:
  component: jobmachine
firstTimestamp: "2025-01-01T00:00:00Z"
lastTimestamp: "2025-01-01T00:00:00Z"
count: 2
"""


def test_describe_pod_shows_its_events(kubectl: Kubectl) -> None:
    kubectl.apply(pod("described"))
    uid = kubectl.get_json("pod", "described")["metadata"]["uid"]
    kubectl(
        "create",
        "-f",
        "-",
        stdin=_event(kubectl.namespace, "described", uid, "BackOff", "restarting"),
    )
    out = kubectl("describe", "pod", "described").stdout
    assert "Name:" in out and "described" in out
    assert kubectl.namespace in out
    events = out.split("Events:", 1)[1]
    assert "Warning" in events
    assert "BackOff" in events
    assert "jobmachine" in events
    assert "restarting" in events


def test_describe_without_events_says_none(kubectl: Kubectl) -> None:
    kubectl.apply(pod("quiet"))
    out = kubectl("describe", "pod", "quiet").stdout
    assert "Events:" in out
    assert out.split("Events:", 1)[1].strip() == "<none>"


def test_events_of_one_pod_are_not_shown_for_another(kubectl: Kubectl) -> None:
    kubectl.apply(pod("noisy"))
    kubectl.apply(pod("calm"))
    uid = kubectl.get_json("pod", "noisy")["metadata"]["uid"]
    kubectl("create", "-f", "-", stdin=_event(kubectl.namespace, "noisy", uid, "Failed", "boom"))
    calm = kubectl("describe", "pod", "calm").stdout
    assert "boom" not in calm
