"""What spec.child gives one replica's child and reads of it (rendering.py), where its CEL
gives a value of the wrong kind: the words the engine reports (tests/unit/definition/children/
jobs.yaml, a machine whose replicas are batch Jobs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.definition import compile_definition, load_text, render_child_decorations
from engine.definition.cel import CelEvaluationError
from engine.definition.compiled import CompiledDefinition
from engine.definition.rendering import read_child
from engine.definition.vocabulary import job_value
from tests.unit.definition.texts import document

TEXT = (Path(__file__).parent / "children" / "jobs.yaml").read_text(encoding="utf-8")
JOB: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "JobsJob",
                       "metadata": {"name": "trio", "namespace": "ml"},
                       "spec": {"childName": "", "workers": {}}}
REPLICA = {"type": "Worker", "index": 1, "restarts": 0, "desired": 2}


def machine(old: str, new: str) -> CompiledDefinition:
    assert old in TEXT
    (loaded,) = load_text(TEXT.replace(old, new, 1), "jobs.yaml")
    return compile_definition(loaded)


def decorations_problem(compiled: CompiledDefinition) -> str:
    with pytest.raises(CelEvaluationError) as raised:
        render_child_decorations(compiled, {"job": job_value(JOB), "replica": REPLICA})
    return str(raised.value)


def test_a_child_name_must_be_a_non_empty_string() -> None:
    compiled = machine("    labels:\n", "    name: job.spec.childName\n    labels:\n")
    assert decorations_problem(compiled) == "child.name gave '', not a non-empty string"
    named = machine("    labels:\n", "    name: \"job.metadata.name + '-w'\"\n    labels:\n")
    made = render_child_decorations(named, {"job": job_value(JOB), "replica": REPLICA})
    assert made.name == "trio-w"


def test_child_metadata_must_be_a_map() -> None:
    compiled = machine("    labels:\n", "    metadata: job.metadata.name\n    labels:\n")
    assert decorations_problem(compiled) == "child.metadata gave 'trio', not a map"


def test_a_machine_without_children_has_no_child_decorations() -> None:
    (loaded,) = load_text(document(), "demo.yaml")
    with pytest.raises(ValueError, match=r"^machine demo has no spec\.child$"):
        render_child_decorations(compile_definition(loaded), {})


def test_a_status_expression_that_gives_no_bool_is_named() -> None:
    compiled = machine(
        'ready: "has(child.status) && has(child.status.ready) && child.status.ready > 0"',
        'ready: "child.status.ready"')
    with pytest.raises(CelEvaluationError) as raised:
        read_child(compiled, JOB, {"metadata": {"name": "trio-worker-0"},
                                   "status": {"ready": 1, "conditions": []}})
    assert str(raised.value) == "child.status.ready gave 1, not a bool"
