"""What the model checker remembers (values by what expressions read, steps by their
outcomes) never changes what it finds: the same situations, states and traces as the
engine's code run afresh every time."""

from __future__ import annotations

import pickle
from contextlib import ExitStack
from pathlib import Path

import pytest

from engine.definition import load_definitions
from engine.definition.cel import (
    Activation,
    CelCompileError,
    CompiledExpression,
    RememberedValues,
    Scope,
    _code,
    _entry_fields,
    _list_entry_paths,
    _only_counted,
    _selected_fields,
    _status_fields,
    compile_expression,
    remembering_values,
    unchanging,
)
from engine.definition.remembered_steps import remembering_steps
from engine.modelcheck.explore import ShapeResult, explore
from engine.modelcheck.shapes import Bounds, Shape
from tests.kinds import MACHINES

SOUND = Path(__file__).parent / "machines" / "sound.yaml"


@pytest.mark.parametrize(("source", "name", "fields"), [
    ("replicas.exists(t, 'FailedByRule' in replicas[t].states)", "replicas", ("states",)),
    ("'Chief' in replicas ? replicas.Chief.succeeded == replicas.Chief.desired : false",
     "replicas", ("desired", "succeeded")),
    ("replicas.all(t, replicas[t].pending == 0)", "replicas", ("pending",)),
    ("'x' in replicas.Chief.states", "replicas", ("states",)),
    ("'Chief' in replicas", "replicas", ()),
    ("size(replicas) > 1", "replicas", None),
    ("has(replicas.Chief)", "replicas", None),
    ("replicas.map(t, replicas[t])", "replicas", None),
    ("'status' in objects['pg']", "objects", None),
])
def test_the_entry_fields_an_expression_reads_or_none_when_it_reads_more(
    source: str, name: str, fields: tuple[str, ...] | None,
) -> None:
    assert _entry_fields(source, name) == fields


@pytest.mark.parametrize(("source", "code"), [
    ("job.metadata.name + '-job-key' + job.spec.x", "job.metadata.name + '        ' + job.spec.x"),
    ('"a\\"job" + job.x', '"      " + job.x'),
    ("'''it's job''' + job.x", "'''        ''' + job.x"),
    ("r'job\\' + job.x", "r'    ' + job.x"),
])
def test_string_literals_are_blanked_out_escapes_and_raw_strings_included(
    source: str, code: str,
) -> None:
    assert _code(source) == code


@pytest.mark.parametrize(("source", "fields"), [
    # A variable's name inside a string is no mention (JobSet's label keys name 'job-key').
    ("{'jobset.sigs.k8s.io/job-key': job.metadata.name}", ("metadata",)),
    ("job.metadata.name + job", None),
    ("'job' in job.spec", ("spec",)),
])
def test_the_fields_an_expression_selects_leave_out_names_in_strings(
    source: str, fields: tuple[str, ...] | None,
) -> None:
    assert _selected_fields(source, "job") == fields


@pytest.mark.parametrize(("source", "fields"), [
    ("has(job.status) && job.status.conditions.exists(c, c.type == 'X')", ("conditions",)),
    ("has(dyn(job.status).restartAttempt) ? int(dyn(job.status).restartAttempt) : 0",
     ("restartAttempt",)),
    ("size(job.status) > 0", None),
    ("job.status.map(k, k)", None),
    ("dyn(job.status)", None),
    ("has(job.status) && job.status.phase == 'job.status'", ("phase",)),
])
def test_the_status_fields_an_expression_reads_or_none_when_it_reads_more(
    source: str, fields: tuple[str, ...] | None,
) -> None:
    assert _status_fields(source, "job") == fields


@pytest.mark.parametrize(("source", "paths"), [
    ("size(children) == 0", set()),
    ("!has(job.spec.x) && size((children.filter(c, c.observation == 'childFailed'))) > 0",
     {("observation",)}),
    ("children.filter(c, c.type == n && has(c.object.status) && c.object.status.active > 0)"
     ".size()", {("type",), ("object", "status"), ("object", "status", "active")}),
    # A filter's entries iterated again, or indexed only to select fields.
    ("(children.filter(c, c.observation == 'childFailed')).exists(c, c.reason in ['x'])",
     {("observation",), ("reason",)}),
    ("children.filter(c, c.observation == 'F').filter(c, children.all(d, d.object.t >= "
     "c.object.t))[0].object.metadata.name",
     {("observation",), ("object", "t"), ("object", "metadata", "name")}),
    ("children.map(c, c.object.metadata.name)", {("object", "metadata", "name")}),
    ("children.exists(c, c.object.conditions.exists(c, c.type == 'Failed'))",
     {("object", "conditions"), ("type",)}),
    # An entry read whole, or a filter's entries handed on: every field counts.
    ("children.filter(c, c.observation == 'childFailed')", None),
    ("dyn(children.filter(c, c.observation == 'childFailed'))", None),
    ("children.filter(c, c.observation == 'childFailed')[0]", None),
    ("children.exists(c, c == {})", None),
    ("children.exists(c, c.object.conditions.exists(c, c == 'Failed'))", None),
    ("children[0] == {}", None),
    ("size(children.filter(c, c.a)) + size(children.filter(c, c.b).map(d, d))", None),
    ("'children' in x && children == []", None),
])
def test_the_paths_an_expression_reads_into_list_entries_or_none_when_it_reads_more(
    source: str, paths: set[tuple[str, ...]] | None,
) -> None:
    found = _list_entry_paths(source, "children")
    assert (None if found is None else set(found)) == paths


