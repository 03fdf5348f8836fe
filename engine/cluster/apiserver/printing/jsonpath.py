"""The JSONPath subset that CRD printer columns use.

`additionalPrinterColumns[].jsonPath` is a Kubernetes JSONPath such as
`.spec.replicas`, `.status.replicas[0].name` or
`.status.conditions[?(@.type=="Ready")].status`. Paths are parsed once
(`parse`) and then evaluated against plain dicts (`find`), returning every
match in document order, as the real server's table convertor does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"[A-Za-z_$][\w$\-/]*")
_INDEX = re.compile(r"\[\s*(-?\d+)\s*\]")
_SLICE = re.compile(r"\[\s*(-?\d+)?\s*:\s*(-?\d+)?\s*(?::\s*(-?\d+)?\s*)?\]")
_QUOTED_KEY = re.compile(r"\[\s*(?:'([^']*)'|\"([^\"]*)\")\s*\]")
_FILTER = re.compile(
    r"\[\?\(\s*@((?:\.[\w$\-/]+|\[\s*(?:'[^']*'|\"[^\"]*\")\s*\])+)\s*"
    r"(?:(==|!=|<=|>=|<|>)\s*('[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?|true|false|null))?\s*\)\]"
)


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Index:
    position: int


@dataclass(frozen=True)
class Slice:
    """`[start:end:step]`, as Python slices a list (a negative start counts from the end:
    `[-1:]` is the last item, what upstream's printer columns read for the newest
    condition)."""

    start: int | None
    end: int | None
    step: int | None


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Filter:
    path: tuple[Field, ...]
    operator: str | None  # None: the field only has to exist
    value: Any


Step = Field | Index | Slice | Wildcard | Filter


@dataclass(frozen=True)
class JsonPath:
    """A parsed path; `find` evaluates it."""

    source: str
    steps: tuple[Step, ...]

    def find(self, document: Any) -> list[Any]:
        """Every value the path selects in `document`, in order (empty when nothing matches)."""
        current = [document]
        for step in self.steps:
            current = [value for node in current for value in _apply(step, node)]
        return current


def parse(expression: str) -> JsonPath:
    """Parse a printer-column path; raises ValueError naming the offending position."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    steps: list[Step] = []
    position = 0
    while position < len(text):
        step, position = _next_step(text, position, expression)
        steps.append(step)
    if not steps:
        raise ValueError(f"empty JSONPath {expression!r}")
    return JsonPath(expression, tuple(steps))


def find(expression: str, document: Any) -> list[Any]:
    """Parse `expression` and evaluate it against `document`."""
    return parse(expression).find(document)


def _next_step(text: str, position: int, expression: str) -> tuple[Step, int]:
    if text.startswith(".*", position) or text.startswith("[*]", position):
        return Wildcard(), position + (2 if text[position] == "." else 3)
    if text[position] == ".":
        match = _NAME.match(text, position + 1)
        if match is None:
            raise ValueError(
                f"invalid JSONPath {expression!r}: expected a field name at {position}"
            )
        return Field(match.group()), match.end()
    for pattern in (_INDEX, _SLICE, _QUOTED_KEY, _FILTER):
        match = pattern.match(text, position)
        if match is not None:
            return _bracket_step(match), match.end()
    raise ValueError(f"invalid JSONPath {expression!r}: unexpected {text[position:]!r}")


def _bracket_step(match: re.Match[str]) -> Step:
    if match.re is _INDEX:
        return Index(int(match.group(1)))
    if match.re is _SLICE:
        start, end, step = (None if g is None else int(g) for g in match.groups())
        if step == 0:
            raise ValueError(f"invalid JSONPath slice {match.group()!r}: step must not be 0")
        return Slice(start, end, step)
    if match.re is _QUOTED_KEY:
        return Field(match.group(1) if match.group(1) is not None else match.group(2))
    path = tuple(Field(name) for name in _field_names(match.group(1)))
    operator = match.group(2)
    return Filter(path, operator, _literal(match.group(3)) if operator else None)


def _field_names(path: str) -> Iterator[str]:
    for dotted, single, double in re.findall(
        r"\.([\w$\-/]+)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]", path
    ):
        yield dotted or single or double


def _literal(token: str) -> Any:
    if token[0] in "'\"":
        return token[1:-1]
    return json.loads(token)


def _apply(step: Step, node: Any) -> list[Any]:
    if isinstance(step, Field):
        return [node[step.name]] if isinstance(node, dict) and step.name in node else []
    if isinstance(step, Index):
        if isinstance(node, list) and -len(node) <= step.position < len(node):
            return [node[step.position]]
        return []
    if isinstance(step, Slice):
        return list(node[step.start:step.end:step.step]) if isinstance(node, list) else []
    if isinstance(step, Wildcard):
        if isinstance(node, dict):
            return list(node.values())
        return list(node) if isinstance(node, list) else []
    items = node if isinstance(node, list) else []
    return [item for item in items if _matches(step, item)]


def _matches(step: Filter, item: Any) -> bool:
    found = [item]
    for field in step.path:
        found = [value for node in found for value in _apply(field, node)]
    if not found:
        return False
    if step.operator is None:
        return True
    return _compare(found[0], step.operator, step.value)


def _compare(left: Any, operator: str, right: Any) -> bool:
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    numbers = (int, float)
    if not (isinstance(left, numbers) and isinstance(right, numbers)):
        return False
    return {
        "<": left < right,
        ">": left > right,
        "<=": left <= right,
        ">=": left >= right,
    }[operator]
