"""A machine expression that type-checks but fails while a job runs is said on the job: one
Warning Event `MachineEvaluationError` naming the machine, its revision, where the
expression is written in the revision and why, however many passes meet it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.controller.reporting.evaluation_errors import REASON
from engine.kube.client import KubeClient
from tests.integration.engine.custom_kinds import (
    Lab,
    current_revision,
    lab_job,
    machine,
    new_kind,
    wait_for_verdict,
)
from tests.integration.engine.helpers import (
    Replica,
    count_events,
    job_events,
    pods_of,
    wait_until,
)
from tests.integration.engine.machinejobs import get_obj, wait_for_phase_of

FAILING = "job.spec.workers['Chief'].replicas > 0"
"""Typed against the kind (workers is a map of replica specs), false to no job here: the
jobs have no Chief, so it fails at every pass that evaluates it."""


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


def test_a_guard_that_fails_at_run_time_is_one_warning_event(
        client: KubeClient, lab: Lab, ns: str) -> None:
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("fails", kind, when=FAILING))
    wait_for_verdict(client, "fails", accepted="Valid", governing="Governing")
    revision = current_revision(client, "fails")
    client.create(kind.resource, lab_job(kind, "guarded", ns, Replica(run_s=1)), ns)

    def said() -> list[str]:
        job = get_obj(client, kind.resource, ns, "guarded")
        return [e["message"] for e in job_events(client, job) if e["reason"] == REASON]

    wait_until(said, what=f"a {REASON} event")
    # The worker runs, then succeeds: passes that evaluate the guard again.
    wait_until(lambda: [p for p in pods_of(client, ns, "guarded")
                        if p.get("status", {}).get("phase") == "Succeeded"],
               what="the worker's pod to succeed")
    job = wait_for_phase_of(client, kind.resource, ns, "guarded", "Running")
    events = job_events(client, job)
    assert count_events(events, REASON) == 1
    [message] = said()
    assert message.startswith(f"machine fails (revision {revision}): transition ")
    assert " guard at data.spec.job.transitions[" in message
    assert message.endswith(f"(succeed) cannot be evaluated: {FAILING!r}: no such key: Chief")
