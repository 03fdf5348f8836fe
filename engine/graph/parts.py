"""What a picture of a machine shows, whatever the output format.

DOT and Mermaid draw the same nodes and arrows with the same words; this module
decides them once (which machines, in which order, what each label says, which
arrows a recorded path went through) so the two formats cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from engine.definition.schema import ActionSpec, MachineDefinition, MachineSpec, StateSpec
from engine.definition.vocabulary import ACTIONS, Level
from engine.graph.path import Highlight

DrawLevel = Literal["job", "replica", "all"]
DRAW_LEVELS: tuple[DrawLevel, ...] = ("job", "replica", "all")
StateKind = Literal["initial", "normal", "success", "failure"]

WILDCARD = "*"
GUARD_WIDTH = 44
ARG_WIDTH = 24
# Arguments worth a place on a picture: required ones and short enumerations;
# free text (reasons, message templates) would drown the shape of the machine.
_SHOWN_ARGS = frozenset(
    (action.name, arg.name)
    for action in ACTIONS
    for arg in action.args
    if arg.required or arg.choices
)


@dataclass(frozen=True)
class Node:
    """One state (or the wildcard pseudo-state) of one machine."""

    level: Level
    name: str
    kind: StateKind
    lines: tuple[str, ...]
    visits: int | None  # None: no highlight; else how often the recorded path entered it


@dataclass(frozen=True)
class Arrow:
    """One transition: its drawn sources (state names or WILDCARD), target and label."""

    level: Level
    index: int  # position in the file's transition list
    sources: tuple[str, ...]
    target: str
    lines: tuple[str, ...]
    # None: no highlight; else, per source, how often the recorded path took it from there
    counts: tuple[int, ...] | None

    @property
    def total(self) -> int | None:
        return None if self.counts is None else sum(self.counts)


@dataclass(frozen=True)
class Picture:
    """One machine ready to draw: nodes in layout order, the start arrow's count, arrows."""

    level: Level
    initial: str
    start_count: int | None
    nodes: tuple[Node, ...]
    arrows: tuple[Arrow, ...]

    def kind_of(self, name: str) -> StateKind:
        return next((n.kind for n in self.nodes if n.name == name), "normal")


def counted(count: int | None, lines: tuple[str, ...]) -> tuple[str, ...]:
    """Label lines, led by `Nx` when a highlighted path took the arrow N times."""
    return (f"{count}x", *lines) if count else lines


def node_lines(node: Node) -> tuple[str, ...]:
    """A node's label lines, ending with `entered Nx` when a highlighted path entered it."""
    return (*node.lines, f"entered {node.visits}x") if node.visits else node.lines


def levels_of(level: DrawLevel) -> tuple[Level, ...]:
    if level not in DRAW_LEVELS:
        raise ValueError(f"unknown level {level!r}; levels are: {', '.join(DRAW_LEVELS)}")
    return ("job", "replica") if level == "all" else (level,)


def pictures(
    definition: MachineDefinition, level: DrawLevel, highlight: Highlight | None = None
) -> tuple[Picture, ...]:
    """The machines `level` asks for, job before replica."""
    spec = definition.spec
    return tuple(
        picture(one, spec.job if one == "job" else spec.replica, highlight)
        for one in levels_of(level)
    )


def picture(level: Level, machine: MachineSpec, highlight: Highlight | None) -> Picture:
    nodes = [_node(level, name, machine, highlight) for name in state_order(machine)]
    nodes += [
        Node(level, name, "normal", (name, "(not defined)"), None) for name in _undefined(machine)
    ]
    if any(t.is_wildcard for t in machine.transitions):
        nodes.append(Node(level, WILDCARD, "normal", ("any non-terminal state",), None))
    counts = _arrow_counts(level, machine, highlight)
    arrows = []
    for index, t in enumerate(machine.transitions):
        sources = tuple(dict.fromkeys(t.source))
        per_source = None
        if highlight is not None:
            per_source = tuple(counts.get((index, source), 0) for source in sources)
        lines = edge_lines(t.on, t.when, t.actions)
        arrows.append(Arrow(level, index, sources, t.to, lines, per_source))
    start = None
    if highlight is not None:
        start = highlight.fired.get((level, None, machine.initial, machine.initial), 0)
    return Picture(level, machine.initial, start, tuple(nodes), tuple(arrows))


