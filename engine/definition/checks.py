"""The static checks of `jobmachine validate`: what a definition means, not its shape.

The schema says a definition is well-formed; these checks say it can run:
every name exists at its level, every state is reachable and can be left,
terminal states stay terminal, and no transitions can loop by themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.definition.durations import looks_like_duration, parse_duration
from engine.definition.edges import (
    WILDCARD,
    edges,
    expand_sources,
    guard_only_cycles,
    reachable,
)
from engine.definition.errors import Diagnostic, error, name_list, warning
from engine.definition.expressions import action_path
from engine.definition.loader import LoadedDefinition
from engine.definition.positions import Path, PositionIndex
from engine.definition.schema import ActionSpec, ConditionSpec, MachineSpec, TransitionSpec
from engine.definition.vocabulary import ACTIONS, OBSERVATIONS, Level, actions_for, observations_for

CAMEL_CASE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
LEVELS: tuple[Level, Level] = ("job", "replica")


def check_names(loaded: LoadedDefinition) -> list[Diagnostic]:
    """Problems with names and values: what a definition needs to be compiled at all."""
    found: list[Diagnostic] = []
    for level in LEVELS:
        found += _checks(loaded, level).names()
    found += _service_checks(loaded)
    found += _object_checks(loaded)
    found += _child_field_checks(loaded)
    return found


def check_graph(loaded: LoadedDefinition) -> list[Diagnostic]:
    """Problems of the state graphs: unreachable or dead-end states, loops, dead transitions."""
    found: list[Diagnostic] = []
    for level in LEVELS:
        found += _checks(loaded, level).graph()
    return found


def _checks(loaded: LoadedDefinition, level: Level) -> _MachineChecks:
    spec = loaded.definition.spec
    replicas_are = "child" if spec.child is not None else "pod"
    return _MachineChecks(loaded.positions, getattr(spec, level), level,
                          replicas_are=replicas_are if level == "replica" else None)


def check_together(definitions: list[LoadedDefinition]) -> list[Diagnostic]:
    """Problems between definitions: one name, or one governed kind, defined twice."""
    found: list[Diagnostic] = []
    names: dict[str, LoadedDefinition] = {}
    kinds: dict[tuple[str, str], LoadedDefinition] = {}
    for loaded in definitions:
        first = names.setdefault(loaded.name, loaded)
        if first is not loaded:
            where = first.positions.value(("metadata", "name"))
            found.append(error(loaded.positions.value(("metadata", "name")),
                               f"definition '{loaded.name}' is already defined at {where}"))
        if loaded.abstract:
            continue
        governs = loaded.definition.governs
        kind = (governs.api_version, governs.kind)
        first = kinds.setdefault(kind, loaded)
        if first is not loaded:
            found.append(error(loaded.positions.value(("spec", "governs")),
                               f"{kind[0]} {kind[1]} is already governed by definition "
                               f"'{first.name}' ({first.positions.value(('spec', 'governs'))})"))
    return found


class _MachineChecks:
    """The checks of one level (job or replica) of one definition."""

    def __init__(self, positions: PositionIndex, machine: MachineSpec, level: Level, *,
                 replicas_are: str | None = None) -> None:
        self.positions = positions
        self.machine = machine
        self.level = level
        self.replicas_are = replicas_are
        """`pod` or `child` (spec.child) at the replica level: the other's words are refused."""
        self.base: Path = ("spec", level)
        self.found: list[Diagnostic] = []

    def names(self) -> list[Diagnostic]:
        self._initial()
        for name in self.machine.states:
            self._state(name)
        named: dict[str, int] = {}
        for index, transition in enumerate(self.machine.transitions):
            self._transition(index, transition)
            if transition.name is not None:
                first = named.setdefault(transition.name, index)
                if first != index:
                    line = self.positions.value((*self.base, "transitions", first)).line
                    self._error((*self.base, "transitions", index, "name"),
                                f"transition name '{transition.name}' is already used "
                                f"(line {line}): names identify transitions for machines "
                                "that extend this one")
        return self.found

    def graph(self) -> list[Diagnostic]:
        self._graph()
        self._shadowed()
        return self.found

    def _error(self, path: Path, message: str, *, key: bool = False) -> None:
        position = self.positions.key(path) if key else self.positions.value(path)
        self.found.append(error(position, message))

    @property
    def _condition_types(self) -> set[str]:
        return {s.condition.type for s in self.machine.states.values() if s.condition is not None}

    @property
    def _state_names(self) -> str:
        return name_list(self.machine.states)

    def _initial(self) -> None:
        if self.machine.initial not in self.machine.states:
            self._error((*self.base, "initial"),
                        f"initial state '{self.machine.initial}' is not defined; "
                        f"states: {self._state_names}")

    def _state(self, name: str) -> None:
        path = (*self.base, "states", name)
        state = self.machine.states[name]
        if self.level == "replica" and state.condition is not None:
            self._error((*path, "condition"), "'condition' is not allowed at replica level "
                        "(conditions live on the job): use the setCondition action", key=True)
        if self.level == "replica" and state.hold_replicas:
            self._error((*path, "holdReplicas"), "'holdReplicas' is only allowed at job level",
                        key=True)
        if self.level == "replica" and state.steady:
            self._error((*path, "steady"), "'steady' is only allowed at job level: a replica "
                        "that runs for ever stays in a state with a transition out", key=True)
        if state.steady and state.terminal is not None:
            self._error((*path, "steady"), "a terminal state ends the job; 'steady' is for a "
                        "state the job rests in without ending", key=True)
        if state.condition is not None and state.condition.reason is not None:
            self._reason((*path, "condition", "reason"), state.condition.reason)
        self._actions((*path, "onEnter"), state.on_enter)
        for field, delay in (("timeout", state.timeout), ("requeueAfter", state.requeue_after)):
            is_bad_text = isinstance(delay, str) and looks_like_duration(delay)
            if delay is not None and (is_bad_text or isinstance(delay, int)) and (
                parse_duration(delay) is None
            ):
                self._error((*path, field), _bad_duration(field, delay))
        condition = state.condition
        if condition is not None:
            self._replaced((*path, "condition", "replaces"), condition)
        copied = condition.source if condition is not None else None
        if condition is None or copied is None:
            return
        option = "moveFrom" if condition.move_from is not None else "copyFrom"
        if copied not in self._condition_types:
            self._error((*path, "condition", option),
                        f"{option} '{copied}' is not a condition any state of this machine sets; "
                        f"conditions: {name_list(sorted(self._condition_types))}")
        if condition.reason is not None or condition.message is not None:
            self._error((*path, "condition", option),
                        f"a condition with {option} takes its reason and message from "
                        f"'{copied}': remove its own 'reason' and 'message'")
        if copied == condition.type:
            self._error((*path, "condition", option),
                        f"{option} names the condition's own type '{copied}'")

    def _replaced(self, path: Path, condition: ConditionSpec) -> None:
        """`replaces` names conditions of this machine, other than the state's own."""
        for index, replaced in enumerate(condition.replaces):
            if replaced == condition.type:
                self._error((*path, index), f"replaces names the condition's own type "
                            f"'{replaced}'")
            elif replaced not in self._condition_types:
                self._error((*path, index),
                            f"replaces '{replaced}', which is not a condition any state of "
                            f"this machine sets; conditions: "
                            f"{name_list(sorted(self._condition_types))}")

    def _reason(self, path: Path, reason: str) -> None:
        if "${" in reason:
            self._error(path, f"reason '{reason}' is a word, not a template: the only "
                        "placeholder a reason may hold is ${job.kind} (the kind the machine "
                        "governs)")
        elif not CAMEL_CASE.match(reason):
            self._error(path, f"reason '{reason}' must be CamelCase (a capital letter, "
                        "then letters and digits)")

    def _transition(self, index: int, transition: TransitionSpec) -> None:
        path = (*self.base, "transitions", index)
        self._sources(path, transition)
        if transition.to not in self.machine.states:
            self._error((*path, "to"), f"undefined state '{transition.to}' in 'to'; "
                        f"states: {self._state_names}")
        if transition.on is not None:
            self._observation((*path, "on"), transition.on)
        if transition.reason is not None:
            self._reason((*path, "reason"), transition.reason)
        self._actions((*path, "actions"), transition.actions)

    def _sources(self, path: Path, transition: TransitionSpec) -> None:
        if WILDCARD in transition.source and not transition.is_wildcard:
            self._error((*path, "from"), "'*' (every non-terminal state) must be the only "
                        "entry of 'from'")
            return
        if transition.is_wildcard:
            return
        seen: set[str] = set()
        for k, name in enumerate(transition.source):
            item = (*path, "from", k)
            state = self.machine.states.get(name)
            if state is None:
                self._error(item, f"undefined state '{name}' in 'from'; "
                            f"states: {self._state_names}")
            elif state.terminal is not None:
                self._error(item, f"transition out of terminal state '{name}': a terminal "
                            "state has no transitions out")
            if name in seen:
                self.found.append(warning(self.positions.value(item),
                                          f"state '{name}' is listed twice in 'from'"))
            seen.add(name)

    def _observation(self, path: Path, name: str) -> None:
        here = observations_for(self.level)
        if name in here:
            self._replica_word(path, name, here[name].group)
            return
        valid = f"{self.level} observations are: {name_list(here)}"
        elsewhere = [o.level for o in OBSERVATIONS if o.name == name]
        if elsewhere:
            self._error(path, f"'{name}' is a {elsewhere[0]} observation; {valid}")
        else:
            self._error(path, f"unknown observation '{name}'; {valid}")

    def _actions(self, base: Path, actions: list[ActionSpec]) -> None:
        known = actions_for(self.level)
        for index, action in enumerate(actions):
            spec = known.get(action.name)
            if spec is None:
                self._unknown_action((*base, index), action.name)
                continue
            self._replica_word((*base, index), action.name, spec.acts_on)
            args_path = action_path(self.positions, base, index, action)
            allowed = {arg.name: arg for arg in spec.args}
            for name, value in action.args.items():
                arg = allowed.get(name)
                if arg is None:
                    self._error((*args_path, name), f"action '{action.name}' has no argument "
                                f"'{name}'; arguments: {name_list(allowed)}", key=True)
                elif arg.choices and _text(value) not in arg.choices:
                    self._error((*args_path, name), f"argument '{name}' of '{action.name}' must "
                                f"be one of: {name_list(arg.choices)} (got {value!r})")
                elif arg.kind != "string" and not isinstance(value, str):
                    what = "a CEL expression" if arg.kind == "cel" else "a template"
                    self._error((*args_path, name), f"argument '{name}' of '{action.name}' must "
                                f"be a string ({what})")
                elif name == "reason" and isinstance(value, str) and not (
                        arg.kind == "template" and "${" in value):
                    # A literal reason is a CamelCase word; a templated one (setCondition,
                    # event) is judged when rendered.
                    self._reason((*args_path, name), value)
            for arg in spec.args:
                if arg.required and arg.name not in action.args:
                    self._error((*base, index),
                                f"action '{action.name}' needs argument '{arg.name}'")

    def _replica_word(self, path: Path, name: str, about: str | None) -> None:
        """A pod's word in a machine whose replicas are children, or the reverse."""
        if self.replicas_are is None or about not in ("pod", "child") or about == self.replicas_are:
            return
        if about == "child":
            self._error(path, f"'{name}' is about a replica's child object, and this machine's "
                        "replicas are pods: add a spec.child section to make them objects of "
                        "another kind")
        else:
            self._error(path, f"'{name}' is about a replica's pod, and this machine's replicas "
                        "are children (spec.child): use childMissing, childPending, childReady, "
                        "childSucceeded, childFailed, childGone, createChild and deleteChild")

    def _unknown_action(self, path: Path, name: str) -> None:
        valid = f"{self.level} actions are: {name_list(actions_for(self.level))}"
        if any(a.name == name for a in ACTIONS):
            self._error(path, f"'{name}' is not a {self.level} action; {valid}")
        else:
            self._error(path, f"unknown action '{name}'; {valid}")

    def _graph(self) -> None:
        alive = reachable(self.machine)
        leaving = {source for source, _, _ in edges(self.machine)}
        for name, state in self.machine.states.items():
            path = (*self.base, "states", name)
            if name not in alive:
                self._error(path, f"state '{name}' is unreachable from the initial state "
                            f"'{self.machine.initial}'", key=True)
            if state.terminal is None and not state.steady and name not in leaving:
                self._error(path, f"state '{name}' is not terminal but has no transition to "
                            "another state: mark it terminal (success or failure) or steady "
                            "(a job level state it may rest in for ever), or add one",
                            key=True)
        for cycle in guard_only_cycles(self.machine, self.level):
            loop = " -> ".join((*cycle.states, cycle.states[0]))
            used = sorted({o for i in cycle.transitions
                           if (o := self.machine.transitions[i].on) is not None})
            when = f"while {name_list(used)} hold" if used else "with no observation needed"
            lines = name_list(str(self.positions.value((*self.base, "transitions", i)).line)
                              for i in cycle.transitions)
            self._error((*self.base, "transitions", cycle.transitions[0]),
                        f"transitions can loop without the world changing: {loop} "
                        f"({when}; transitions at lines {lines}); guards are not taken into "
                        "account: make one of these transitions wait for an observation")

    def _shadowed(self) -> None:
        for index, transition in enumerate(self.machine.transitions):
            sources = expand_sources(self.machine, transition)
            winners = [self._winner(source, index) for source in sources]
            first = winners[0] if winners else None
            if first is not None and all(w is not None for w in winners):
                line = self.positions.value((*self.base, "transitions", first)).line
                self.found.append(warning(
                    self.positions.value((*self.base, "transitions", index)),
                    "this transition can never fire: an earlier transition from the same "
                    f"state with no 'when' (line {line}) always wins",
                ))

    def _winner(self, source: str, index: int) -> int | None:
        """An earlier transition from `source` that always fires before transition `index`."""
        on = self.machine.transitions[index].on
        for earlier, transition in enumerate(self.machine.transitions[:index]):
            always = transition.when is None and transition.on in (None, on)
            if always and source in expand_sources(self.machine, transition):
                return earlier
        return None


