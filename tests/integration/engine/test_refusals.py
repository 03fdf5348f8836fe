"""Refusals as a real kube-apiserver answers them: Pod Security, ResourceQuota and a namespace
being deleted refuse the engine's pod creates with 403, and none of them is missing RBAC.

The embedded server answers those creates with the Status bodies a real server sent
(tests/integration/refusing.py); the engine must say which policy refused, on the job's
events and conditions, retry until the refusal is lifted, and say nothing at all about a
namespace being deleted.
"""
# ruff: noqa: F811 (the tests' parameters name the fixtures imported from refusal_fixtures)

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from loguru import logger

from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    EngineRun,
    Obj,
    Replica,
    condition,
    get_job,
    job_events,
    new_namespace,
    pod_names,
    pytorchjob,
    wait_for,
    wait_until,
)
from tests.integration.engine.machinejobs import machinejob
from tests.integration.engine.refusal_fixtures import (  # noqa: F401 (fixtures, used by name)
    admin,
    engine,
    refusals,
    server,
)
from tests.integration.refusing import (
    Refusals,
    namespace_terminating,
    pod_security,
    quota_exceeded,
)
from tests.kinds import MACHINEJOBS

RBAC_ADVICE = "grant the engine's service account"


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    """What the engine logs at WARNING and above during the test."""
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="WARNING",
                      format="{level} {message}")
    yield lines
    logger.remove(sink)


def _refused_job(admin: KubeClient, namespace: str, name: str) -> Obj:
    job = pytorchjob(name, namespace, master=Replica(), workers=Replica())
    created: Obj = admin.create(PYTORCHJOBS, job, namespace)
    return created


def _replica_failure(admin: KubeClient, namespace: str, name: str) -> Obj:
    job = wait_for(lambda: get_job(admin, namespace, name),
                   lambda j: j is not None and condition(j, "ReplicaFailure") is not None,
                   what="the ReplicaFailure condition")
    assert job is not None
    return job


def test_pod_security_names_the_policy_not_rbac_and_the_job_goes_on_once_allowed(
    admin: KubeClient, engine: EngineRun, refusals: Refusals, warnings: list[str]
) -> None:
    ns = new_namespace(admin)
    refusals.refuse("create", "pods", ns, pod_security)
    job = _refused_job(admin, ns, "secured")

    events = wait_for(lambda: job_events(admin, job),
                      lambda found: any(e["reason"] == "FailedCreatePod" for e in found),
                      what="a FailedCreatePod event")
    refused = next(e for e in events if e["reason"] == "FailedCreatePod")
    assert refused["type"] == "Warning"
    assert refused["message"].startswith('Error creating: pods "secured-')
    assert ('is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation '
            '!= false (container "pytorch"') in refused["message"]
    assert not [e for e in events if e["reason"] == "Forbidden" or RBAC_ADVICE in e["message"]]

    stored = _replica_failure(admin, ns, "secured")
    failure = condition(stored, "ReplicaFailure")
    assert failure is not None
    assert (failure["status"], failure["reason"]) == ("True", "PodSecurity")
    assert failure["message"].startswith('PodSecurity "restricted:latest" refused the engine: ')
    assert stored["status"]["conditions"][-1]["type"] != "ReplicaFailure", \
        "the last condition stays the job's state"
    assert not [line for line in warnings if RBAC_ADVICE in line]
    assert any('PodSecurity "restricted:latest" refused the engine' in line for line in warnings)

    refusals.allow("create", "pods", ns)
    wait_until(lambda: pod_names(admin, ns, "secured") == ["secured-master-0", "secured-worker-0"],
               what="both pods created once Pod Security lets them in", timeout=30)
    wait_for(lambda: get_job(admin, ns, "secured"),
             lambda j: j is not None and condition(j, "ReplicaFailure") is None,
             what="the ReplicaFailure condition gone once creates go through")


def test_a_quota_refusal_names_the_quota(
    admin: KubeClient, engine: EngineRun, refusals: Refusals, warnings: list[str]
) -> None:
    ns = new_namespace(admin)
    refusals.refuse("create", "pods", ns, quota_exceeded)
    _refused_job(admin, ns, "counted")

    failure = condition(_replica_failure(admin, ns, "counted"), "ReplicaFailure")
    assert failure is not None
    assert failure["reason"] == "ResourceQuota"
    assert failure["message"] == (
        'ResourceQuota "tiny" refused the engine: pods "counted-master-0" is forbidden: '
        "exceeded quota: tiny, requested: pods=1, used: pods=1, limited: pods=1")
    assert not [line for line in warnings if RBAC_ADVICE in line]
    refusals.allow("create", "pods", ns)


def test_a_namespace_being_deleted_is_neither_reported_nor_retried(
    admin: KubeClient, engine: EngineRun, refusals: Refusals, warnings: list[str]
) -> None:
    ns = new_namespace(admin)
    refusals.refuse("create", "pods", ns, namespace_terminating)
    refusals.refuse("create", "events", ns, namespace_terminating)
    # A MachineJob: its creation posts an Event (a Kubeflow job's, as Kubeflow's, posts none).
    admin.create(MACHINEJOBS, machinejob("leaving", ns, {"Worker": Replica()}), ns)

    wait_until(lambda: refusals.count("create", "pods", ns) > 0, what="a refused pod create")
    time.sleep(0.5)  # the passes the engine's own writes set off
    before = refusals.count("create", "pods", ns)
    time.sleep(3.0)
    # A retry with back-off (5 ms doubling) would have tried at ~0.6 s, 1.3 s and 2.6 s.
    assert refusals.count("create", "pods", ns) - before <= 1
    stored = get_job(admin, ns, "leaving", kind=MACHINEJOBS)
    assert stored is not None and condition(stored, "ReplicaFailure") is None
    assert refusals.count("create", "events", ns) > 0, "the engine did try to post events"
    assert not [line for line in warnings if ns in line]
    refusals.allow("create", "pods", ns)
    refusals.allow("create", "events", ns)