def state_order(machine: MachineSpec) -> list[str]:
    """States breadth-first from the initial one, following transitions in file order.

    Wildcard targets (usually the terminal states) follow, then states nothing
    reaches, by name. The order depends on the machine's meaning, not on how its
    YAML mapping is ordered, so the same machine always gives the same layout.
    """
    order: list[str] = [machine.initial] if machine.initial in machine.states else []
    for state in order:
        for t in machine.transitions:
            if state in t.source and t.to in machine.states and t.to not in order:
                order.append(t.to)
    for t in machine.transitions:
        if t.is_wildcard and t.to in machine.states and t.to not in order:
            order.append(t.to)
    return order + sorted(set(machine.states) - set(order))


def state_kind(name: str, machine: MachineSpec) -> StateKind:
    spec = machine.states[name]
    if spec.terminal is not None:
        return spec.terminal
    return "initial" if name == machine.initial else "normal"


def state_lines(name: str, spec: StateSpec) -> tuple[str, ...]:
    """The state's name, then what it does: phase, condition, hold, timers, onEnter."""
    lines = [name]
    if spec.phase is not None and spec.phase != name:
        lines.append(f"phase: {spec.phase}")
    if spec.condition is not None:
        lines.append(f"condition: {spec.condition.type}")
    if spec.hold_replicas:
        lines.append("holds replicas")
    if spec.requeue_after is not None:
        lines.append(f"requeue: {shorten(str(spec.requeue_after), ARG_WIDTH)}")
    if spec.timeout is not None:
        lines.append(f"timeout: {spec.timeout}")
    if spec.on_enter:
        lines.append("enter / " + ", ".join(action_text(a) for a in spec.on_enter))
    return tuple(lines)


def edge_lines(on: str | None, when: str | None, actions: list[ActionSpec]) -> tuple[str, ...]:
    """Observation, shortened guard in brackets, then `/ actions` (UML's event [guard] / effect)."""
    lines = []
    if on is not None:
        lines.append(on)
    if when is not None:
        lines.append(f"[{shorten(when, GUARD_WIDTH)}]")
    if actions:
        lines.append("/ " + ", ".join(action_text(a) for a in actions))
    return tuple(lines)


def action_text(action: ActionSpec) -> str:
    """`name`, or `name(arg=value, ...)` for its required and enumerated arguments."""
    args = [
        f"{key}={shorten(str(value), ARG_WIDTH)}"
        for key, value in sorted(action.args.items())
        if (action.name, key) in _SHOWN_ARGS
    ]
    return f"{action.name}({', '.join(args)})" if args else action.name


def shorten(text: str, width: int) -> str:
    """One line of at most `width` characters, whitespace collapsed, `…` where cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _node(level: Level, name: str, machine: MachineSpec, highlight: Highlight | None) -> Node:
    visits = None if highlight is None else highlight.visited.get((level, name), 0)
    kind = state_kind(name, machine)
    return Node(level, name, kind, state_lines(name, machine.states[name]), visits)


def _arrow_counts(
    level: Level, machine: MachineSpec, highlight: Highlight | None
) -> dict[tuple[int, str], int]:
    """How often each (transition index, drawn source) was taken on the recorded path.

    A history entry names source, target and reason but not the transition, so
    it is credited to the first transition in file order that could have made
    it, as the step function would have picked that one.
    """
    if highlight is None:
        return {}
    credited: dict[tuple[str, str, str], tuple[int, str]] = {}
    for index, t in enumerate(machine.transitions):
        for drawn, source in _sources(t.source, machine):
            credited.setdefault((source, t.to, t.reason or t.to), (index, drawn))
    counts: dict[tuple[int, str], int] = {}
    for (source, target, reason), at in credited.items():
        taken = highlight.fired.get((level, source, target, reason), 0)
        if taken:
            counts[at] = counts.get(at, 0) + taken
    return counts


def _sources(sources: list[str], machine: MachineSpec) -> Iterator[tuple[str, str]]:
    """(drawn source, concrete source) pairs: the wildcard stands for every non-terminal state."""
    for drawn in dict.fromkeys(sources):
        if drawn != WILDCARD:
            yield drawn, drawn
            continue
        for name in state_order(machine):
            if not machine.states[name].terminal:
                yield WILDCARD, name


def _undefined(machine: MachineSpec) -> list[str]:
    """States a transition or `initial` names that the machine does not define (drawn anyway)."""
    named = {machine.initial} | {t.to for t in machine.transitions}
    named |= {s for t in machine.transitions for s in t.source if s != WILDCARD}
    return sorted(named - set(machine.states))
