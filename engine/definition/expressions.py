"""Every CEL expression and template of a definition, compiled once, by YAML path.

Validation and compilation both need each expression compiled; one walk for
both means the checks report exactly what the compiled machine will run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from engine.definition.cel import CelCompileError, CompiledExpression, Scope, compile_expression
from engine.definition.cel_types import JobSchema, TypeContext
from engine.definition.durations import looks_like_duration, parse_duration
from engine.definition.errors import Diagnostic, error
from engine.definition.loader import LoadedDefinition
from engine.definition.positions import Path, PositionIndex
from engine.definition.schema import ActionSpec, MachineSpec
from engine.definition.templates import TextTemplate, compile_template
from engine.definition.vocabulary import Level, actions_for, lower_camel

_GUARD_TYPES = ("bool", "dyn")
_DELAY_TYPES = ("int", "duration", "dyn")
_LIST_TYPES = ("list", "dyn")
_STRING_TYPES = ("string", "dyn")
_MAP_TYPES = ("map", "dyn")

POD_RESTART_POLICIES = ("Never", "OnFailure", "Always")
"""A pod's restartPolicy values; `spec.pod.restartPolicy` is one of them or CEL giving one."""

POD_REPLACEMENT_POLICIES = ("TerminatingOrFailed", "Failed")
"""When a deleted pod is judged: `spec.pod.replacementPolicy` is one of them or CEL giving one."""


@dataclass
class ExpressionTable:
    """Compiled expressions and templates of one definition, keyed by their YAML path."""

    expressions: dict[Path, CompiledExpression] = field(default_factory=dict)
    templates: dict[Path, TextTemplate] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    scopes: dict[Path, Scope] = field(default_factory=dict)
    """The scope each expression and template was checked in (its variables' types), so a
    second CEL implementation can check it in the same one."""

    def quoted_by(self, error: str) -> tuple[Path, str] | None:
        """The expression an evaluation error is about, as (its path, its source): a
        `CelEvaluationError` says the source it failed on, quoted (`repr`), then `: ` and
        why. The longest source quoted so wins (a short one may be quoted inside a
        longer); None when the error quotes none (a count of the wrong type, say)."""
        sources = [(path, e.source) for path, e in self.expressions.items()]
        sources += [(path, part.expression.source) for path, t in self.templates.items()
                    for part in t.parts if part.expression is not None]
        quoted = [(path, source) for path, source in sources if f"{source!r}: " in error]
        return max(quoted, key=lambda found: len(found[1])) if quoted else None


def action_path(positions: PositionIndex, base: Path, index: int, action: ActionSpec) -> Path:
    """The YAML path of an action's argument mapping (`- name: {args}` or `args:`)."""
    written = (*base, index, action.name)
    return written if positions.has(written) else (*base, index, "args")


_FRAGMENT_CALL = re.compile(r"(?<![\w.])([a-z][A-Za-z0-9]*)\(\s*\)")
"""A call of a named expression: a name not after a dot (not a method), with no arguments."""


MAX_EXPANDED_CHARS = 1 << 20
"""The longest an expression may grow with its named expressions put in (the shipped
machines' longest is about 64,000 characters): named expressions that each call the next
twice double it at every level, and thirty levels would take gigabytes."""


def expand_fragments(source: str, fragments: Mapping[str, str]) -> str:
    """`source` with every `name()` of `fragments` replaced by `(its expression)`, the
    fragments' own calls too; raises ValueError when they call each other in a loop, or
    when the result would be longer than MAX_EXPANDED_CHARS (said before it is built)."""
    if not fragments:
        return source
    for _ in range(len(fragments) + 1):
        calls = [call for call in _FRAGMENT_CALL.finditer(source) if call[1] in fragments]
        if not calls:
            return source
        size = len(source) + sum(len(fragments[call[1]]) + 2 - len(call[0]) for call in calls)
        if size > MAX_EXPANDED_CHARS:
            raise ValueError(f"with its named expressions put in, this expression would be "
                             f"{size:,} characters long, more than the {MAX_EXPANDED_CHARS:,} "
                             "allowed: call fewer named expressions, or each fewer times")
        source = _FRAGMENT_CALL.sub(
            lambda m: f"({fragments[m[1]]})" if m[1] in fragments else m[0], source)
    raise ValueError("the named expressions call each other in a loop: "
                     + " -> ".join(f"{name}()" for name in _loop(source, fragments)))


