"""A ReplicaSet whose pod creates the API server refuses, as a real kube-apiserver answers
(a ResourceQuota): upstream's FailedCreate event and ReplicaFailure condition, slow start
stopping after the refused batch, and the condition gone once creates go through."""
# ruff: noqa: F811 (the tests' parameters name the fixtures imported from refusal_fixtures)

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from tests.integration.engine.helpers import (
    EngineRun,
    new_namespace,
    reconciles_of,
    wait_for,
)
from tests.integration.engine.refusal_fixtures import (  # noqa: F401 (fixtures, used by name)
    admin,
    engine,
    refusals,
    server,
)
from tests.integration.engine.test_replicasets import replicaset
from tests.integration.refusing import Refusals, forbidden

REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
QUOTA = "exceeded quota: tiny, requested: pods=1, used: pods=1, limited: pods=1"


def quota_exceeded(info: RequestInfo, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """kube-apiserver's ResourceQuota refusal of a pod named by generateName."""
    return forbidden("pods", body["metadata"].get("generateName", ""), QUOTA)


def failure_condition(admin: KubeClient, ns: str) -> dict[str, Any] | None:
    status = admin.get(REPLICASETS, "capped", ns).get("status") or {}
    return next((c for c in status.get("conditions") or () if c["type"] == "ReplicaFailure"),
                None)


def test_a_refused_create_sets_replica_failure_until_creates_go_through(
    admin: KubeClient, engine: EngineRun, refusals: Refusals
) -> None:
    ns = new_namespace(admin)
    admin.create(REPLICASETS, replicaset("capped", 1), ns)
    wait_for(lambda: admin.get(REPLICASETS, "capped", ns).get("status") or {},
             lambda s: s.get("readyReplicas") == 1, what="one pod ready")
    refusals.refuse("create", "pods", ns, quota_exceeded)
    passes_before = reconciles_of(engine)
    admin.patch(REPLICASETS, "capped", {"spec": {"replicas": 4}}, namespace=ns)

    found = wait_for(lambda: failure_condition(admin, ns), lambda c: c is not None,
                     what="the ReplicaFailure condition")
    assert found is not None
    assert (found["status"], found["reason"], found["message"]) == (
        "True", "FailedCreate", f'pods "capped-" is forbidden: {QUOTA}')
    assert set(found) == {"type", "status", "lastTransitionTime", "reason", "message"}
    events = [e for e in admin.list(EVENTS, ns)[0] if e["reason"] == "FailedCreate"]
    assert events and events[0]["type"] == "Warning"
    assert events[0]["message"] == f'Error creating: pods "capped-" is forbidden: {QUOTA}'
    # A pass stops after its refused slow-start batch (the first: one pod), so there are no
    # more refused creates than passes, the one under way included.
    refused, done = refusals.count("create", "pods", ns), reconciles_of(engine)
    assert 0 < refused <= done - passes_before + 1

    refusals.allow("create", "pods", ns)
    wait_for(lambda: admin.get(REPLICASETS, "capped", ns).get("status") or {},
             lambda s: s.get("readyReplicas") == 4 and not any(
                 c["type"] == "ReplicaFailure" for c in s.get("conditions") or ()),
             what="four pods and no ReplicaFailure once creates go through")
