"""`spec.extends`: a machine written as its differences from another, merged before checking.

Six Kubeflow kinds share one lifecycle and differ in a few guards, messages and
pod values; copying it six times would let the most-tuned rules drift apart. A
machine names its base, and the two documents are merged as data, keeping
where every node was written, so a problem in an inherited part is reported
in the base's file (or object) at its own line.

Merge rules: mappings merge key by key, the extending side winning, and a key
of the base set to null is removed (a new key may be null: `Paused:` is an
empty state); lists and other values are replaced whole,
except the transitions of each level and the child objects, which are matched by
`name`: a named item replaces the base's fields it sets (in place), `remove: true`
drops it, and a new one goes `before:` or `after:` a named one, else last.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.definition.errors import Diagnostic, error
from engine.definition.positions import NodeInfo, Path, PositionIndex

DIRECTIVES = ("before", "after", "remove")
"""Keys of transitions and objects that say how to merge; they never reach the merged
machine."""

LEVELS = ("job", "replica")
_MAX_DEPTH = 16


@dataclass(frozen=True)
class RawDefinition:
    """One document as written, before its base is merged in and its shape is checked."""

    data: Any
    positions: PositionIndex
    path: str
    document: int = 0
    usable: bool = True
    """False when reading it found errors (a duplicate key): its shape is still checked and
    reported, but it yields no definition."""

    @property
    def name(self) -> str | None:
        metadata = self.data.get("metadata") if isinstance(self.data, dict) else None
        name = metadata.get("name") if isinstance(metadata, dict) else None
        return name if isinstance(name, str) else None

    @property
    def extends(self) -> str | None:
        """The base's name, when the document names one (anything else is left to the schema)."""
        spec = self.data.get("spec") if isinstance(self.data, dict) else None
        base = spec.get("extends") if isinstance(spec, dict) else None
        return base if isinstance(base, str) else None


Lookup = Callable[[str], RawDefinition | None]


@dataclass(frozen=True)
class Resolved:
    """A definition with every base merged in, and the names of those bases (nearest first)."""

    raw: RawDefinition
    bases: tuple[str, ...] = ()


def resolve(raw: RawDefinition, lookup: Lookup, *, searched: str = ""
            ) -> tuple[Resolved | None, list[Diagnostic]]:
    """`raw` with its bases merged in; None (with the reasons) when that cannot be done.
    `searched` says where bases were looked for, for the error naming one not found."""
    chain = [raw]
    while (base_name := chain[-1].extends) is not None:
        where = chain[-1].positions.value(("spec", "extends"))
        if base_name in [r.name for r in chain]:
            loop = " -> ".join([*(str(r.name) for r in chain), base_name])
            return None, [error(where, f"machines extend each other in a loop: {loop}")]
        base = lookup(base_name)
        if base is None:
            places = f"; looked in {searched}" if searched else ""
            return None, [error(where, f"no machine named '{base_name}' to extend{places}")]
        if not base.usable:
            return None, [error(where, f"machine '{base_name}' cannot be extended: "
                                       f"{base.path} has errors of its own")]
        if len(chain) > _MAX_DEPTH:
            return None, [error(where, f"more than {_MAX_DEPTH} machines extend each other")]
        chain.append(base)
    problems = _misplaced_directives(chain[-1])
    merged = chain[-1]
    for derived in reversed(chain[:-1]):
        merged, found = _merge_documents(merged, derived)
        problems += found
    if any(p.is_error for p in problems):
        return None, problems
    return Resolved(merged, tuple(str(r.name) for r in chain[1:])), problems


def _misplaced_directives(raw: RawDefinition) -> list[Diagnostic]:
    """`before`, `after` and `remove` in a machine that extends nothing mean nothing."""
    found = []
    for level, index, transition in _transitions(raw.data):
        for key in DIRECTIVES:
            if key in transition:
                where = raw.positions.key(("spec", level, "transitions", index, key))
                found.append(error(where, f"'{key}' only means something in a machine that "
                                          "extends another (spec.extends)"))
    return found