def _service_checks(loaded: LoadedDefinition) -> Iterator[Diagnostic]:
    spec = loaded.definition.spec
    types = loaded.definition.governs.replica_types
    if types is None:
        return
    for i, service in enumerate(spec.services):
        for k, name in enumerate(service.replica_types):
            if name != WILDCARD and name not in types:
                yield error(loaded.positions.value(("spec", "services", i, "replicaTypes", k)),
                            f"unknown replica type '{name}'; replica types: {name_list(types)}")


_OBJECT_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def _object_checks(loaded: LoadedDefinition) -> Iterator[Diagnostic]:
    """Child objects: one name each, one API name per kind (`<job>-<suffix>`, or the job's
    own name), and `fields` that leave type and metadata to the engine."""
    seen: dict[str, int] = {}
    suffixed: dict[tuple[str, str, str], int] = {}
    named_like_job: dict[tuple[str, str], int] = {}
    for index, spec in enumerate(loaded.definition.spec.objects):
        path = ("spec", "objects", index)
        first = seen.setdefault(spec.name, index)
        if first != index:
            yield error(loaded.positions.value((*path, "name")),
                        f"object name '{spec.name}' is already used by objects[{first}]: each "
                        "object of a job has its own name")
        if spec.naming == "JobNameSuffixed":
            suffix = spec.suffix or spec.name
            first = suffixed.setdefault((spec.api_version, spec.kind, suffix), index)
            if first != index:
                yield error(loaded.positions.value((*path, "suffix" if spec.suffix else "name")),
                            f"objects[{first}] is already a {spec.kind} ({spec.api_version}) "
                            f"named <job>-{suffix}: two would have the same name")
        if spec.naming == "JobName":
            first = named_like_job.setdefault((spec.api_version, spec.kind), index)
            if first != index:
                yield error(loaded.positions.value((*path, "naming")),
                            f"objects[{first}] is already a {spec.kind} ({spec.api_version}) "
                            "named like the job: two would have the same name")
        for field in _OBJECT_ROOT_FIELDS:
            if field in spec.fields:
                yield error(loaded.positions.key((*path, "fields", field)),
                            f"'{field}' is set by the engine (from apiVersion, kind and name, "
                            "labels and annotations), not by 'fields'")


_FIELD_PATH = re.compile(r"^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$")


def _child_field_checks(loaded: LoadedDefinition) -> Iterator[Diagnostic]:
    """spec.child's fields: dotted paths of plain names that leave type and metadata to
    the engine (labels and annotations have their own sections)."""
    child = loaded.definition.spec.child
    for path in child.fields if child is not None else ():
        where = loaded.positions.key(("spec", "child", "fields", path))
        if not _FIELD_PATH.match(path):
            yield error(where, f"'{path}' is not a dotted path of field names (spec.suspend)")
        elif path.split(".")[0] in _OBJECT_ROOT_FIELDS:
            yield error(where, f"'{path}' is set by the engine (from apiVersion, kind, name, "
                        "labels and annotations), not by 'fields'")


def _text(value: object) -> str:
    """An argument as the text it stands for (`status: True` is YAML's boolean)."""
    return ("True" if value else "False") if isinstance(value, bool) else str(value)


def _bad_duration(field: str, value: object) -> str:
    return (f"'{field}' must be a duration such as 500ms, 30s, 10m or 1h30m, or a whole "
            f"number of seconds (got {value!r})")
