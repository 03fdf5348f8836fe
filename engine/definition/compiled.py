"""A definition compiled for running: one `transitions` machine per level, shared by all jobs.

Each level becomes one `transitions.Machine` with no models: a job or replica
is a small context object stepped with `event.trigger(ctx)`. There is one
event per set of observations that can hold together, holding (in file order)
the transitions that set allows, so `transitions` picks the first whose
condition (observation + compiled CEL guard) holds; callbacks only record.
An event is built the first time its set of observations is met: a job level
has 288 such sets, and building them all up front cost seconds per machine at
every engine start for sets most jobs never meet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from transitions import Event, EventData, Machine

from engine.definition.cel import Activation, CompiledExpression
from engine.definition.checks import check_names
from engine.definition.durations import parse_duration
from engine.definition.edges import expand_sources, possible_observation_sets
from engine.definition.errors import DefinitionError
from engine.definition.expressions import (
    REFERENCE_FIELDS,
    ExpressionTable,
    action_path,
    compile_expressions,
)
from engine.definition.loader import LoadedDefinition
from engine.definition.positions import Path
from engine.definition.schema import (
    ActionSpec,
    ChildSpec,
    ConditionSpec,
    Governs,
    MachineDefinition,
    MachineSpec,
    ObjectSpec,
    ServiceSpec,
    TransitionSpec,
)
from engine.definition.templates import TextTemplate
from engine.definition.vocabulary import Level, actions_for, observations_for

STEP = "step"


class StepError(Exception):
    """A step that cannot finish: impossible observations, or a machine that loops."""


@dataclass(frozen=True)
class CompiledAction:
    """An action with its arguments: literal, CEL, or template, each ready to render."""

    name: str
    literals: Mapping[str, str] = field(default_factory=dict)
    expressions: Mapping[str, CompiledExpression] = field(default_factory=dict)
    templates: Mapping[str, TextTemplate] = field(default_factory=dict)


@dataclass(frozen=True)
class CompiledTransition:
    """A transition with its sources expanded, guard and templates compiled, defaults set."""

    index: int  # position among the level's transitions in the file, 0-based
    sources: tuple[str, ...]
    target: str
    on: str | None
    guard: CompiledExpression | None
    actions: tuple[CompiledAction, ...]
    reason: str
    message: TextTemplate | None
    event_type: str
    silent: bool = False


@dataclass(frozen=True)
class CompiledState:
    """A state with its defaults applied and its delays in seconds."""

    name: str
    phase: str
    terminal: str | None
    condition: ConditionSpec | None
    condition_message: TextTemplate | None
    on_enter: tuple[CompiledAction, ...]
    requeue_seconds: float | None  # a fixed delay, or None
    requeue_expression: CompiledExpression | None  # a delay computed per instance
    timeout_seconds: float | None  # a fixed timeout, or None
    timeout_expression: CompiledExpression | None  # a timeout computed per instance
    hold_replicas: bool

    @property
    def has_timeout(self) -> bool:
        """Whether the state declares a timeout (an expression may still turn it off)."""
        return self.timeout_seconds is not None or self.timeout_expression is not None


class StepContext:
    """What one trigger of the shared machine sees and records (never shared)."""

    __slots__ = ("errors", "fired", "observations", "state", "variables")

    def __init__(self, state: str, observations: frozenset[str], variables: Activation):
        self.state = state
        self.observations = observations
        self.variables = variables
        self.fired: CompiledTransition | None = None
        self.errors: list[str] = []


class ObservationEvents:
    """The machine's event per set of observations that can hold together, built on
    first use: its transitions are those the set allows (file order kept), and it comes
    with the states it can move. Shared by the engine's workers, hence the lock."""

    def __init__(self, machine: Machine, transitions: tuple[CompiledTransition, ...],
                 possible: list[frozenset[str]]) -> None:
        self._machine = machine
        self._transitions = transitions
        self._possible = frozenset(possible)
        self._built: dict[frozenset[str], tuple[Event | None, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def get(self, observations: frozenset[str]) -> tuple[Event | None, frozenset[str]] | None:
        """The event and movable states for `observations`; None if they cannot hold
        together."""
        found = self._built.get(observations)
        if found is not None:
            return found
        if observations not in self._possible:
            return None
        with self._lock:
            found = self._built.get(observations)
            if found is None:
                found = self._build(observations)
                self._built[observations] = found
            return found

    def _build(self, observations: frozenset[str]) -> tuple[Event | None, frozenset[str]]:
        name = f"{STEP}:{','.join(sorted(observations))}"
        allowed = [t for t in self._transitions if t.on is None or t.on in observations]
        for transition in allowed:
            for source in transition.sources:
                self._machine.add_transition(
                    name, source, transition.target,
                    conditions=[_condition(transition)], after=[_recorder(transition)],
                )
        return self._machine.events.get(name), frozenset(s for t in allowed for s in t.sources)


@dataclass(frozen=True)
class CompiledMachine:
    """One level of a definition, ready to step; shared by every instance."""

    level: Level
    initial: str
    states: Mapping[str, CompiledState]
    transitions: tuple[CompiledTransition, ...]
    machine: Machine = field(repr=False, compare=False)
    events: ObservationEvents = field(repr=False, compare=False)
    observations: frozenset[str] = frozenset()  # the level's vocabulary
    creation_event: bool = True  # the creation posts `Created in <initial>`

    def fire(self, context: StepContext) -> CompiledTransition | None:
        """The first enabled transition from `context.state`, if any (state updated)."""
        found = self.events.get(context.observations)
        if found is None:
            raise StepError(f"these {self.level} observations cannot hold together: "
                            f"{', '.join(sorted(context.observations))}")
        event, movable = found
        if event is None or context.state not in movable:
            return None
        context.fired = None
        event.trigger(context)
        return context.fired


@dataclass(frozen=True)
class CompiledValidation:
    """A rule every job of the kind keeps: CEL over `job`, and what to say when it does not."""

    rule: CompiledExpression
    message: str
    field_path: str | None = None
    message_expression: CompiledExpression | None = None


@dataclass(frozen=True)
class CompiledObject:
    """A child object template: its identity and its values, each compiled CEL."""

    name: str
    api_version: str
    kind: str
    naming: str
    """JobNameSuffixed (`<job>-<suffix>`) or JobName (the job's own name)."""
    suffix: str
    """The machine's `suffix`, else its name."""
    when: CompiledExpression | None
    labels: Mapping[str, CompiledExpression]
    annotations: Mapping[str, CompiledExpression]
    fields: Mapping[str, CompiledExpression]
    update: str = "Replace"
    """Replace (rewritten when it renders differently) or Never (made once when missing)."""


@dataclass(frozen=True)
class CompiledChild:
    """A replica's child object (spec.child): its kind, where its template is, its values
    and the status expressions that make the replica's observation, each compiled CEL."""

    api_version: str
    kind: str
    template: str
    """The replica spec's field holding the child's `{metadata, spec}`."""
    name: CompiledExpression | None
    """None: `<job>-<type in lower case>-<index>`."""
    metadata: CompiledExpression | None
    """Labels and annotations as maps (`{labels, annotations}`), under the per-key ones."""
    labels: Mapping[str, CompiledExpression]
    annotations: Mapping[str, CompiledExpression]
    fields: Mapping[str, CompiledExpression]
    """Dotted path in the child -> the value the engine forces there."""
    status: Mapping[str, CompiledExpression]
    """ready, succeeded, failed, failureReason, failureMessage."""


@dataclass(frozen=True)
class CompiledSchedule:
    """A machine's schedule: the kind of child it makes, and its values (cron, timeZone,
    startingDeadlineSeconds, concurrencyPolicy, the history limits, and the child's
    labels, annotations and spec), each compiled CEL."""

    api_version: str
    kind: str
    values: Mapping[str, CompiledExpression]


@dataclass(frozen=True)
class CompiledRollout:
    """A machine's rollout: the kind of its revisions, and its values (replicas, selector,
    template, strategy, maxSurge, maxUnavailable, paused, minReadySeconds,
    revisionHistoryLimit, progressDeadlineSeconds), each compiled CEL."""

    api_version: str
    kind: str
    values: Mapping[str, CompiledExpression]


@dataclass(frozen=True)
class CompiledDefinition:
    """A whole definition, compiled once and shared by every job of its kind."""

    definition: MachineDefinition
    path: str
    job: CompiledMachine
    replica: CompiledMachine
    pod_env: Mapping[str, CompiledExpression]
    pod_labels: Mapping[str, CompiledExpression]
    pod_annotations: Mapping[str, CompiledExpression]
    pod_spec_fields: Mapping[str, CompiledExpression]
    services: tuple[ServiceSpec, ...]
    default_failure_rules: tuple[Mapping[str, Any], ...] = ()
    """The machine's failure rules as a job spec writes them (after the job's own)."""
    pod_volumes: CompiledExpression | None = None
    pod_volume_mounts: CompiledExpression | None = None
    pod_init_containers: CompiledExpression | None = None
    pod_command: CompiledExpression | None = None
    pod_restart_policy: str = "Never"
    """The pods' restartPolicy when the machine writes it out; else see the expression."""
    pod_restart_policy_expression: CompiledExpression | None = None
    pod_replacement_policy: str = "TerminatingOrFailed"
    """When a deleted pod is judged, when the machine writes it out; else the expression."""
    pod_replacement_policy_expression: CompiledExpression | None = None
    validations: tuple[CompiledValidation, ...] = ()
    objects: tuple[CompiledObject, ...] = ()
    status_fields: Mapping[str, CompiledExpression] = field(default_factory=dict)
    """With governs.statusLayout Native: the status fields the machine computes."""
    schedule: CompiledSchedule | None = None
    """Children made on a cron schedule (a CronJob's Jobs), if the machine has them."""
    rollout: CompiledRollout | None = None
    """Revisions of a template rolled out over children (a Deployment's ReplicaSets)."""
    child: CompiledChild | None = None
    """The replicas' child objects, when they are not pods (spec.child)."""
    references: Mapping[str, Mapping[str, CompiledExpression]] = field(default_factory=dict)
    """governs.references: name -> its apiVersion, kind, name and scope, each CEL over `job`."""
    source: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The document it was compiled from (bases merged in): what a revision stores."""

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def governs(self) -> Governs:
        return self.definition.governs


def compile_definition(loaded: LoadedDefinition) -> CompiledDefinition:
    """Compile one loaded definition; raises `DefinitionError` if it cannot run.

    Only what compilation needs is required here (defined names, valid CEL);
    `validate.load_definitions` also rejects graph problems such as loops.
    """
    table = compile_expressions(loaded)
    problems = [d for d in check_names(loaded) + table.diagnostics if d.is_error]
    if problems:
        raise DefinitionError(problems)
    spec = loaded.definition.spec
    pod_path: Path = ("spec", "pod")
    expressions = table.expressions
    return CompiledDefinition(
        definition=loaded.definition,
        path=loaded.path,
        job=_Builder(loaded, table, "job").machine(spec.job),
        replica=_Builder(loaded, table, "replica").machine(spec.replica),
        pod_env={k: table.expressions[(*pod_path, "env", k)] for k in spec.pod.env},
        pod_labels={k: table.expressions[(*pod_path, "labels", k)] for k in spec.pod.labels},
        pod_annotations={
            k: table.expressions[(*pod_path, "annotations", k)] for k in spec.pod.annotations
        },
        pod_spec_fields={
            k: table.expressions[(*pod_path, "specFields", k)] for k in spec.pod.spec_fields
        },
        services=tuple(spec.services),
        default_failure_rules=tuple(
            rule.model_dump(by_alias=True, exclude_none=True)
            for rule in spec.defaults.failure_rules
        ),
        pod_volumes=expressions.get((*pod_path, "volumes")),
        pod_volume_mounts=expressions.get((*pod_path, "volumeMounts")),
        pod_init_containers=expressions.get((*pod_path, "initContainers")),
        pod_command=expressions.get((*pod_path, "command")),
        pod_restart_policy=spec.pod.restart_policy,
        pod_restart_policy_expression=expressions.get((*pod_path, "restartPolicy")),
        pod_replacement_policy=spec.pod.replacement_policy,
        pod_replacement_policy_expression=expressions.get((*pod_path, "replacementPolicy")),
        validations=tuple(
            CompiledValidation(expressions[("spec", "validations", i, "rule")], rule.message,
                               rule.field_path,
                               expressions.get(("spec", "validations", i, "messageExpression")))
            for i, rule in enumerate(spec.validations)
        ),
        status_fields={k: expressions[("spec", "status", k)] for k in spec.status},
        objects=tuple(_object(expressions, i, child) for i, child in enumerate(spec.objects)),
        schedule=None if spec.schedule is None else CompiledSchedule(
            spec.schedule.child.api_version, spec.schedule.child.kind,
            {str(path[-1]): compiled for path, compiled in expressions.items()
             if path[:2] == ("spec", "schedule")}),
        rollout=None if spec.rollout is None else CompiledRollout(
            spec.rollout.child.api_version, spec.rollout.child.kind,
            {str(path[-1]): compiled for path, compiled in expressions.items()
             if path[:2] == ("spec", "rollout")}),
        child=_child(expressions, spec.child),
        references={
            name: {key: expressions[("spec", "governs", "references", name, key)]
                   for key in REFERENCE_FIELDS}
            for name in (spec.governs.references if spec.governs is not None else {})
        },
        source=loaded.data or {},
    )


def _child(expressions: Mapping[Path, CompiledExpression], child: ChildSpec | None
           ) -> CompiledChild | None:
    if child is None:
        return None
    path: Path = ("spec", "child")
    return CompiledChild(
        api_version=child.api_version,
        kind=child.kind,
        template=child.template,
        name=expressions.get((*path, "name")),
        metadata=expressions.get((*path, "metadata")),
        labels=_section(expressions, path, "labels", child.labels),
        annotations=_section(expressions, path, "annotations", child.annotations),
        fields=_section(expressions, path, "fields", child.fields),
        status={str(p[-1]): compiled for p, compiled in expressions.items()
                if p[:3] == (*path, "status")},
    )


def _object(
    expressions: Mapping[Path, CompiledExpression], index: int, child: ObjectSpec
) -> CompiledObject:
    path: Path = ("spec", "objects", index)
    return CompiledObject(
        name=child.name,
        api_version=child.api_version,
        kind=child.kind,
        naming=child.naming,
        suffix=child.suffix or child.name,
        when=expressions.get((*path, "when")),
        labels=_section(expressions, path, "labels", child.labels),
        annotations=_section(expressions, path, "annotations", child.annotations),
        fields=_section(expressions, path, "fields", child.fields),
        update=child.update,
    )


def _section(expressions: Mapping[Path, CompiledExpression], path: Path, section: str,
             keys: Iterable[str]) -> dict[str, CompiledExpression]:
    """Each key's compiled value of a section of values (labels, annotations, fields)."""
    return {key: expressions[(*path, section, key)] for key in keys}


class _Builder:
    def __init__(self, loaded: LoadedDefinition, table: ExpressionTable, level: Level) -> None:
        self.positions = loaded.positions
        self.table = table
        self.level = level
        self.base: Path = ("spec", level)

    def machine(self, spec: MachineSpec) -> CompiledMachine:
        states = {name: self._state(spec, name) for name in spec.states}
        compiled = tuple(
            self._transition(spec, i, t) for i, t in enumerate(spec.transitions)
        )
        machine = Machine(
            model=None, states=list(spec.states), initial=spec.initial, auto_transitions=False,
            send_event=True, ignore_invalid_triggers=True, name=f"{self.level}:",
        )
        # One event per possible set of observations, so that a trigger only walks the
        # transitions that set can enable (a step would otherwise pay `transitions`'
        # per-candidate cost for every transition whose observation does not hold).
        events = ObservationEvents(machine, compiled, possible_observation_sets(self.level))
        vocabulary = frozenset(observations_for(self.level))
        return CompiledMachine(
            self.level, spec.initial, states, compiled, machine, events, vocabulary,
            creation_event=spec.creation_event,
        )

    def _state(self, spec: MachineSpec, name: str) -> CompiledState:
        state = spec.states[name]
        path = (*self.base, "states", name)
        delay = state.requeue_after
        fixed = None if delay is None else parse_duration(delay)
        timeout = state.timeout
        fixed_timeout = None if timeout is None else parse_duration(timeout)
        if fixed_timeout is not None and fixed_timeout <= 0:
            fixed_timeout = None  # `timeout: 0` is no timeout, as an expression giving 0 is
        return CompiledState(
            name=name,
            phase=state.phase or name,
            terminal=state.terminal,
            condition=state.condition,
            condition_message=self.table.templates.get((*path, "condition", "message")),
            on_enter=self._actions((*path, "onEnter"), state.on_enter),
            requeue_seconds=fixed,
            requeue_expression=self.table.expressions.get((*path, "requeueAfter")),
            timeout_seconds=fixed_timeout,
            timeout_expression=self.table.expressions.get((*path, "timeout")),
            hold_replicas=state.hold_replicas
            or (self.level == "job" and state.terminal is not None),
        )

    def _transition(self, spec: MachineSpec, index: int, t: TransitionSpec) -> CompiledTransition:
        path = (*self.base, "transitions", index)
        failure = spec.states[t.to].terminal == "failure"
        return CompiledTransition(
            index=index,
            sources=tuple(expand_sources(spec, t)),
            target=t.to,
            on=t.on,
            guard=self.table.expressions.get((*path, "when")),
            actions=self._actions((*path, "actions"), t.actions),
            reason=t.reason or t.to,
            message=self.table.templates.get((*path, "message")),
            event_type=t.type or ("Warning" if failure else "Normal"),
            silent=t.silent,
        )

    def _actions(self, base: Path, actions: list[ActionSpec]) -> tuple[CompiledAction, ...]:
        known = actions_for(self.level)
        compiled: list[CompiledAction] = []
        for index, action in enumerate(actions):
            args_path = action_path(self.positions, base, index, action)
            kinds = {arg.name: arg.kind for arg in known[action.name].args}
            literals = {k: _text(v) for k, v in action.args.items() if kinds[k] == "string"}
            expressions = {k: self.table.expressions[(*args_path, k)]
                           for k in action.args if kinds[k] == "cel"}
            templates = {k: self.table.templates[(*args_path, k)]
                         for k in action.args if kinds[k] == "template"}
            compiled.append(CompiledAction(action.name, literals, expressions, templates))
        return tuple(compiled)


def _text(value: Any) -> str:
    return ("True" if value else "False") if isinstance(value, bool) else str(value)


def _condition(transition: CompiledTransition) -> Callable[[EventData], bool]:
    """The `transitions` condition: the observation holds and the guard is true."""
    on, guard = transition.on, transition.guard

    def enabled(event: EventData) -> bool:
        context = _context(event)
        if on is not None and on not in context.observations:
            return False
        if guard is None:
            return True
        try:
            value = guard.evaluate(context.variables)
        except Exception as exc:
            # A guard that cannot be evaluated is false, and said so in the result.
            context.errors.append(f"transition {transition.index + 1} guard: {exc}")
            return False
        if not isinstance(value, bool):
            context.errors.append(
                f"transition {transition.index + 1} guard gave {value!r}, not a bool"
            )
            return False
        return value

    return enabled


def _recorder(transition: CompiledTransition) -> Callable[[EventData], None]:
    def record(event: EventData) -> None:
        _context(event).fired = transition

    return record


def _context(event: EventData) -> StepContext:
    return cast(StepContext, event.model)