def _loop(source: str, fragments: Mapping[str, str]) -> list[str]:
    """A loop of calls among `fragments` that `source` reaches, as the names along it with
    the first again at the end (a depth-first walk of who calls whom)."""
    calls = {name: [call[1] for call in _FRAGMENT_CALL.finditer(body) if call[1] in fragments]
             for name, body in fragments.items()}
    on_path, finished = set[str](), set[str]()
    for start in (call[1] for call in _FRAGMENT_CALL.finditer(source) if call[1] in fragments):
        if start in finished:
            continue
        path, walks = [start], [iter(calls[start])]
        on_path.add(start)
        while walks:
            called = next(walks[-1], None)
            if called is None:
                finished.add(path[-1])
                on_path.discard(path.pop())
                walks.pop()
            elif called in on_path:
                return [*path[path.index(called):], called]
            elif called not in finished:
                path.append(called)
                walks.append(iter(calls[called]))
                on_path.add(called)
    raise AssertionError("expansion kept changing without a loop among the named expressions")


class _Compiler:
    def __init__(self, loaded: LoadedDefinition, types: TypeContext) -> None:
        self.positions = loaded.positions
        self.table = ExpressionTable()
        self.types = types
        self.fragments = dict(loaded.definition.spec.expressions)

    def _expanded(self, path: Path, source: str) -> str | None:
        """The source with the named expressions put in; None (reported) on a loop."""
        try:
            return expand_fragments(source, self.fragments)
        except ValueError as exc:
            self.table.diagnostics.append(error(self.positions.value(path), str(exc)))
            return None

    def scope(self, level: Level, *, template: bool = False, validation: bool = False,
              status: bool = False, child: bool = False) -> Scope:
        return Scope(level, template=template, validation=validation, status=status,
                     child=child, types=self.types)

    def expression(
        self, path: Path, source: str, scope: Scope, types: tuple[str, ...] = ()
    ) -> None:
        expanded = self._expanded(path, source)
        if expanded is None:
            return
        self.table.scopes[path] = scope
        try:
            compiled = compile_expression(expanded, scope)
        except CelCompileError as exc:
            self._report(path, exc, expanded=expanded != source)
            return
        if types and compiled.result_type.split("<")[0] not in types:
            wanted = " or ".join(t for t in types if t != "dyn")
            self.table.diagnostics.append(error(
                self.positions.value(path),
                f"this expression must give {wanted}, but it gives {compiled.result_type}",
            ))
            return
        self.table.expressions[path] = compiled

    def template(self, path: Path, source: str, scope: Scope) -> None:
        expanded = self._expanded(path, source)
        if expanded is None:
            return
        self.table.scopes[path] = scope
        try:
            self.table.templates[path] = compile_template(expanded, scope)
        except CelCompileError as exc:
            self._report(path, exc, expanded=expanded != source)

    def _report(self, path: Path, exc: CelCompileError, *, expanded: bool = False) -> None:
        for problem in exc.problems:
            # With named expressions put in, a line and column are the expansion's.
            position = None if expanded else self.positions.expression(
                path, problem.line, problem.column)
            message = problem.message
            if expanded:
                position = self.positions.value(path)
                message += " (in the expression with its named expressions put in)"
            elif position is None:
                position = self.positions.value(path)
                message += f" (line {problem.line}, column {problem.column} of the expression)"
            self.table.diagnostics.append(error(position, message))

    def actions(self, base: Path, actions: list[ActionSpec], level: Level) -> None:
        known = actions_for(level)
        for index, action in enumerate(actions):
            spec = known.get(action.name)
            if spec is None:
                continue
            args_path = action_path(self.positions, base, index, action)
            for arg in spec.args:
                value = action.args.get(arg.name)
                if not isinstance(value, str):
                    continue
                if arg.kind == "cel":
                    self.expression((*args_path, arg.name), value, self.scope(level))
                elif arg.kind == "template":
                    self.template((*args_path, arg.name), value, self.scope(level))


def _machine(compiler: _Compiler, machine: MachineSpec, level: Level) -> None:
    base: Path = ("spec", level)
    scope = compiler.scope(level)
    for index, transition in enumerate(machine.transitions):
        path = (*base, "transitions", index)
        if transition.when is not None:
            compiler.expression((*path, "when"), transition.when, scope, _GUARD_TYPES)
        if transition.message is not None:
            compiler.template((*path, "message"), transition.message, scope)
        compiler.actions((*path, "actions"), transition.actions, level)
    for name, state in machine.states.items():
        path = (*base, "states", name)
        compiler.actions((*path, "onEnter"), state.on_enter, level)
        if state.condition is not None and state.condition.message is not None:
            message_path = (*path, "condition", "message")
            compiler.template(message_path, state.condition.message, scope)
        for key, delay in (("requeueAfter", state.requeue_after), ("timeout", state.timeout)):
            if isinstance(delay, str) and is_delay_expression(delay):
                compiler.expression((*path, key), delay, scope, _DELAY_TYPES)


