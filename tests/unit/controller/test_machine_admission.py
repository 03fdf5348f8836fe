"""Judging StateMachine objects, pure: which are accepted, which governs a kind, what each says.

The objects are the shipped machine files as the API server would hold them; the
revisions kept and the kinds served are given, so every verdict is a table row.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from engine.controller.machines.admission import Judge, KeptRevision, MachineVerdict, verdicts
from engine.controller.machines.revisions import revision_name
from engine.kube.resources import Resource
from tests.kinds import KINDS, MACHINES

SERVED = {(r.api_version, r.kind): r for r in KINDS.values()}


def machine(file: str, *, created: str = "2026-01-01T00:00:00Z", generation: int = 1,
            status: dict[str, Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((MACHINES / file).read_text())
    document["metadata"].update(creationTimestamp=created, generation=generation,
                                uid=f"uid-{file}", resourceVersion="1")
    if status is not None:
        document["status"] = status
    return document


def judge(objects: list[dict[str, Any]], *, kept: dict[str, KeptRevision] | None = None,
          served: dict[tuple[str, str], Resource] | None = None) -> dict[str, MachineVerdict]:
    judged = Judge().judge(objects)
    return verdicts(objects, judged, kept or {}, SERVED if served is None else served)


def broken(document: dict[str, Any]) -> dict[str, Any]:
    """The machine with a CEL type error in its first job transition's guard."""
    changed = copy.deepcopy(document)
    changed["spec"]["job"] = {"transitions": [{"name": "succeed", "when": "restarts == 'x'"}]}
    return changed


BASE = machine("kubeflow.yaml")


def test_a_valid_machine_is_accepted_and_governs_its_kind_with_a_new_revision() -> None:
    tf = machine("tfjob.yaml", generation=3)

    verdict = judge([BASE, tf])["tfjob"]

    assert (verdict.accepted.status, verdict.accepted.reason) == ("True", "Valid")
    assert verdict.accepted.message == "generation 3 is valid"
    assert (verdict.governing.status, verdict.governing.reason) == ("True", "Governing")
    assert verdict.governs == ("kubeflow.org/v1", "TFJob")
    assert verdict.resource == KINDS["TFJob"]
    assert verdict.new_revision is not None
    assert verdict.current_revision == revision_name("tfjob", verdict.new_revision)
    assert "extends" not in verdict.new_revision["spec"]
    assert verdict.bases == ("kubeflow",)


def test_an_abstract_machine_is_accepted_and_governs_nothing() -> None:
    verdict = judge([BASE])["kubeflow"]

    assert verdict.accepted.status == "True"
    assert (verdict.governing.status, verdict.governing.reason) == ("False", "Abstract")
    assert verdict.current_revision is None


def test_an_invalid_machine_is_refused_with_the_problem_by_field_path() -> None:
    verdict = judge([BASE, broken(machine("tfjob.yaml", generation=2))])["tfjob"]

    assert (verdict.accepted.status, verdict.accepted.reason) == ("False", "Invalid")
    assert verdict.accepted.message.startswith("generation 2 is invalid: spec.job.transitions[")
    assert "CEL type error" in verdict.accepted.message
    assert (verdict.governing.status, verdict.current_revision) == ("False", None)


def test_an_invalid_change_leaves_the_previous_revision_in_force() -> None:
    previous = "tfjob-0123456789"
    kept = {previous: KeptRevision(previous, "tfjob", ("kubeflow.org/v1", "TFJob"), "4")}
    tf = broken(machine("tfjob.yaml", generation=5, status={"currentRevision": previous}))

    verdict = judge([BASE, tf], kept=kept)["tfjob"]

    assert verdict.accepted.reason == "Invalid"
    assert verdict.accepted.message.endswith(
        f"; revision {previous} (generation 4) stays in force"
    )
    assert (verdict.governing.status, verdict.current_revision) == ("True", previous)
    assert verdict.new_revision is None


def test_the_machine_created_later_loses_its_kind() -> None:
    first = machine("tfjob.yaml", created="2026-01-01T00:00:00Z")
    second = machine("tfjob.yaml", created="2026-01-02T00:00:00Z")
    second["metadata"]["name"] = "tfjob-copy"

    decided = judge([second, BASE, first])

    assert decided["tfjob"].governing.status == "True"
    loser = decided["tfjob-copy"]
    assert (loser.accepted.status, loser.accepted.reason) == ("False", "Conflict")
    assert "TFJob is governed by machine tfjob, created earlier" in loser.accepted.message
    assert (loser.governing.status, loser.governing.reason) == ("False", "Conflict")


def test_a_kind_no_crd_serves_is_not_governed_yet() -> None:
    verdict = judge([BASE, machine("jaxjob.yaml")], served={})["jaxjob"]

    assert verdict.accepted.status == "True"
    assert (verdict.governing.status, verdict.governing.reason) == ("False", "CRDNotInstalled")
    assert "no CustomResourceDefinition serves kubeflow.org/v1 JAXJob" in verdict.governing.message
    assert verdict.current_revision is not None  # it is in force as soon as the CRD appears


def test_a_problem_in_the_base_is_reported_with_the_base_objects_name() -> None:
    base = copy.deepcopy(BASE)
    base["spec"]["job"]["transitions"][0]["when"] = "restarts == 'x'"

    verdict = judge([base, machine("jaxjob.yaml")])["jaxjob"]

    assert verdict.accepted.reason == "Invalid"
    assert "StateMachine kubeflow: spec.job.transitions[0].when:" in verdict.accepted.message


def test_a_machine_extending_one_that_does_not_exist_is_refused() -> None:
    verdict = judge([machine("jaxjob.yaml")])["jaxjob"]

    assert verdict.accepted.reason == "Invalid"
    assert "spec.extends: no machine named 'kubeflow' to extend" in verdict.accepted.message


@pytest.mark.parametrize("generation", [1, 7])
def test_judgements_are_remembered_by_content(generation: int) -> None:
    judge_once = Judge()
    objects = [BASE, machine("paddlejob.yaml", generation=generation)]

    first = judge_once.judge(objects)["paddlejob"][0]
    again = judge_once.judge([BASE, machine("paddlejob.yaml", generation=generation + 1)])

    assert again["paddlejob"][0] is first  # the same content: not compiled again
