"""A schema problem in the author's words, at the node (schema_errors.schema_diagnostics),
for any root model, not only a machine's: each kind a value should have been, bounds and
patterns with their limits, unknown fields with the fields of the section they were written
in (the root's own, whatever the root), the whole document, `args` fields, and the words of
a wrong action or condition form kept for the form itself (an error inside an action's
arguments or a condition's fields is its own)."""

from __future__ import annotations

import datetime
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.definition.loader import read_text
from engine.definition.schema_errors import schema_diagnostics, yaml_kind
from engine.definition.validate import validate_text
from tests.unit.definition.texts import JOB, document


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Call(Strict):
    args: int = 0


class Inner(Strict):
    size: int = 0


class Root(Strict):
    count: int = 0
    ratio: float = 0.0
    either: str | int = ""
    labels: dict[str, str] = Field(default_factory=dict)
    inner: Inner | None = None
    options: list[int] | Inner | None = None
    call: Call | None = None
    args: int = 0
    limited: int = Field(default=1, ge=1)
    word: str = Field(default="a", pattern="^[a-z]+$")
    at_most: int = Field(default=0, le=3)
    above: int = Field(default=1, gt=0)
    below: int = Field(default=0, lt=3)
    short: str = Field(default="ab", min_length=2, max_length=3)
    day: datetime.date | None = None
    described: Annotated[str | int, Field(description="text or a number")] | None = None


class Transition(Strict):
    actions: list[int] = Field(default_factory=list)


class Job(Strict):
    transitions: list[Transition] = Field(default_factory=list)


class Spec(Strict):
    job: Job | None = None


class LikeAMachine(Strict):
    """Named as a machine's path to an action (spec.job.transitions[].actions[]), but
    holding numbers."""

    spec: Spec | None = None


def said(text: str, root: type[BaseModel] = Root) -> list[str]:
    (raw,), _ = read_text(text, "r.yaml")
    with pytest.raises(ValidationError) as raised:
        root.model_validate(raw.data)
    return [str(d) for d in schema_diagnostics(raised.value, raw.data,
                                               raw.positions, root=root)]


@pytest.mark.parametrize(("value", "kind"), [
    (None, "nothing (null)"), (True, "a boolean"), (3, "an integer"), (1.5, "a number"),
    ("x", "a string"), ({}, "a mapping"), ([], "a list"), (datetime.date(2027, 1, 15), "date"),
])
def test_each_kind_of_value_in_a_yaml_authors_words(value: Any, kind: str) -> None:
    assert yaml_kind(value) == kind


def test_each_field_says_what_it_should_have_been() -> None:
    assert said("count: x\nratio: y\neither: [1]\nlabels: [a]\ninner: [1]\nbogus: 1\n"
                "call: {args: x}\nargs: x\nlimited: 0\nword: A\n") == [
        "r.yaml:1:8: error: 'count' must be an integer, not a string",
        "r.yaml:2:8: error: 'ratio' must be a number, not a string",
        "r.yaml:3:9: error: 'either' must be a string or an integer, not a list",
        "r.yaml:4:9: error: 'labels' must be a mapping, not a list",
        "r.yaml:5:8: error: 'inner' must be a mapping, not a list",
        "r.yaml:7:14: error: 'arguments of call' must be an integer, not a string",
        "r.yaml:8:7: error: 'args' must be an integer, not a string",
        "r.yaml:9:10: error: 'limited' must be >= 1 (got 0)",
        "r.yaml:10:7: error: 'word' must match ^[a-z]+$ (got 'A')",
        "r.yaml:6:1: error: unknown field 'bogus'; allowed fields: count, ratio, either, "
        "labels, inner, options, call, args, limited, word, at_most, above, below, short, day, "
        "described",
    ]


def test_bounds_lengths_and_other_kinds_say_their_limits() -> None:
    assert said("at_most: 4\nabove: 0\nbelow: 3\nshort: a\nday: [1]\ndescribed: [1]\n") == [
        "r.yaml:1:10: error: 'at_most' must be <= 3 (got 4)",
        "r.yaml:2:8: error: 'above' must be > 0 (got 0)",
        "r.yaml:3:8: error: 'below' must be < 3 (got 3)",
        "r.yaml:4:8: error: 'short' has the wrong length: string should have at least 2 "
        "characters",
        "r.yaml:5:6: error: 'day' must be date_type, not a list",
        "r.yaml:6:12: error: 'described' must be a string or an integer, not a list",
    ]


def test_a_string_too_long_says_its_limit() -> None:
    assert said("short: abcd\n") == [
        "r.yaml:1:8: error: 'short' has the wrong length: string should have at most 3 "
        "characters"]


