"""What a picture of a machine shows, whatever the output format.

DOT and Mermaid draw the same nodes and arrows with the same words; this module
decides them once (which machines, in which order, what each label says, which
arrows a recorded path went through) so the two formats cannot disagree.
Labels are kept short so a picture reads at screen width: an arrow stands for
every transition between the same states and is labelled with their reasons;
the full `observation [guard] / actions` text is each arrow's detail (a tooltip).
Long text is wrapped onto more lines, never cut. Each machine's happy path (the
run in which nothing goes wrong) is found here too, so that it can be drawn as
one straight line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from engine.definition.schema import (
    ActionSpec,
    MachineDefinition,
    MachineSpec,
    StateSpec,
    TransitionSpec,
)
from engine.definition.vocabulary import ACTIONS, Level
from engine.graph.path import Highlight

DrawLevel = Literal["job", "replica", "all"]
DRAW_LEVELS: tuple[DrawLevel, ...] = ("job", "replica", "all")
StateKind = Literal["initial", "normal", "success", "failure"]

WILDCARD = "*"
# A label line holds several reasons (a state's line several actions) up to this many
# characters, so that no label widens the picture much more than a state's name does.
LABEL_WIDTH = 30
STATE_WIDTH = 36
_JOINTS = re.compile(r"(?<=[.(,])(?=.)")
_PATHS_TRIED = 10_000
"""The happy path search stops after trying this many paths (machines have a few dozen)."""
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
class Transition:
    """One transition as an arrow shows it: a short text on the label, the full text as detail."""

    index: int  # position in the file's transition list
    text: str  # the reason, else `on OBSERVATION`, else the name, else the guard; may be ""
    detail: str  # `name: observation [guard] / actions -> reason`
    # None: no highlight; else, per source of its arrow, how often the recorded path took it
    counts: tuple[int, ...] | None


@dataclass(frozen=True)
class Arrow:
    """Every transition from the same drawn sources (state names or WILDCARD) to one target."""

    level: Level
    index: int  # the first transition's position in the file's list
    sources: tuple[str, ...]
    target: str
    transitions: tuple[Transition, ...]  # in file order, which is the order they are tried

    @property
    def counts(self) -> tuple[int, ...] | None:
        """Per source, how often the recorded path took any of the transitions; None: no path."""
        per_transition = [one.counts for one in self.transitions if one.counts is not None]
        if not per_transition:
            return None
        return tuple(sum(column) for column in zip(*per_transition, strict=True))

    @property
    def total(self) -> int | None:
        return None if self.counts is None else sum(self.counts)

    def label(self, source: int | None = None) -> tuple[str, ...]:
        """The label lines: each transition's text once, several to a line up to LABEL_WIDTH.

        On a path picture an arrow the path took names only the transitions taken
        (from `source`, an index into `sources`, when given), each led by how
        often: `2x PodFailed`; an arrow it did not take keeps its plain text.
        """
        taken: dict[str, int] = {}
        for one in self.transitions:
            count = 0
            if one.counts is not None:
                count = one.counts[source] if source is not None else sum(one.counts)
            if count:
                taken[one.text] = taken.get(one.text, 0) + count
        if taken:
            return wrap([f"{count}x {text}".rstrip() for text, count in taken.items()], LABEL_WIDTH)
        texts = dict.fromkeys(one.text for one in self.transitions if one.text)
        return wrap(list(texts), LABEL_WIDTH)

    def detail(self) -> str:
        """The full text of every transition, one a line, for a tooltip."""
        return "\n".join(one.detail for one in self.transitions)


@dataclass(frozen=True)
class Picture:
    """One machine ready to draw: nodes in layout order, the start arrow's count, arrows,
    and the happy path (states from the initial one to a success state; may be empty)."""

    level: Level
    initial: str
    start_count: int | None
    nodes: tuple[Node, ...]
    arrows: tuple[Arrow, ...]
    happy: tuple[str, ...] = ()

    def kind_of(self, name: str) -> StateKind:
        return next((n.kind for n in self.nodes if n.name == name), "normal")


def counted(count: int | None, lines: tuple[str, ...]) -> tuple[str, ...]:
    """Label lines, led by `Nx` when a highlighted path took the arrow N times."""
    return (f"{count}x", *lines) if count else lines


def node_lines(node: Node) -> tuple[str, ...]:
    """A node's label lines; on a path picture `entered Nx` ends them, and a state the path
    never entered shows its name only, so the path stands out."""
    if node.visits is None:
        return node.lines
    return (*node.lines, f"entered {node.visits}x") if node.visits else node.lines[:1]


def wrap(parts: list[str], width: int) -> tuple[str, ...]:
    """`parts` joined by `, ` into lines of at most `width` characters; a longer part is
    wrapped onto lines of its own."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += ", " + part
        else:
            lines.extend(wrap_text(part, width))
    return tuple(lines)


def wrap_text(text: str, width: int) -> tuple[str, ...]:
    """`text`, whitespace collapsed, on lines of at most `width` characters: broken at
    spaces, a longer word after a `.`, `(` or `,` (an expression's natural joints), what
    is still longer in pieces; nothing left out."""
    pieces: list[tuple[str, str]] = []  # (what joins it to the piece before, the piece)
    for word in text.split():
        parts = _JOINTS.split(word) if len(word) > width else [word]
        pieces += [(" " if number == 0 else "", part) for number, part in enumerate(parts)]
    lines: list[str] = []
    for glue, piece in pieces:
        if lines and len(lines[-1]) + len(glue) + len(piece) <= width:
            lines[-1] += glue + piece
        else:
            lines += [piece[at:at + width] for at in range(0, len(piece), width)]
    return tuple(lines) or ("",)


