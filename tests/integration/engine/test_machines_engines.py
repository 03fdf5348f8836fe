"""Machine revisions across engines: kept while needed, collected after, and kept over a restart.

The tests run engines themselves on the `engineless` server: one with a short revision
grace period, to see unused revisions go (and the newest of a kind whose machine was
deleted stay while its CRD exists); and one stopped and started again while its
machine changed, to see a running job keep the revision it started with.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.machines.served import CRDS
from engine.kube.client import KubeClient
from engine.kube.resources import STATE_MACHINES
from engine.settings import EngineSettings
from tests.integration.engine.custom_kinds import (
    Lab,
    current_revision,
    lab_job,
    machine,
    new_kind,
    pod_env,
    revisions_of,
    runs_with,
    touch,
    wait_for_verdict,
)
from tests.integration.engine.helpers import (
    FAST,
    EngineRun,
    Replica,
    condition,
    new_namespace,
    pods_of,
    start_engine,
    status,
)
from tests.integration.engine.machinejobs import get_obj, wait_for_phase_of

GRACE_S = 2.0
QUICK_GC = FAST.model_copy(update={"revision_grace_s": GRACE_S})
"""Unused revisions go after 2 s (60 s in production)."""

StartEngine = Callable[[EngineSettings], EngineRun]


@pytest.fixture
def admin(engineless: RunningApiServer) -> Iterator[KubeClient]:
    client = KubeClient.from_kubeconfig(engineless.kubeconfig)
    yield client
    client.close()


@pytest.fixture
def engines(engineless: RunningApiServer) -> Iterator[StartEngine]:
    """Starts engines on the server; every one still running is stopped at the end."""
    runs: list[EngineRun] = []

    def start(settings: EngineSettings) -> EngineRun:
        runs.append(start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), settings))
        return runs[-1]

    yield start
    for run in runs:
        run.stop()


@pytest.fixture
def lab(admin: KubeClient, engines: StartEngine) -> Iterator[Lab]:
    """Removed before the engines stop: they run the clean-up of the lab's jobs."""
    with Lab(admin) as made:
        yield made


def look_again_for(client: KubeClient, seconds: float, *, until: Callable[[], bool]) -> bool:
    """Touch a bystander machine every 0.2 s (each touch makes the machine controller look
    again) for `seconds` or until `until()`; whether `until()` became true."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        touch(client, "bystander")
        if until():
            return True
        time.sleep(0.2)
    return until()


def test_revision_no_job_uses_is_deleted_after_the_grace_period(
    admin: KubeClient, engines: StartEngine, lab: Lab
) -> None:
    """Revision `first` superseded by `second` while job `user` (done) records it -> kept
    past the grace period; `user` deleted -> `first` deleted, not sooner than the grace
    period after; `second` (in force) kept."""
    engines(QUICK_GC)
    ns = new_namespace(admin)
    lab.apply(machine("bystander", new_kind()))
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("collected", kind, rules="first"))
    wait_for_verdict(admin, "collected", accepted="Valid", governing="Governing")
    first = current_revision(admin, "collected")
    admin.create(kind.resource, lab_job(kind, "user", ns), ns)
    wait_for_phase_of(admin, kind.resource, ns, "user", "Succeeded")
    lab.apply(machine("collected", kind, rules="second"))
    wait_for_verdict(admin, "collected", accepted="Valid", governing="Governing", generation=2)
    second = current_revision(admin, "collected")

    gone = look_again_for(admin, 2 * GRACE_S,
                          until=lambda: first not in revisions_of(admin, "collected"))
    assert not gone, f"{first} deleted while job user records it"
    deleted_at = time.monotonic()
    admin.delete(kind.resource, "user", ns)
    assert look_again_for(admin, GRACE_S + 15,
                          until=lambda: first not in revisions_of(admin, "collected"))
    assert time.monotonic() - deleted_at >= GRACE_S
    assert list(revisions_of(admin, "collected")) == [second]


def test_deleted_machine_keeps_its_newest_revision_while_its_crd_exists(
    admin: KubeClient, engines: StartEngine, lab: Lab
) -> None:
    """Machine `tomb` at revisions `first`, `second`, then deleted -> `first` deleted after
    the grace period, `second` kept; the kind's CRD deleted -> `second` deleted too."""
    engines(QUICK_GC)
    lab.apply(machine("bystander", new_kind()))
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("tomb", kind, rules="first"))
    wait_for_verdict(admin, "tomb", accepted="Valid", governing="Governing")
    lab.apply(machine("tomb", kind, rules="second"))
    wait_for_verdict(admin, "tomb", accepted="Valid", governing="Governing", generation=2)
    second = current_revision(admin, "tomb")
    assert len(revisions_of(admin, "tomb")) == 2

    admin.delete(STATE_MACHINES, "tomb")
    assert look_again_for(admin, GRACE_S + 15,
                          until=lambda: list(revisions_of(admin, "tomb")) == [second])
    assert not look_again_for(admin, 2 * GRACE_S,
                              until=lambda: second not in revisions_of(admin, "tomb")), (
        f"the tombstone {second} went while the kind's CRD exists")

    admin.delete(CRDS, kind.crd_name)
    assert look_again_for(admin, GRACE_S + 15, until=lambda: revisions_of(admin, "tomb") == {})


def test_restarted_engine_keeps_a_running_job_on_its_revision(
    admin: KubeClient, engines: StartEngine, lab: Lab
) -> None:
    """`old` runs by rules `first` (its pod exits 137 after 3 s, then 0); the engine stops,
    the machine changes to `second`, a new engine starts -> `old` is restarted and succeeds
    by `first` (its new pod too); `new`, created after, runs by `second`."""
    first_engine = engines(FAST)
    ns = new_namespace(admin)
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("kept", kind, rules="first"))
    wait_for_verdict(admin, "kept", accepted="Valid", governing="Governing")
    first = current_revision(admin, "kept")
    admin.create(kind.resource, lab_job(kind, "old", ns, Replica(codes="137,0", run_s=3)), ns)
    wait_for_phase_of(admin, kind.resource, ns, "old", "Running")
    first_engine.stop()
    assert status(get_obj(admin, kind.resource, ns, "old")).get("restarts", 0) == 0

    lab.apply(machine("kept", kind, rules="second"))
    engines(FAST)
    wait_for_verdict(admin, "kept", accepted="Valid", governing="Governing", generation=2)
    second = current_revision(admin, "kept")
    assert second != first
    admin.create(kind.resource, lab_job(kind, "new", ns), ns)

    old = wait_for_phase_of(admin, kind.resource, ns, "old", "Succeeded", timeout=40)
    assert runs_with(old) == first
    assert status(old).get("restarts", 0) == 1
    assert condition(old, "Succeeded")["reason"] == "FirstRules"
    assert [pod_env(p, "RULES") for p in pods_of(admin, ns, "old")] == ["first"]
    new = wait_for_phase_of(admin, kind.resource, ns, "new", "Succeeded")
    assert runs_with(new) == second
    assert condition(new, "Succeeded")["reason"] == "SecondRules"
    assert [pod_env(p, "RULES") for p in pods_of(admin, ns, "new")] == ["second"]