def is_delay_expression(value: str) -> bool:
    """A `requeueAfter` or `timeout` string that is CEL rather than a duration."""
    return parse_duration(value) is None and not looks_like_duration(value)


def pod_value_paths(loaded: LoadedDefinition) -> Iterator[tuple[Path, str]]:
    pod = loaded.definition.spec.pod
    for section, values in (("env", pod.env), ("labels", pod.labels),
                            ("annotations", pod.annotations), ("specFields", pod.spec_fields)):
        for key, source in values.items():
            yield ("spec", "pod", section, key), source


def object_value_paths(loaded: LoadedDefinition) -> Iterator[tuple[Path, str]]:
    """Every value of every child object template (its `when` aside)."""
    for index, spec in enumerate(loaded.definition.spec.objects):
        for section, values in (("labels", spec.labels), ("annotations", spec.annotations),
                                ("fields", spec.fields)):
            for key, source in values.items():
                yield ("spec", "objects", index, section, key), source


def type_context(loaded: LoadedDefinition, job_schema: JobSchema | None = None) -> TypeContext:
    """What `loaded`'s expressions are typed against: its replica phase words (the replica
    summary's counts) and, when known, its kind's schema."""
    replica_states = loaded.definition.spec.replica.states
    words = sorted({lower_camel(state.phase or name) for name, state in replica_states.items()})
    references = tuple(loaded.definition.spec.governs.references) if (
        loaded.definition.spec.governs is not None) else ()
    return TypeContext(tuple(words), job_schema, references)


def compile_expressions(loaded: LoadedDefinition, job_schema: JobSchema | None = None
                        ) -> ExpressionTable:
    """Compile every expression of `loaded`, typed against `job_schema` where given (else
    `job` is an untyped map); problems are in the table's diagnostics."""
    compiler = _Compiler(loaded, type_context(loaded, job_schema))
    spec = loaded.definition.spec
    _machine(compiler, spec.job, "job")
    _machine(compiler, spec.replica, "replica")
    pod_scope = compiler.scope("replica", template=True)
    for path, source in pod_value_paths(loaded):
        compiler.expression(path, source, pod_scope)
    if spec.pod.restart_policy not in POD_RESTART_POLICIES:
        compiler.expression(("spec", "pod", "restartPolicy"), spec.pod.restart_policy, pod_scope,
                            _STRING_TYPES)
    if spec.pod.replacement_policy not in POD_REPLACEMENT_POLICIES:
        compiler.expression(("spec", "pod", "replacementPolicy"), spec.pod.replacement_policy,
                            compiler.scope("job", validation=True), _STRING_TYPES)
    lists = (("volumes", spec.pod.volumes), ("volumeMounts", spec.pod.volume_mounts),
             ("initContainers", spec.pod.init_containers), ("command", spec.pod.command))
    for key, written in lists:
        if written is not None:
            compiler.expression(("spec", "pod", key), written, pod_scope, _LIST_TYPES)
    for index, rule in enumerate(spec.validations):
        compiler.expression(("spec", "validations", index, "rule"), rule.rule,
                            compiler.scope("job", validation=True), _GUARD_TYPES)
        if rule.message_expression is not None:
            compiler.expression(("spec", "validations", index, "messageExpression"),
                                rule.message_expression, compiler.scope("job", validation=True),
                                _STRING_TYPES)
    object_scope = compiler.scope("job", template=True)
    for index, child in enumerate(spec.objects):
        if child.when is not None:
            compiler.expression(("spec", "objects", index, "when"), child.when, object_scope,
                                _GUARD_TYPES)
    for path, source in object_value_paths(loaded):
        compiler.expression(path, source, object_scope)
    for name, source in spec.status.items():
        compiler.expression(("spec", "status", name), source, compiler.scope("job", status=True))
    for path, source, types, child_scope in child_value_paths(loaded):
        scope = (compiler.scope("replica", child=True) if child_scope
                 else compiler.scope("replica", template=True))
        compiler.expression(path, source, scope, types)
    for path, source, types in schedule_value_paths(loaded):
        compiler.expression(path, source, compiler.scope("job"), types)
    for path, source, types in rollout_value_paths(loaded):
        compiler.expression(path, source, compiler.scope("job"), types)
    for path, source in reference_value_paths(loaded):
        compiler.expression(path, source, compiler.scope("job", validation=True), _STRING_TYPES)
    return compiler.table


