"""What rendering.py reads and renders beyond the pod: a replica's child object (its name
and annotations) and what spec.child's status expressions say of it, a Native-layout
machine's status fields, the job's child objects (kept ones left alone, their naming), and
a rule's messageExpression that says no text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.definition import compile_definition, load_text
from engine.definition.cel import Activation
from engine.definition.compiled import CompiledDefinition
from engine.definition.rendering import (
    ChildReading,
    RenderedObject,
    broken_rules,
    read_child,
    render_child_decorations,
    render_objects,
    render_status_fields,
)
from engine.definition.vocabulary import job_value
from tests.unit.definition.texts import GOVERNS, document

CHILDREN = (Path(__file__).parent / "children" / "jobs.yaml").read_text(encoding="utf-8")
JOB: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "JobsJob",
                       "metadata": {"name": "trio", "namespace": "ml"},
                       "spec": {"workers": {}}}
REPLICA = {"type": "Worker", "index": 1, "restarts": 0, "desired": 2}


def compiled(text: str, name: str = "demo.yaml") -> CompiledDefinition:
    (loaded,) = load_text(text, name)
    return compile_definition(loaded)


def jobs_machine() -> CompiledDefinition:
    """jobs.yaml with an annotation on each child, and a failure reason that may be null."""
    reason = "child.status.conditions.filter(c, c.type == 'Failed')[0].reason"
    assert f'failureReason: "{reason}"' in CHILDREN
    text = CHILDREN.replace(
        reason, "has(child.status.reason) ? dyn(child.status.reason) : null", 1
    ).replace("    labels:\n", "    annotations:\n      example.com/of: job.metadata.name\n"
              "    labels:\n", 1)
    return compiled(text, "jobs.yaml")


def test_a_child_without_a_name_expression_gets_the_engines_name_and_its_annotations() -> None:
    made = render_child_decorations(jobs_machine(), {"job": job_value(JOB), "replica": REPLICA})
    assert made.name is None
    assert made.labels == {"example.com/replica": "Worker-1"}
    assert made.annotations == {"example.com/of": "trio"}


def condition(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True"}


@pytest.mark.parametrize(("status", "reading"), [
    ({"ready": 1, "conditions": []}, ChildReading(True, False, False)),
    ({"ready": 0, "conditions": []}, ChildReading(False, False, False)),
    ({"ready": 1, "conditions": [condition("Complete")]}, ChildReading(False, True, False)),
    # A failed child is not ready, whatever it says; a null failure reason is no words.
    ({"ready": 1, "message": "m", "conditions": [{**condition("Failed"), "message": "lost"}]},
     ChildReading(False, False, True, "", "lost")),
    ({"reason": "BackoffLimitExceeded",
      "conditions": [condition("Complete"), {**condition("Failed"), "message": "lost"}]},
     ChildReading(False, True, True, "BackoffLimitExceeded", "lost")),
], ids=["ready", "not-ready", "succeeded", "failed", "failed-and-succeeded"])
def test_what_the_status_expressions_say_of_a_child(status: dict[str, Any],
                                                    reading: ChildReading) -> None:
    assert read_child(jobs_machine(), JOB, {"status": status}) == reading


NATIVE = document(extra='  status:\n    size: "job.spec.size"\n    gone: "null"\n').replace(
    GOVERNS, "  governs: {apiVersion: example.dev/v1, kind: Demo, statusLayout: Native}\n")


def test_status_fields_are_computed_over_variables_or_an_activation() -> None:
    native = compiled(NATIVE)
    variables = {"job": job_value({"spec": {"size": 3}})}
    assert render_status_fields(native, variables) == {"size": 3}
    assert render_status_fields(native, Activation(variables)) == {"size": 3}


OBJECTS = """\
  objects:
    - {name: keys, apiVersion: v1, kind: Secret}
    - {name: hostfile, apiVersion: v1, kind: ConfigMap, naming: JobName}
    - {name: extra, apiVersion: v1, kind: ConfigMap, suffix: more}
"""


def test_a_kept_object_is_not_rendered_and_the_others_still_are() -> None:
    wanted, absent = render_objects(compiled(document(extra=OBJECTS)), {},
                                    kept=frozenset({"keys"}))
    assert wanted == [
        RenderedObject("hostfile", "v1", "ConfigMap", "hostfile", naming="JobName"),
        RenderedObject("extra", "v1", "ConfigMap", "more"),
    ]
    assert absent == []


def test_a_message_expression_that_gives_no_text_leaves_the_message() -> None:
    rule = ("  validations:\n    - rule: \"job.spec.size <= 3\"\n"
            "      message: at most 3\n"
            "      messageExpression: \"job.spec.said\"\n")
    rules = compiled(document(extra=rule))
    assert broken_rules(rules, {"spec": {"size": 4, "said": 5}}) == ["at most 3"]
    assert broken_rules(rules, {"spec": {"size": 4, "said": "four"}}) == ["four"]