def test_a_document_that_is_no_mapping_is_named_so() -> None:
    assert said("- 1\n- 2\n") == ["r.yaml:1:1: error: 'document' must be a mapping, not a list"]
    assert said("5\n") == ["r.yaml:1:1: error: 'document' must be a mapping, not an integer"]


def test_an_unknown_field_in_one_member_of_a_union_is_reported_at_its_key() -> None:
    """With that member's fields; the list member's refusal of a mapping is left out, as
    the mapping member takes mappings."""
    assert said("options: {bogus: 1}\n") == [
        "r.yaml:1:11: error: unknown field 'bogus'; allowed fields: size"]


class Mixed(Strict):
    """Unions of a container or a model with a simple kind."""

    listed: list[int] | int = 0
    shaped: Inner | int = 0
    mapped: dict[str, int] | int = 0


def test_a_value_of_no_kind_of_a_union_names_the_field_and_every_kind() -> None:
    """pydantic refuses it once per member, naming the member (`list[int]`, `Inner`): one
    problem, in the field's name."""
    assert said("listed: x\nshaped: x\nmapped: x\n", Mixed) == [
        "r.yaml:1:9: error: 'listed' must be a list or an integer, not a string",
        "r.yaml:2:9: error: 'shaped' must be a mapping or an integer, not a string",
        "r.yaml:3:9: error: 'mapped' must be a mapping or an integer, not a string",
    ]


def test_a_problem_inside_one_member_of_a_union_is_that_members_alone() -> None:
    assert said("listed: [x]\nshaped: {size: x}\nmapped: {a: x}\n", Mixed) == [
        "r.yaml:1:10: error: 'listed item 1' must be an integer, not a string",
        "r.yaml:2:16: error: 'size' must be an integer, not a string",
        "r.yaml:3:13: error: 'a' must be an integer, not a string",
    ]


def test_a_path_named_like_a_machines_action_is_judged_by_its_own_root() -> None:
    text = "spec:\n  job:\n    transitions:\n      - actions: [x]\n"
    assert said(text, LikeAMachine) == [
        "r.yaml:4:19: error: 'actions item 1' must be an integer, not a string"]


def machine_problems(running: str) -> list[str]:
    text = document(job=JOB.replace("Running: {}", f"Running: {running}"))
    return [str(d) for d in validate_text(text, "d.yaml")]


def test_a_problem_inside_an_actions_arguments_or_a_conditions_fields_is_its_own() -> None:
    assert machine_problems("{onEnter: [{cleanupPods: {1: All}}]}") == [
        "d.yaml:9:45: error: '[key]' must be a string, not an integer"]
    assert machine_problems("{onEnter: [{name: cleanupPods, args: {1: All}}]}") == [
        "d.yaml:9:57: error: '[key]' must be a string, not an integer"]
    assert machine_problems("{condition: {type: Running, sticky: maybe}}") == [
        "d.yaml:9:52: error: 'sticky' must be true or false, not a string"]
    # A wrong form is the form's words.
    assert machine_problems("{onEnter: [5]}") == [
        "d.yaml:9:27: error: an action is a name (createPod) or a one-key mapping "
        "(cleanupPods: {policy: All}); got an integer"]


class Deep(Strict):
    size: int = 0


class Outer(Strict):
    deep: Deep | None = None
    either: str | int = ""


class Members(Strict):
    """Unions whose members hold more: a model after a simple kind, a list of models and a
    mapping of lists of models (a nested generic, which pydantic names whole:
    `dict[str,list[Outer]]`), and a string with a pattern beside an integer."""

    member: int | Outer = 0
    listed: int | list[Outer] = 0
    mapped: int | dict[str, list[Outer]] = 0
    worded: Annotated[str, Field(pattern="^[a-z]+$")] | int = 0


def test_a_problem_deep_inside_a_union_member_is_judged_by_that_members_fields() -> None:
    """The member pydantic names is followed down: an unknown field two levels below it
    lists the fields of its own section, and a union field inside it names its kinds."""
    assert said("member: {deep: {bogus: 1}}\nlisted: [{deep: {bogus: 1}}]\n"
                "mapped: {a: [{deep: {bogus: 1}}]}\n", Members) == [
        "r.yaml:1:17: error: unknown field 'bogus'; allowed fields: size",
        "r.yaml:2:18: error: unknown field 'bogus'; allowed fields: size",
        "r.yaml:3:22: error: unknown field 'bogus'; allowed fields: size",
    ]
    assert said("member: {either: [1]}\n", Members) == [
        "r.yaml:1:18: error: 'either' must be a string or an integer, not a list"]


def test_a_members_own_limit_is_said_though_another_member_takes_no_such_kind() -> None:
    """A string that misses the string member's pattern: that member's words, not also the
    integer member's refusal of a string."""
    assert said("worded: ABC\n", Members) == [
        "r.yaml:1:9: error: 'worded' must match ^[a-z]+$ (got 'ABC')"]