def assert_remembered_as_afresh(guards: list[CompiledExpression],
                                rounds: list[dict[str, object]]) -> None:
    """Each guard's value (or error, as said) over `rounds`, twice over with the check's
    memory on, is what the evaluator gives afresh."""

    def values(variables: dict[str, object]) -> list[object]:
        found: list[object] = []
        activation = Activation(variables)
        for guard in guards:
            try:
                found.append(guard.evaluate(activation))
            except Exception as exc:  # the error, as said
                found.append(str(exc))
        return found

    afresh = [values(variables) for variables in rounds]
    with remembering_values():
        remembered = [values(variables) for variables in rounds + rounds]
    assert remembered == afresh + afresh


def test_a_list_cut_down_to_the_paths_read_gives_each_value_as_the_whole_list() -> None:
    """The expressions of JobSet's machine over children cut down to what they read, then
    over children whose unread fields change: the same values as without remembering."""
    scope = Scope("job")
    sources = [
        "size(children.filter(c, c.observation == 'childFailed')) > 0",
        "children.filter(c, has(c.object.status) && has(c.object.status.active)"
        " && c.object.status.active > 0).size()",
        "(children.filter(c, c.observation == 'childFailed')).exists(c, c.reason == 'B')",
        "children.filter(c, c.observation == 'childFailed')[0].object.metadata.name",
        "children.map(c, c.object.metadata.name)",
        "size(children)",
    ]
    for source in sources:
        assert _list_entry_paths(source, "children") is not None, source
    guards = [compile_expression(source, scope) for source in sources]

    def child(name: str, observation: str, status: dict[str, object], noise: int
              ) -> dict[str, object]:
        return {"type": "w", "index": 0, "observation": observation, "reason": "B",
                "message": f"m{noise}", "object": {"metadata": {"name": name, "uid": noise},
                                                   "spec": {"n": noise}, "status": status}}

    rounds = [{"job": {"metadata": {"name": "a"}, "spec": {}},
               "children": [child("a", first, status, noise),
                            child("b", "childFailed", {"active": noise}, noise)]}
              for first in ("childReady", "childFailed") for noise in (0, 1)
              for status in ({}, {"active": 1}, {"active": 0, "ready": noise})]

    assert_remembered_as_afresh(guards, rounds)


@pytest.mark.parametrize(("source", "counted"), [
    ("size(child) == 0 || runPolicy.suspend ? dyn({'a': job.spec}) : null", True),
    ("size(child) > 0 && 'child' in job.metadata.labels", True),
    ("size(child) == 0 && has(child.status)", False),
    ("size(child.status) == 0", False),
    ("child == {}", False),
])
def test_a_map_only_counted_or_more(source: str, counted: bool) -> None:
    assert _only_counted(source, "child") is counted


def test_a_map_only_counted_gives_each_value_as_the_whole_map() -> None:
    """TrainJob's JobSet spec is rendered while `size(child) == 0`: remembered by the
    child's size, over children of every size and status, as the evaluator gives it."""
    guards = [compile_expression(source, Scope("replica")) for source in (
        "size(child) == 0 ? 'render ' + string(size(job.spec)) : 'kept'",
        "size(child) > 1",
        "has(child.status) ? size(child) : -1")]
    rounds = [{"job": {"metadata": {"name": "a"}, "spec": spec}, "child": child}
              for spec in ({}, {"x": 1}) for child in (
                  {}, {"metadata": {"name": "c"}}, {"metadata": {}, "status": {"n": 1}},
                  {"metadata": {}, "status": {"n": 2}}, {"spec": {}, "status": {}})]

    assert_remembered_as_afresh(guards, rounds)


def test_an_expression_is_compiled_once_per_source_and_scope_and_a_failure_every_time(
) -> None:
    """Loading a folder compiles the same sources under the same scopes many times (check
    then validates and compiles each machine): the compiled expression is kept."""
    source = "replicas.all(t, replicas[t].failed == 0) && job.metadata.name != 'x'"
    first = compile_expression(source, Scope("job"))
    assert compile_expression(source, Scope("job")) is first
    assert compile_expression(source, Scope("replica")) is not first
    assert compile_expression(source, Scope("replica")).program is first.program
    for _ in range(2):
        with pytest.raises(CelCompileError, match="unknown variable 'replicaz'"):
            compile_expression("replicaz.all(t, true)", Scope("job"))