def _transitions(data: Any) -> list[tuple[str, int, dict[str, Any]]]:
    spec = data.get("spec") if isinstance(data, dict) else None
    found = []
    for level in LEVELS:
        machine = spec.get(level) if isinstance(spec, dict) else None
        transitions = machine.get("transitions") if isinstance(machine, dict) else None
        for index, transition in enumerate(transitions if isinstance(transitions, list) else []):
            if isinstance(transition, dict):
                found.append((level, index, transition))
    return found


@dataclass(frozen=True)
class _Side:
    """One side of a merge: a value and where its nodes were written."""

    value: Any
    positions: PositionIndex
    path: Path


class _Merger:
    def __init__(self, file: str) -> None:
        self.index = PositionIndex(file)
        self.problems: list[Diagnostic] = []

    def take(self, side: _Side, out: Path) -> Any:
        """A whole subtree from one side, its positions carried over."""
        info = side.positions.nodes.get(side.path)
        if info is not None:
            self.index.nodes[out] = info
        value = side.value
        if isinstance(value, dict):
            return {k: self.take(_child(side, k), (*out, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.take(_child(side, i), (*out, i)) for i in range(len(value))]
        return value

    def merge(self, base: _Side, derived: _Side, out: Path) -> Any:
        if not (isinstance(base.value, dict) and isinstance(derived.value, dict)):
            return self.take(derived, out)
        info = derived.positions.nodes.get(derived.path) or base.positions.nodes.get(base.path)
        if info is not None:
            self.index.nodes[out] = info
        merged: dict[str, Any] = {}
        for key in [*base.value, *(k for k in derived.value if k not in base.value)]:
            if key in base.value and key in derived.value and derived.value[key] is None:
                continue
            if key not in derived.value:
                merged[key] = self.take(_child(base, key), (*out, key))
            elif key not in base.value and not _merged_deeper(out, key):
                merged[key] = self.take(_child(derived, key), (*out, key))
            elif (noun := _named_list(out, key)) is not None:
                merged[key] = self.named_items(_child(base, key), _child(derived, key),
                                               (*out, key), noun)
            else:
                merged[key] = self.merge(_child(base, key), _child(derived, key), (*out, key))
        return merged

    def named_items(self, base: _Side, derived: _Side, out: Path, noun: str) -> Any:
        """A list merged by `name` (transitions, child objects): see the module docstring."""
        if not isinstance(base.value, list) or not isinstance(derived.value, list):
            return self.take(derived, out)
        placed: list[tuple[_Side, _Side | None]] = [
            (_child(base, i), None) for i in range(len(base.value))
        ]
        seen: set[str] = set()
        after: dict[str, int] = {}
        for i, item in enumerate(derived.value):
            name = _name(item)
            if name is not None and name in seen:
                self._problem(_child(derived, i), "name", f"{noun} name '{name}' is "
                              "already used earlier in this machine: name each change once")
                continue
            self._place(placed, _child(derived, i), item, after, noun)
            if name is not None:
                seen.add(name)
        self.index.nodes[out] = (derived.positions.nodes.get(derived.path)
                                 or base.positions.nodes.get(base.path)
                                 or NodeInfo(derived.positions.value(derived.path)))
        result = []
        for number, (first, second) in enumerate(placed):
            target = (*out, number)
            value = self.take(first, target) if second is None else self.merge(first, second,
                                                                              target)
            result.append({k: v for k, v in value.items() if k not in DIRECTIVES}
                          if isinstance(value, dict) else value)
        return result

    def _place(self, placed: list[tuple[_Side, _Side | None]], side: _Side, item: Any,
               after: dict[str, int], noun: str) -> None:
        """Apply one item (a transition, an object) of the extending machine to the base's
        list.

        `after` counts what this machine already put after each named transition, so
        several transitions `after:` one keep the order they are written in.
        """
        names = [_name(first.value) for first, _ in placed]
        name = _name(item)
        if not isinstance(item, dict):
            placed.append((side, None))
            return
        if name is not None and name in names:
            at = names.index(name)
            first, _ = placed.pop(at)
            if item.get("remove") is True:
                return
            entry: tuple[_Side, _Side | None] = (first, side)
            moved = "before" in item or "after" in item
            position = self._anchor(side, item, _names(placed), after, noun) if moved else at
        else:
            if item.get("remove") is True:
                wanted = (f"'remove: true' needs the 'name' of a {noun} of the base"
                          if name is None else f"no {noun} named '{name}' to remove")
                self._problem(side, "remove", wanted)
                return
            entry = (side, None)
            position = self._anchor(side, item, names, after, noun)
        placed.insert(len(placed) if position is None else position, entry)

    def _anchor(self, side: _Side, item: dict[str, Any], names: list[str | None],
                after: dict[str, int], noun: str) -> int | None:
        """Where `before:`/`after:` puts the item; None: where it is (or last)."""
        for key in ("before", "after"):
            anchor = item.get(key)
            if anchor is None:
                continue
            if anchor not in names:
                known = ", ".join(n for n in names if n) or "(none)"
                self._problem(side, key, f"no {noun} named '{anchor}' to go {key}; "
                                         f"named {noun}s: {known}")
                return None
            if key == "before":
                return names.index(anchor)
            after[anchor] = after.get(anchor, 0) + 1
            return names.index(anchor) + after[anchor]
        return None

    def _problem(self, side: _Side, key: str, message: str) -> None:
        self.problems.append(error(side.positions.value((*side.path, key)), message))


def _names(placed: list[tuple[_Side, _Side | None]]) -> list[str | None]:
    return [_name(first.value) for first, _ in placed]


def _name(value: Any) -> str | None:
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def _merged_deeper(out: Path, key: str) -> bool:
    """A level and its transitions are merged even where the base lacks them, so their
    merge directives are consumed (and checked) all the same."""
    return (out == ("spec",) and key in LEVELS) or _is_transitions(out, key)


def _child(side: _Side, key: str | int) -> _Side:
    container = side.value
    value: Any = None
    if isinstance(container, dict):
        value = container.get(key, [] if key == "transitions" else {})
    elif isinstance(container, list) and isinstance(key, int):
        value = container[key]
    return _Side(value, side.positions, (*side.path, key))


def _is_transitions(out: Path, key: str) -> bool:
    return key == "transitions" and len(out) == 2 and out[0] == "spec" and out[1] in LEVELS


def _named_list(out: Path, key: str) -> str | None:
    """What the items of a list merged by name are called: the transitions of each level
    and the child objects; None for any other field."""
    if _is_transitions(out, key):
        return "transition"
    return "object" if out == ("spec",) and key == "objects" else None


def _merge_documents(
    base: RawDefinition, derived: RawDefinition
) -> tuple[RawDefinition, list[Diagnostic]]:
    """`derived` over `base`: metadata is the derived machine's own; `abstract` and
    `extends` are not inherited (a machine extending an abstract one is concrete)."""
    merger = _Merger(derived.positions.file)
    base_spec = _without(base.data.get("spec"), ("abstract", "extends"))
    derived_spec = _without(derived.data.get("spec"), ("extends",))
    merged = {key: merger.take(_Side(value, derived.positions, (key,)), (key,))
              for key, value in derived.data.items() if key != "spec"}
    merged["spec"] = merger.merge(
        _Side(base_spec, base.positions, ("spec",)),
        _Side(derived_spec, derived.positions, ("spec",)),
        ("spec",),
    )
    root = derived.positions.nodes.get(())
    if root is not None:
        merger.index.nodes[()] = root
    merged_raw = RawDefinition(merged, merger.index, derived.path, derived.document,
                               derived.usable and base.usable)
    return merged_raw, merger.problems


def _without(spec: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(spec, Mapping):
        return spec
    return {k: v for k, v in spec.items() if k not in keys}
