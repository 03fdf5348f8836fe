"""Text templates (`... ${ expr } ...`) and value expressions, compiled once.

Messages, condition texts and some action arguments mix literal text with CEL
parts; pod env, labels and annotations are whole expressions whose results
become strings. Both render CEL values the same way (see `render_value`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.definition.cel import (
    Activation,
    CelCompileError,
    CelEvaluationError,
    CelProblem,
    CompiledExpression,
    Scope,
    combine,
    compile_expression,
)


@dataclass(frozen=True)
class TemplatePart:
    """Literal text, or an expression that started at `offset` in the template."""

    text: str
    expression: CompiledExpression | None = None
    offset: int = 0


@dataclass(frozen=True)
class TextTemplate:
    source: str
    parts: tuple[TemplatePart, ...]
    # All parts as one program: one evaluation per render instead of one per part.
    combined: CompiledExpression | None = None

    def render(self, variables: Mapping[str, Any] | Activation) -> tuple[str, list[str]]:
        """The text, and the errors of parts that failed (rendered as written)."""
        if self.combined is None:
            return "".join(p.text for p in self.parts), []
        try:
            values = iter(self.combined.evaluate(variables))
            texts = [p.text if p.expression is None else render_value(next(values))
                     for p in self.parts]
            return "".join(texts), []
        except CelEvaluationError:
            return self._render_parts(variables)

    def _render_parts(self, variables: Mapping[str, Any] | Activation) -> tuple[str, list[str]]:
        out: list[str] = []
        errors: list[str] = []
        for part in self.parts:
            if part.expression is None:
                out.append(part.text)
                continue
            try:
                out.append(render_value(part.expression.evaluate(variables)))
            except CelEvaluationError as exc:
                errors.append(str(exc))
                out.append(part.text)
        return "".join(out), errors


def render_value(value: Any) -> str:
    """A CEL result as text: strings as is, scalars as CEL prints them, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, datetime.timedelta):
        return f"{value.total_seconds():g}s"
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=render_value)


def compile_template(source: str, scope: Scope) -> TextTemplate:
    """Split and compile a template; raises `CelCompileError` positioned in the template."""
    parts: list[TemplatePart] = []
    literal: list[str] = []
    i = 0
    while i < len(source):
        if source.startswith("$${", i):
            literal.append("${")
            i += 3
        elif source.startswith("${", i):
            end = _closing_brace(source, i + 2)
            parts.append(TemplatePart("".join(literal)))
            literal = []
            parts.append(_expression_part(source, i, end, scope))
            i = end + 1
        else:
            literal.append(source[i])
            i += 1
    parts.append(TemplatePart("".join(literal)))
    expressions = [p.expression for p in parts if p.expression is not None]
    combined = combine(expressions) if expressions else None
    return TextTemplate(source, tuple(p for p in parts if p.text or p.expression), combined)


def _expression_part(source: str, start: int, end: int, scope: Scope) -> TemplatePart:
    body = source[start + 2 : end]
    try:
        expression = compile_expression(body, scope)
    except CelCompileError as exc:
        raise CelCompileError([_shift(source, start + 2, p) for p in exc.problems]) from exc
    return TemplatePart(source[start : end + 1], expression, start + 2)


def _shift(source: str, offset: int, problem: CelProblem) -> CelProblem:
    """A problem inside a part, re-positioned relative to the whole template."""
    lines = source[offset:].split("\n")
    index = offset + sum(len(line) + 1 for line in lines[: problem.line - 1]) + problem.column - 1
    before = source[:index]
    line = before.count("\n") + 1
    return CelProblem(line, index - (before.rfind("\n") + 1) + 1, problem.message)


def _closing_brace(source: str, start: int) -> int:
    """Index of the `}` closing a part that opened before `start`, skipping CEL strings."""
    depth, i, quote = 0, start, ""
    while i < len(source):
        char = source[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    line = source[:start].count("\n") + 1
    column = start - 1 - (source[:start].rfind("\n") + 1)
    raise CelCompileError([CelProblem(line, column, "'${' is never closed by '}'")])