REFERENCE_FIELDS = ("apiVersion", "kind", "name", "scope")
"""The CEL fields of each governs.references entry, each giving a string."""


def reference_value_paths(loaded: LoadedDefinition) -> Iterator[tuple[Path, str]]:
    """Every expression of the machine's governs.references (they see `job` alone: the
    engine finds the objects before anything else is computed)."""
    governs = loaded.definition.spec.governs
    for name, reference in (governs.references if governs is not None else {}).items():
        values = reference.model_dump(by_alias=True)
        for key in REFERENCE_FIELDS:
            yield ("spec", "governs", "references", name, key), values[key]


_SCHEDULE_VALUES = (
    ("cron", _STRING_TYPES), ("timeZone", ("string", "null", "dyn")),
    ("startingDeadlineSeconds", ("int", "null", "dyn")),
    ("concurrencyPolicy", _STRING_TYPES), ("successfulHistoryLimit", ("int", "dyn")),
    ("failedHistoryLimit", ("int", "dyn")),
)
_CHILD_VALUES = (("labels", ("map", "dyn")), ("annotations", ("map", "dyn")),
                 ("spec", ("map", "dyn")))


def schedule_value_paths(
    loaded: LoadedDefinition,
) -> Iterator[tuple[Path, str, tuple[str, ...]]]:
    """Every value of the machine's schedule, with the types it may give."""
    schedule = loaded.definition.spec.schedule
    if schedule is None:
        return
    values = schedule.model_dump(by_alias=True)
    for key, types in _SCHEDULE_VALUES:
        yield ("spec", "schedule", key), values[key], types
    for key, types in _CHILD_VALUES:
        yield ("spec", "schedule", "child", key), values["child"][key], types


_COUNT_TYPES = ("int", "dyn")
_ROLLOUT_VALUES = (
    ("replicas", _COUNT_TYPES), ("selector", _MAP_TYPES), ("template", _MAP_TYPES),
    ("strategy", _STRING_TYPES), ("maxSurge", ("int", "string", "dyn")),
    ("maxUnavailable", ("int", "string", "dyn")), ("paused", _GUARD_TYPES),
    ("minReadySeconds", _COUNT_TYPES), ("revisionHistoryLimit", ("int", "null", "dyn")),
    ("progressDeadlineSeconds", ("int", "null", "dyn")),
)


def rollout_value_paths(
    loaded: LoadedDefinition,
) -> Iterator[tuple[Path, str, tuple[str, ...]]]:
    """Every value of the machine's rollout, with the types it may give."""
    rollout = loaded.definition.spec.rollout
    if rollout is None:
        return
    values = rollout.model_dump(by_alias=True)
    for key, types in _ROLLOUT_VALUES:
        yield ("spec", "rollout", key), values[key], types


_CHILD_STATUS_VALUES = (
    ("ready", _GUARD_TYPES), ("succeeded", _GUARD_TYPES), ("failed", _GUARD_TYPES),
    ("failureReason", _STRING_TYPES), ("failureMessage", _STRING_TYPES),
)


def child_value_paths(
    loaded: LoadedDefinition,
) -> Iterator[tuple[Path, str, tuple[str, ...], bool]]:
    """Every value of the machine's spec.child, with the types it may give and whether it
    is a status expression (which sees only `job` and `child`) rather than a value of the
    child (which sees the replica's variables, as the pod's values do)."""
    child = loaded.definition.spec.child
    if child is None:
        return
    base: Path = ("spec", "child")
    if child.name is not None:
        yield (*base, "name"), child.name, _STRING_TYPES, False
    if child.metadata is not None:
        yield (*base, "metadata"), child.metadata, _MAP_TYPES, False
    for section, values in (("labels", child.labels), ("annotations", child.annotations),
                            ("fields", child.fields)):
        for key, source in values.items():
            yield (*base, section, key), source, (), False
    status = child.status.model_dump(by_alias=True)
    for key, types in _CHILD_STATUS_VALUES:
        yield (*base, "status", key), status[key], types, True