def levels_of(level: DrawLevel) -> tuple[Level, ...]:
    if level not in DRAW_LEVELS:
        raise ValueError(f"unknown level {level!r}; levels are: {', '.join(DRAW_LEVELS)}")
    return ("job", "replica") if level == "all" else (level,)


def pictures(
    definition: MachineDefinition, level: DrawLevel, highlight: Highlight | None = None
) -> tuple[Picture, ...]:
    """The machines `level` asks for, job before replica (a kind without pods has only a
    job machine, unless its replica machine is asked for alone)."""
    spec = definition.spec
    podless = spec.governs is not None and spec.governs.replica_types == []
    return tuple(
        picture(one, spec.job if one == "job" else spec.replica, highlight)
        for one in levels_of(level)
        if not (podless and one == "replica" and level == "all")
    )


def picture(level: Level, machine: MachineSpec, highlight: Highlight | None) -> Picture:
    nodes = [_node(level, name, machine, highlight) for name in state_order(machine)]
    nodes += [
        Node(level, name, "normal", (name, "(not defined)"), None) for name in _undefined(machine)
    ]
    if any(t.is_wildcard for t in machine.transitions):
        nodes.append(Node(level, WILDCARD, "normal", ("any non-terminal state",), None))
    start = None
    if highlight is not None:
        start = highlight.fired.get((level, None, machine.initial, machine.initial), 0)
    arrows = tuple(_arrows(level, machine, highlight))
    return Picture(level, machine.initial, start, tuple(nodes), arrows, happy_path(machine))


def happy_path(machine: MachineSpec) -> tuple[str, ...]:
    """The run in which nothing goes wrong: from the initial state to a success state.

    Of the simple paths there, the longest that never loops back (no state on it has a
    transition to an earlier one but the initial state: going back to the start is how a
    run begins again, going back elsewhere is a retry loop), and of those the one whose
    transitions apply to the fewest states (a transition from one state is the flow, one
    from many is a rule for trouble). Shortcuts such as `Pending -> Succeeded` lose to
    `Pending -> Running -> Succeeded` by length. Empty when no success state is reachable.
    """
    steps: dict[str, dict[str, int]] = {}
    for t in machine.transitions:
        for source in t.source:
            if source not in (WILDCARD, t.to) and t.to in machine.states:
                into = steps.setdefault(source, {})
                into[t.to] = min(into.get(t.to, len(t.source)), len(t.source))
    success = {name for name, spec in machine.states.items() if spec.terminal == "success"}
    best: tuple[tuple[int, int], tuple[str, ...]] = ((0, 0), ())
    tried = 0
    todo: list[tuple[tuple[str, ...], int]] = (
        [((machine.initial,), 0)] if machine.initial in machine.states else [])
    while todo and tried < _PATHS_TRIED:
        path, cost = todo.pop()
        tried += 1
        if path[-1] in success:
            best = max(best, ((len(path), -cost), path), key=lambda found: found[0])
            continue
        for target, sources in reversed(steps.get(path[-1], {}).items()):
            loops_back = any(earlier in path[1:] for earlier in steps.get(target, {}))
            if target not in path and not loops_back:
                todo.append(((*path, target), cost + sources))
    return best[1]


def _arrows(level: Level, machine: MachineSpec, highlight: Highlight | None) -> Iterator[Arrow]:
    """One arrow per (sources, target), in the order of each pair's first transition."""
    counts = _arrow_counts(level, machine, highlight)
    grouped: dict[tuple[frozenset[str], str], list[tuple[int, TransitionSpec]]] = {}
    for index, t in enumerate(machine.transitions):
        grouped.setdefault((frozenset(t.source), t.to), []).append((index, t))
    for group in grouped.values():
        first_index, first = group[0]
        sources = tuple(dict.fromkeys(first.source))
        drawn = []
        for index, t in group:
            per_source = None
            if highlight is not None:
                per_source = tuple(counts.get((index, source), 0) for source in sources)
            drawn.append(Transition(index, short_text(t), detail_text(index, t), per_source))
        yield Arrow(level, first_index, sources, first.to, tuple(drawn))


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
        lines += wrap_text(f"requeue: {spec.requeue_after}", STATE_WIDTH)
    if spec.timeout is not None:
        lines += wrap_text(f"timeout: {spec.timeout}", STATE_WIDTH)
    if spec.on_enter:
        actions = [action_text(a) for a in spec.on_enter]
        lines += wrap([f"enter / {actions[0]}", *actions[1:]], STATE_WIDTH)
    return tuple(lines)


def short_text(t: TransitionSpec) -> str:
    """What a label says for a transition: its reason, else `on OBSERVATION`, else its name,
    else its guard; "" when it has none of them (its reason is then the target)."""
    if t.reason is not None:
        return t.reason
    if t.on is not None:
        return f"on {t.on}"
    if t.name is not None:
        return t.name
    return f"[{' '.join(t.when.split())}]" if t.when is not None else ""


def detail_text(index: int, t: TransitionSpec) -> str:
    """`name: observation [guard] / actions -> reason`, the whole transition on one line."""
    parts = [f"{t.name or f'transition {index + 1}'}:"]
    if t.on is not None:
        parts.append(t.on)
    if t.when is not None:
        parts.append(f"[{' '.join(t.when.split())}]")
    if t.actions:
        parts.append("/ " + ", ".join(action_text(a) for a in t.actions))
    parts.append(f"-> {t.reason or t.to}")
    return " ".join(parts)


def action_text(action: ActionSpec) -> str:
    """`name`, or `name(arg=value, ...)` for its required and enumerated arguments."""
    args = [
        f"{key}={' '.join(str(value).split())}"
        for key, value in sorted(action.args.items())
        if (action.name, key) in _SHOWN_ARGS
    ]
    return f"{action.name}({', '.join(args)})" if args else action.name


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
