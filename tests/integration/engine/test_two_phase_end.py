"""Two-phase endings: FailureTarget / SuccessCriteriaMet first, Failed / Succeeded once settled.

The job says it has failed (or met its success criteria) at once, deletes what its
clean-pod policy says, and only when no pod of it is still terminating gets the terminal
condition, with the same reason and message, and its completionTime; the terminal
condition takes the first one's place, as in Kubeflow.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.app.up import LocalCluster
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    HOLD,
    PYTORCHJOBS,
    Replica,
    condition,
    get_pod,
    job_path,
    pod_names,
    pytorchjob,
    reconciles,
    settle,
    status,
    wait_for_phase,
    wait_for_replica,
    wait_until,
)

MASTER = "ends-master-0"


@pytest.fixture
def released(client: KubeClient, ns: str) -> Iterator[None]:
    """Whatever the test did, the master pod loses the HOLD finalizer at the end."""
    yield
    release(client, ns)


def release(client: KubeClient, ns: str) -> None:
    pod = get_pod(client, ns, MASTER)
    if pod is None:
        return
    kept = [f for f in pod["metadata"].get("finalizers") or [] if f != HOLD]
    try:
        client.patch(PODS, MASTER, {"metadata": {"finalizers": kept}}, namespace=ns)
    except NotFound:
        return


def test_failed_waits_until_the_pods_the_cleanup_deletes_are_gone(
    cluster: LocalCluster, client: KubeClient, ns: str, released: None
) -> None:
    """Worker-0 fails for good while the Master runs, cleanPodPolicy All: FailureTarget at
    once; while the Master's pod is held in deletion the job stays Failing; once it is gone,
    Failed with FailureTarget's reason and message, in FailureTarget's place."""
    job = pytorchjob("ends", ns, master=Replica(run_s=120),
                     workers=Replica(codes="1", policy="Never", run_s=2),
                     clean_pod_policy="All")
    client.create(PYTORCHJOBS, job, ns)
    wait_for_replica(client, ns, "ends", "Master-0", "Running")
    pod = get_pod(client, ns, MASTER)
    assert pod is not None
    client.patch(PODS, MASTER, {"metadata": {
        "finalizers": [*(pod["metadata"].get("finalizers") or []), HOLD]}}, namespace=ns)

    before = reconciles(cluster)
    failing = wait_for_phase(client, ns, "ends", "Failing")
    target = condition(failing, "FailureTarget")
    assert target is not None and (target["status"], target["reason"]) == (
        "True", "PyTorchJobFailed")
    wait_until(lambda: (get_pod(client, ns, MASTER) or {}).get("metadata", {}).get(
        "deletionTimestamp"), what="the master pod deleted by the clean-up")
    settle(cluster, before)
    held = wait_for_phase(client, ns, "ends", "Failing")
    assert condition(held, "Failed") is None
    assert "completionTime" not in status(held)

    target = condition(held, "FailureTarget")
    assert target is not None and target["status"] == "True"

    release(client, ns)
    failed = wait_for_phase(client, ns, "ends", "Failed")
    final = condition(failed, "Failed")
    assert final is not None and final["status"] == "True"
    assert condition(failed, "FailureTarget") is None
    assert (final["reason"], final["message"]) == (target["reason"], target["message"])
    assert status(failed)["completionTime"] >= target["lastTransitionTime"]
    assert job_path(failed)[-2:] == ["Failing", "Failed"]
    assert pod_names(client, ns, "ends") == []


def test_succeeded_follows_success_criteria_met_with_the_same_reason(
    client: KubeClient, ns: str
) -> None:
    """The Master succeeds while a Worker still runs, cleanPodPolicy Running: the Worker's
    pod is deleted before Succeeded appears, which then takes SuccessCriteriaMet's place."""
    job = pytorchjob("ends", ns, master=Replica(run_s=0.5), workers=Replica(run_s=120),
                     clean_pod_policy="Running")
    client.create(PYTORCHJOBS, job, ns)

    done = wait_for_phase(client, ns, "ends", "Succeeded", timeout=30)
    final = condition(done, "Succeeded")
    assert final is not None and final["status"] == "True"
    assert condition(done, "SuccessCriteriaMet") is None
    assert (final["reason"], final["message"]) == (
        "PyTorchJobSucceeded", f"PyTorchJob {ns}/ends successfully completed.")
    assert job_path(done)[-2:] == ["Succeeding", "Succeeded"]
    assert pod_names(client, ns, "ends") == [MASTER]
