"""Values remembered by what an expression reads (`RememberedValues`, `Activation.inputs`):
the engine's passes and the model checker answer an expression from memory when what it
reads is unchanged. What an expression reads is worked out from its text: the fields it
selects of a map, the fields of a map's entries, the paths into a list's entries, only
a map's size. A change outside them must leave the answer remembered, a change inside
them must not, and the value answered is always the value the evaluator gives afresh."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any

import pytest

from engine.definition.cel import (
    Activation,
    CelEvaluationError,
    CompiledExpression,
    RememberedValues,
    Scope,
    Tape,
    compile_expression,
    remembered_values,
    remembering_values,
    unchanging,
)

JOB = Scope("job")
REPLICA = Scope("replica")


@dataclass(eq=False)
class Counted:
    """An evaluator program that counts its runs: how often a value was worked out."""

    program: Any
    runs: int = 0

    def execute(self, context: Any) -> Any:
        self.runs += 1
        return self.program.execute(context)


def counted(source: str, scope: Scope = JOB) -> tuple[CompiledExpression, Counted]:
    expression = compile_expression(source, scope)
    program = Counted(expression.program)
    return replace(expression, program=program), program


def inputs(source: str, scope: Scope = JOB, **variables: Any) -> Any:
    return Activation(variables).inputs(compile_expression(source, scope))


def child(name: str, observation: str, *, active: int = 0, noise: int = 0) -> dict[str, Any]:
    failed = "Failed" if observation == "childFailed" else "Ready"
    return {"type": "w", "observation": observation, "message": f"m{noise}",
            "object": {"metadata": {"name": name, "uid": noise},
                       "status": {"active": active, "ready": noise},
                       "conditions": [{"type": failed}]}}


def job(phase: str = "Running", *, record: str = "r1", name: str = "a",
        spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec or {},
            "status": {"phase": phase, "record": record}}


def replicas(failed: int, desired: int = 1, **more: dict[str, int]) -> dict[str, Any]:
    return {"Worker": {"failed": failed, "desired": desired}, **more}


FAILED_CHILD = "children.filter(c, c.observation == 'childFailed').size() > 0"
ACTIVE = ("children.filter(c, c.object.status.active > 0)"
          ".map(c, c.object.metadata.name)")
FAILED_REPLICA = "replicas.exists(t, replicas[t].failed > 0)"
PHASE = "has(job.status) && job.status.phase == 'Running'"
NAME = "job.metadata.name == 'a'"
NAME_AND_PHASE = "job.metadata.name + '/' + job.status.phase"
WHOLE = "job != {}"


@pytest.mark.parametrize(("source", "same", "other"), [
    # Fields of list entries read through macros: the rest of each entry is not read.
    (FAILED_CHILD, {"children": [child("a", "childReady", active=1, noise=1)]},
     {"children": [child("a", "childFailed")]}),
    (ACTIVE, {"children": [child("a", "x", active=1, noise=1)]},
     {"children": [child("b", "childReady", active=1)]}),
    # Only counted, the entries are not read; grouping parentheses change nothing.
    ("size(children) > 1", {"children": [child("b", "childFailed", noise=1)]},
     {"children": [child("a", "childReady", active=1)] * 2}),
    ("size((children)) > 1", {"children": [child("b", "childFailed", noise=1)]},
     {"children": []}),
    ("(children).exists(c, c.type == 'w')", {"children": [child("b", "x", noise=1)]},
     {"children": [{**child("a", "childReady", active=1), "type": "v"}]}),
    # An entry indexed, of the list or of what a filter keeps, to select its fields.
    ("children[0].observation == 'childReady'", {"children": [child("a", "childReady", noise=1)]},
     {"children": [child("a", "childFailed", active=1)]}),
    ("children.filter(c, c.observation == 'childReady')[0].object.metadata.name",
     {"children": [child("a", "childReady", noise=1)]},
     {"children": [child("b", "childReady", active=1)]}),
    # However the call or the grouping around the list is spaced.
    ("size( children ) > 1", {"children": [child("b", "childFailed", noise=1)]},
     {"children": []}),
    ("size(children ) > 1", {"children": [child("b", "childFailed", noise=1)]},
     {"children": []}),
    ("size (children) > 1", {"children": [child("b", "childFailed", noise=1)]},
     {"children": []}),
    ("(children ).size() > 1", {"children": [child("b", "childFailed", noise=1)]},
     {"children": []}),
    # A macro within a macro that names its variable again: the outer one still reads
    # only the fields selected.
    ("children.exists(c, c.object.conditions.exists(c, c.type == 'Failed')"
     " && c.observation == 'childFailed')", {"children": [child("a", "childReady", noise=1)]},
     {"children": [child("a", "childFailed", active=1)]}),
    # Parentheses inside a macro's body.
    ("children.exists(c, (c.observation == 'childFailed') && c.object.status.active > 0)",
     {"children": [child("b", "childReady", active=1, noise=1)]},
     {"children": [child("a", "childReady", active=0)]}),
    # What a filter keeps, iterated again.
    ("children.filter(c, c.observation == 'childReady').exists(d, d.message == 'm0')",
     {"children": [child("a", "childReady", active=0)]},
     {"children": [child("a", "childReady", active=1, noise=1)]}),
    # A field of each entry of a map: the other fields are not read, the keys are.
    (FAILED_REPLICA, {"replicas": replicas(0, desired=3)},
     {"replicas": replicas(0, PS={"failed": 1})}),
    # The status's fields a guard reads: the record beside them is not read.
    (PHASE, {"job": job(record="r2", spec={"x": 1})}, {"job": job("Done")}),
    (NAME, {"job": job("Done", record="r2")}, {"job": job(name="b")}),
    (NAME_AND_PHASE, {"job": job(record="r2")}, {"job": job("Done")}),
    # A field compared whole, beside the status or whether there is one.
    ("job.metadata == {'name': 'a'}", {"job": job("Done", record="r2", spec={"x": 1})},
     {"job": job(name="b")}),
    ("has(job.status) && job.metadata == {'name': 'a'}", {"job": job("Done", record="r2")},
     {"job": job(name="b")}),
])
def test_inputs_leave_out_what_the_expression_does_not_read(
    source: str, same: dict[str, Any], other: dict[str, Any],
) -> None:
    first = {"children": [child("a", "childReady", active=1)], "replicas": replicas(0),
             "job": job()}
    assert inputs(source, **first) is not None
    assert inputs(source, **first) == inputs(source, **{**first, **same})
    assert inputs(source, **first) != inputs(source, **{**first, **other})


def test_inputs_of_a_map_only_counted_are_its_size() -> None:
    source = "size(child) == 0"
    assert inputs(source, REPLICA, child={}) == inputs(source, REPLICA, child={})
    assert inputs(source, REPLICA, child={"a": 1}) == inputs(source, REPLICA, child={"b": 2})
    assert inputs(source, REPLICA, child={"a": 1}) != inputs(source, REPLICA, child={})


def test_inputs_of_a_value_read_whole_are_all_of_it() -> None:
    assert inputs(WHOLE, job=job()) == inputs(WHOLE, job=job())
    assert inputs(WHOLE, job=job()) != inputs(WHOLE, job=job(record="r2"))
    for source in ("children == []", "dyn(children).size() > 0", "(children == [])",
                   "[(children)].size() > 0", "children[0] == {}",
                   "children.filter(c, c.observation == 'x')",
                   "children.exists(c, c == {})", "size(children.map(c, c))"):
        assert inputs(source, children=[child("a", "x")]) == inputs(
            source, children=[child("a", "x")]), source
        assert inputs(source, children=[child("a", "x")]) != inputs(
            source, children=[child("a", "x", noise=1)]), source


def test_no_inputs_without_the_variable_or_with_a_value_that_cannot_be_pickled() -> None:
    assert inputs(NAME) is None
    assert inputs(WHOLE, job={"x": lambda: 0}) is None
    assert inputs(WHOLE, job={"x": (n for n in ())}) is None
    assert inputs(NAME, job=job()) is not None


ROUNDS: list[dict[str, Any]] = [
    {"job": job(phase, record=record, name=name), "replicas": replicas(failed, desired),
     "children": [child("a", observation, active=active, noise=noise)], "restarts": failed}
    for phase in ("Running", "Done") for record in ("r1", "r2") for name in ("a", "b")
    for failed in (0, 1) for desired in (1, 2) for observation in ("childReady", "childFailed")
    for active in (0, 1) for noise in (0, 1)
][::7]
SOURCES = [FAILED_CHILD, ACTIVE, FAILED_REPLICA, PHASE, NAME, NAME_AND_PHASE, WHOLE,
           "job.status.phase == 'Done' ? sum([restarts, 1]) : restarts",
           "job.metadata.name + string(size(replicas))",
           "children.map(c, c.object.status)", "replicas.Worker.states.Failed > 0",
           "size(children) > 1", "(children).exists(c, c.type == 'w')",
           "children[0].object.status.active",
           "children.filter(c, c.observation == 'childReady').exists(d, d.message == 'm0')",
           "children.filter(c, c.observation == 'childFailed')[0].object.metadata",
           "dyn(children).size() > 0", "dyn(job).status.phase", "children[0] == {}",
           "children.exists(c, (c.observation == 'childFailed') && c.object.status.active > 0)",
           "children.exists(c, c.object.conditions.exists(c, c.type == 'Failed')"
           " && c.observation == 'childFailed')",
           "job.status", "job.status.record"]


def afresh(sources: list[str], rounds: list[dict[str, Any]]) -> list[list[Any]]:
    """Each expression's value, or its error's words, over each round, without memory."""
    found = []
    for variables in rounds:
        row: list[Any] = []
        for source in sources:
            try:
                row.append(compile_expression(source, JOB).evaluate(variables))
            except CelEvaluationError as exc:
                row.append(str(exc))
        found.append(row)
    return found


def test_every_value_answered_from_memory_is_the_value_afresh() -> None:
    """The same expressions over rounds that change read and unread fields, evaluated
    twice over under one memory, give what each gives afresh."""
    expected = afresh(SOURCES, ROUNDS)
    with remembering_values():
        remembered = afresh(SOURCES, ROUNDS + ROUNDS)
    assert remembered == expected + expected


@pytest.mark.parametrize("source", [
    "children.filter(c, c.observation == 'childFailed').size() + restarts",
    "size(replicas) + restarts",
    "replicas.exists(t, replicas[t].failed > restarts)",
    "job.status.phase == 'Running' && restarts > 0",
    "job.metadata.name == 'a' && restarts > 0",
])
def test_a_variable_after_another_is_bound_whichever_way_that_one_is(source: str) -> None:
    """The variables of an expression are bound in order, each as a view of what it reads
    or whole: the one after a view is bound all the same."""
    expected = afresh([source], ROUNDS)
    with remembering_values():
        assert afresh([source], ROUNDS) == expected


def test_a_value_over_equal_inputs_is_worked_out_once_and_an_error_every_time() -> None:
    guard, program = counted(PHASE)
    failing, failures = counted("job.status.missing == 1")
    with remembering_values():
        for record in ("r1", "r2", "r3"):
            assert guard.evaluate({"job": job(record=record)}) is True
            with pytest.raises(CelEvaluationError, match="no such key: missing"):
                failing.evaluate({"job": job(record=record)})
        assert program.runs == 1
        assert guard.evaluate({"job": job("Done")}) is False
        assert program.runs == 2
    assert failures.runs == 3
    guard.evaluate({"job": job()})
    assert program.runs == 3  # no memory outside the block


def test_a_full_memory_forgets_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RememberedValues, "LIMIT", 2)
    guard, program = counted("restarts > 1")
    with remembering_values():
        for restarts in (0, 1, 0, 2, 0):
            guard.evaluate({"restarts": restarts})
    # 0 and 1 kept; 2 finds the memory full and forgets them; 0 is then worked out again.
    assert program.runs == 4


def test_a_remembered_list_or_map_is_handed_out_as_a_copy() -> None:
    expression = compile_expression("[{'a': [1]}, {'b': {'c': 2}}]", JOB)
    with remembering_values():
        first = expression.evaluate({})
        first[0]["a"].append(9)
        first[1]["b"]["c"] = 9
        first.append(0)
        second = expression.evaluate({})
        assert second == [{"a": [1]}, {"b": {"c": 2}}]
        second[1]["b"]["c"] = 9
        assert expression.evaluate({}) == [{"a": [1]}, {"b": {"c": 2}}]


def test_memory_is_switched_on_for_the_block_and_can_be_kept_for_another() -> None:
    kept = RememberedValues()
    guard, program = counted(NAME)
    assert remembered_values() is None
    with remembering_values(kept):
        assert remembered_values() is kept
        guard.evaluate({"job": job()})
    assert remembered_values() is None
    with remembering_values(kept):
        guard.evaluate({"job": job(record="r9")})
    with remembering_values():
        assert remembered_values() is not kept
        guard.evaluate({"job": job()})
    assert program.runs == 2


def test_recording_notes_each_evaluation_with_its_outcome_in_order() -> None:
    values = RememberedValues()
    guard = compile_expression(NAME, JOB)
    failing = compile_expression("job.missing", JOB)
    tape, inner = Tape(), Tape()
    with remembering_values(values), values.recording(tape):
        assert guard.evaluate({"job": job()}) is True
        with values.recording(inner):
            guard.evaluate({"job": job(name="b")})
        with pytest.raises(CelEvaluationError) as caught:
            failing.evaluate({"job": job()})
        guard.evaluate({"job": job()})
    guard.evaluate({"job": job()})
    with remembering_values(values):
        guard.evaluate({"job": job()})
    true = ("value", pickle.dumps(True, pickle.HIGHEST_PROTOCOL))
    false = ("value", pickle.dumps(False, pickle.HIGHEST_PROTOCOL))
    assert tape.outcomes == [(guard, true), (failing, ("error", str(caught.value))),
                             (guard, true)]
    assert inner.outcomes == [(guard, false)]


def test_an_outcome_is_the_value_or_the_error_and_kept_by_its_inputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = RememberedValues()
    guard, program = counted("restarts > 1")
    outcomes = [values.outcome(guard, Activation({"restarts": n})) for n in (2, 2, 0)]
    assert outcomes == [("value", pickle.dumps(v, pickle.HIGHEST_PROTOCOL))
                        for v in (True, True, False)]
    assert program.runs == 2
    assert outcomes[1] is outcomes[0]  # handed out again, not pickled anew
    assert values.evaluate(guard, Activation({"restarts": 7})) is True
    assert values.outcome(guard, Activation({"restarts": 7})) == outcomes[0]
    assert program.runs == 3  # the value found by evaluate is its outcome's
    missing = values.outcome(guard, Activation({}))
    assert missing[0] == "error" and missing[1].startswith("'restarts > 1': ")
    assert "'restarts'" in missing[1]
    assert program.runs == 4
    monkeypatch.setattr(RememberedValues, "LIMIT", 3)
    values.outcome(guard, Activation({"restarts": 5}))  # full: forgets the three kept
    values.outcome(guard, Activation({"restarts": 2}))
    assert program.runs == 6


def test_an_expression_of_an_unrepeatable_function_has_no_outcome_kept() -> None:
    key = compile_expression("[sshKeyPair()].map(k, k.publicKey)[0]", Scope("job", template=True))
    values = RememberedValues()
    assert values.outcome(key, Activation({})) != values.outcome(key, Activation({}))


def test_contents_are_worked_out_once_per_object() -> None:
    """An activation pickles an object once, however many expressions read it; another
    object of equal content is pickled anew (it may change between activations)."""
    activation = Activation({})
    first, second = job(), job()
    content = activation.content(first)
    assert activation.content(second) == content and activation.content(second) is not content
    assert activation.content(first) is content
    fields = activation.fields_content(first, ("metadata",))
    assert activation.fields_content(second, ("metadata",)) == fields
    assert activation.fields_content(first, ("metadata",)) is fields
    assert fields == (pickle.dumps({"name": "a"}, pickle.HIGHEST_PROTOCOL),)
    assert activation.fields_content(first, ("nothing",)) == (None,)
    summary, other = replicas(1), replicas(1)
    entries = activation.entries(summary, ("failed",))
    assert entries[0] == {"Worker": {"failed": 1}}
    assert activation.entries(other, ("failed",)) == entries
    assert activation.entries(summary, ("failed",)) is entries
    listed, again = [child("a", "x")], [child("a", "x")]
    paths = frozenset({("observation",)})
    projected = activation.projected(listed, paths)
    assert projected[0] == [{"observation": "x"}]
    assert activation.projected(again, paths) == projected
    assert activation.projected(listed, paths) is projected


def test_activations_sharing_one_keep_the_contents_each_works_out() -> None:
    shared = Activation({})
    value = job()
    content = Activation({}, sharing=shared).content(value)
    assert Activation({}, sharing=shared).content(value) is content
    assert Activation({}).content(value) is not content


def test_contents_of_an_unchanging_value_are_kept_across_activations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    declared, summary = replicas(1), replicas(1)
    with remembering_values():
        unchanging(declared)
        assert Activation({}).content(declared) is Activation({}).content(declared)
        assert Activation({}).content(summary) is not Activation({}).content(summary)
        entries = Activation({}).entries(declared, ("failed",))
        assert Activation({}).entries(declared, ("failed",)) is entries
        assert Activation({}).entries(summary, ("failed",)) is not Activation({}).entries(
            summary, ("failed",))
        monkeypatch.setattr(RememberedValues, "LIMIT", 1)
        unchanging(summary)  # full: the first declared is forgotten
        assert Activation({}).content(summary) is Activation({}).content(summary)
        assert Activation({}).content(declared) is not Activation({}).content(declared)
    unchanging(summary)  # without memory: nothing kept
    assert Activation({}).content(summary) is not Activation({}).content(summary)


def test_expressions_reading_other_status_fields_of_equal_values_each_see_their_own() -> None:
    """A job is bound with only the status fields an expression reads: one that reads
    another field, of the same value, must not be handed that view."""
    phase = compile_expression("job.status.phase", JOB)
    record = compile_expression("job.status.record", JOB)
    both = compile_expression("job.status.phase + job.status.record", JOB)
    with remembering_values():
        for value in ("x", "y"):
            same = {"job": {"metadata": {}, "status": {"phase": value, "record": value}}}
            assert phase.evaluate(same) == value
            assert record.evaluate(same) == value
            assert both.evaluate(same) == value + value
            assert phase.evaluate(same) == value


def test_a_null_value_is_bound_as_null_and_replaces_the_value_before() -> None:
    """Activations sharing a context bind a variable again when its value is another
    object, null included."""
    expression = compile_expression("dyn(error) == null", JOB)
    assert expression.evaluate({"error": None}) is True
    shared = Activation({})
    assert expression.evaluate(Activation({"error": "x"}, sharing=shared)) is False
    assert expression.evaluate(Activation({"error": None}, sharing=shared)) is True
    assert expression.evaluate(Activation({"error": "x"}, sharing=shared)) is False


def test_a_map_with_a_text_entry_named_like_a_field_read_is_answered() -> None:
    """Only the entries that are maps are cut down to the fields read of them."""
    expression = compile_expression("job.metadata.name == 'a'", JOB)
    value = {"metadata": {"name": "a"}, "kind": "name"}
    assert inputs("job.metadata.name == 'a'", job=value) is not None
    with remembering_values():
        assert expression.evaluate({"job": value}) is True


def test_fields_of_list_entries_are_read_whatever_their_names() -> None:
    """Capitals in a field's name, or a field named X, are fields like any other."""
    for source, field in (("children.exists(c, c.Type == 'w')", "Type"),
                          ("children.exists(c, c.X == 'w')", "X")):
        def entries(value: str, noise: int) -> list[dict[str, Any]]:
            return [{field: value, "noise": noise}]  # noqa: B023

        assert inputs(source, children=entries("w", 0)) == inputs(
            source, children=entries("w", 1)), source
        assert inputs(source, children=entries("w", 0)) != inputs(
            source, children=entries("v", 0)), source
