"""A StateMachine's status and the Events that tell its story in `kubectl describe`: the
next status from a verdict (conditions, observedGeneration, currentRevision), the one write
that replaces it conditional on the resourceVersion judged, and one Event per change of
verdict: a Warning for a refusal (one, not two), none for an abstract machine or an
unchanged verdict, a Normal one when a new revision comes into force."""

from __future__ import annotations

import copy
from typing import Any

from engine.controller.machines.admission import Condition, MachineVerdict
from engine.controller.machines.status import announce, machine_status, write_machine_status
from engine.kube.resources import STATE_MACHINES, Resource

NOW = "2026-11-30T12:00:00Z"
EARLIER = "2026-11-29T12:00:00Z"
ACCEPTED = Condition("Accepted", "True", "Valid", "generation 2 is valid")
GOVERNING = Condition("Governing", "True", "Governing",
                      "new Demo jobs start with revision demo-abc")
INVALID = Condition("Accepted", "False", "Invalid", "generation 2 is invalid: no phases")
NOT_GOVERNING = Condition("Governing", "False", "Invalid",
                          "no revision of this machine is in force")
ABSTRACT = Condition("Governing", "False", "Abstract", "an abstract machine governs no kind")


def verdict(accepted: Condition = ACCEPTED, governing: Condition = GOVERNING, *,
            generation: int | None = 2, revision: str | None = "demo-abc") -> MachineVerdict:
    return MachineVerdict(name="demo", generation=generation, accepted=accepted,
                          governing=governing, current_revision=revision)


def machine(status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "StateMachine",
        "metadata": {"name": "demo", "uid": "m-uid", "resourceVersion": "41",
                     "generation": 2, "labels": {"team": "ml"}},
        "spec": {"governs": {"kind": "Demo"}},
    }
    if status is not None:
        obj["status"] = status
    return obj


def condition(c: Condition, when: str = EARLIER) -> dict[str, Any]:
    return {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message,
            "lastUpdateTime": when, "lastTransitionTime": when}


class TestMachineStatus:
    def test_a_new_machine_gets_both_conditions_its_generation_and_revision(self) -> None:
        assert machine_status(machine(), verdict(), now=NOW) == {
            "conditions": [condition(ACCEPTED, NOW), condition(GOVERNING, NOW)],
            "observedGeneration": 2,
            "currentRevision": "demo-abc",
        }

    def test_the_input_is_left_as_it_was_and_other_status_fields_are_kept(self) -> None:
        obj = machine({"conditions": [condition(ACCEPTED)], "extra": 1})
        before = copy.deepcopy(obj)
        status = machine_status(obj, verdict(INVALID, NOT_GOVERNING), now=NOW)
        assert obj == before
        assert status["extra"] == 1
        assert status["conditions"][-2:] == [condition(INVALID, NOW),
                                             condition(NOT_GOVERNING, NOW)]

    def test_an_unchanged_verdict_keeps_the_conditions_times(self) -> None:
        obj = machine({"conditions": [condition(ACCEPTED), condition(GOVERNING)]})
        assert machine_status(obj, verdict(), now=NOW)["conditions"] == [
            condition(ACCEPTED), condition(GOVERNING)]

    def test_without_a_generation_the_observed_one_stays(self) -> None:
        obj = machine({"observedGeneration": 1})
        assert machine_status(obj, verdict(generation=None), now=NOW)["observedGeneration"] == 1

    def test_without_a_revision_in_force_the_current_revision_goes(self) -> None:
        obj = machine({"currentRevision": "demo-old"})
        assert "currentRevision" not in machine_status(obj, verdict(revision=None), now=NOW)


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def replace(self, res: Resource, name: str, body: Any, *,
                subresource: str | None = None) -> None:
        self.calls.append((res, name, body, subresource))


def test_the_status_write_replaces_the_status_at_the_resource_version_judged() -> None:
    client = FakeClient()
    obj = machine({"conditions": []})
    status = {"conditions": [condition(ACCEPTED, NOW)], "observedGeneration": 2}
    write_machine_status(client, obj, status)  # type: ignore[arg-type]
    assert client.calls == [(STATE_MACHINES, "demo", {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "StateMachine",
        "metadata": {"name": "demo", "resourceVersion": "41", "uid": "m-uid"},
        "spec": {"governs": {"kind": "Demo"}},
        "status": status,
    }, "status")]


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, involved: Any, *, type: str, reason: str, message: str) -> None:
        assert involved["metadata"]["name"] == "demo"
        self.events.append((type, reason, message))


def events(obj: dict[str, Any], decided: MachineVerdict) -> list[tuple[str, str, str]]:
    recorder = FakeRecorder()
    announce(recorder, obj, decided)  # type: ignore[arg-type]
    return recorder.events


class TestAnnounce:
    def test_a_refused_machine_gets_one_warning_saying_why(self) -> None:
        assert events(machine(), verdict(INVALID, NOT_GOVERNING, revision=None)) == [
            ("Warning", "Invalid", INVALID.message)]

    def test_a_refusal_seen_before_is_not_announced_again_even_reworded(self) -> None:
        reworded = Condition("Accepted", "False", "Invalid", "generation 3 is invalid: other")
        obj = machine({"conditions": [condition(INVALID), condition(NOT_GOVERNING)]})
        assert events(obj, verdict(reworded, NOT_GOVERNING, revision=None)) == []

    def test_a_governing_refusal_after_an_unchanged_acceptance_is_announced(self) -> None:
        obj = machine({"conditions": [condition(ACCEPTED), condition(GOVERNING)],
                       "currentRevision": "demo-abc"})
        taken = Condition("Governing", "False", "Conflict", "Demo is governed by machine old")
        assert events(obj, verdict(ACCEPTED, taken)) == [
            ("Warning", "Conflict", taken.message)]

    def test_an_abstract_machine_is_not_a_warning(self) -> None:
        assert events(machine(), verdict(ACCEPTED, ABSTRACT, revision=None)) == []

    def test_a_new_revision_in_force_is_a_normal_event_once(self) -> None:
        assert events(machine(), verdict()) == [
            ("Normal", "RevisionInForce",
             "revision demo-abc is in force: new Demo jobs start with revision demo-abc")]
        settled = machine({"conditions": [condition(ACCEPTED), condition(GOVERNING)],
                           "currentRevision": "demo-abc"})
        assert events(settled, verdict()) == []
        moved = Condition("Governing", "True", "Governing",
                          "new Demo jobs start with revision demo-def")
        assert events(settled, verdict(governing=moved, revision="demo-def")) == [
            ("Normal", "RevisionInForce",
             "revision demo-def is in force: new Demo jobs start with revision demo-def")]