def summary(failed: int, states: dict[str, int]) -> dict[str, dict[str, object]]:
    return {"Worker": {"failed": failed, "states": states, "desired": 1},
            "PS": {"failed": 0, "states": {"Running": 1}, "desired": 1}}


def test_a_remembered_value_is_the_value_over_every_change_of_what_is_read() -> None:
    """Values and errors as the evaluator gives them afresh, whether the change is in the
    fields read (states), in fields not read (failed), or in the job's status beside the
    fields an expression selects."""
    scope = Scope("job")
    guards = [compile_expression(source, scope) for source in (
        "replicas.exists(t, 'Failed' in replicas[t].states)",
        "replicas.Worker.failed > 0 && job.metadata.name == 'a'",
        "has(job.status) && job.status.phase == 'Running'",
        "has(dyn(job.status).attempt) ? int(dyn(job.status).attempt) : 0",
        "replicas.Worker.states.Failed > 0")]
    jobs = [{"kind": "K", "metadata": {"name": "a"}, "spec": {},
             "status": {"phase": phase, "record": record, **extra}}
            for phase in ("Running", "Done", "Running") for record in ("r1", "r2")
            for extra in ({}, {"attempt": 2})]
    rounds = [{"job": job, "replicas": summary(failed, states)} for job in jobs
              for failed in (0, 1) for states in ({"Running": 1}, {"Failed": 1})]

    assert_remembered_as_afresh(guards, rounds)


def explored(path: Path, shape: Shape, *, remembering: bool) -> ShapeResult:
    definition = load_definitions([path])[0]
    with ExitStack() as stack:
        if remembering:
            stack.enter_context(remembering_values())
            stack.enter_context(remembering_steps())
        return explore(definition, shape, Bounds(), (0, 1, 128))


@pytest.mark.parametrize(("path", "shape"), [
    (SOUND, Shape((("Worker", 1),), "OnFailure")),
    (MACHINES / "tfjob.yaml", Shape((("Chief", 1), ("PS", 1)), "ExitCode")),
])
def test_remembering_finds_what_the_engine_run_afresh_finds(path: Path, shape: Shape) -> None:
    afresh = explored(path, shape, remembering=False)
    remembered = explored(path, shape, remembering=True)
    assert remembered.situations == afresh.situations
    assert (remembered.job_states, remembered.replica_states, remembered.conditions) == (
        afresh.job_states, afresh.replica_states, afresh.conditions)
    assert [(v.rule, v.where, v.trace) for v in remembered.violations] == [
        (v.rule, v.where, v.trace) for v in afresh.violations]
    assert remembered.failed_expressions == afresh.failed_expressions


def test_what_is_read_of_an_unchanging_value_is_worked_out_once_across_activations() -> None:
    """A value declared `unchanging` (a remembered replica summary) keeps the contents
    activations work out of it: a later activation finds them, the very bytes, and
    evaluates as afresh; a value not declared is worked out again by each activation."""
    guard = compile_expression("replicas.Worker.failed > 0", Scope("job"))
    declared, other = summary(1, {"Failed": 1}), summary(1, {"Failed": 1})
    with remembering_values():
        unchanging(declared)
        contents = [Activation({"replicas": value}).inputs(guard)
                    for value in (declared, declared, other, other)]
        assert guard.evaluate(Activation({"replicas": declared})) is True
        assert guard.evaluate(Activation({"replicas": summary(0, {})})) is False
    assert contents[0] == contents[1] == contents[2] == contents[3]
    assert contents[0][2][0] is contents[1][2][0]
    assert contents[2][2][0] is not contents[3][2][0]
    assert contents[0][2][0] is not contents[2][2][0]


def test_an_outcome_found_before_is_handed_out_again_and_an_error_evaluated_each_time() -> None:
    """A replayed step asks for outcomes: one found before over equal contents is the very
    outcome kept (not pickled anew), equal to the value's; an error is evaluated again."""
    guard = compile_expression("replicas.Worker.failed > 0", Scope("job"))
    failing = compile_expression("replicas.Chief.failed > 0", Scope("job"))
    values = RememberedValues()
    first, again, other = (values.outcome(guard, Activation({"replicas": replicas}))
                           for replicas in (summary(1, {}), summary(1, {}), summary(0, {})))
    assert first == again == ("value", pickle.dumps(True, pickle.HIGHEST_PROTOCOL))
    assert again is first
    assert other == ("value", pickle.dumps(False, pickle.HIGHEST_PROTOCOL))
    errors = [values.outcome(failing, Activation({"replicas": summary(1, {})}))
              for _ in range(2)]
    assert errors[0] == errors[1] and errors[0][0] == "error"
    assert errors[1] is not errors[0]
