"""`x-kubernetes-validations` rules: compiled once per CRD version, evaluated per request.

Evaluation uses the `cel` package (common-expression-language). It has the
standard macros (has, all, exists, exists_one, map, filter), size, matches,
startsWith, endsWith, contains, conversions (int, uint, double, string, bytes,
dyn, type), duration and timestamp with their accessors. The Kubernetes string
and list libraries are added here: charAt, indexOf, lastIndexOf, lowerAscii,
upperAscii, replace, split, substring, trim, join, isSorted, sum, min, max,
find, findAll. Not available (a rule using them is rejected when the CRD is
created, naming the function): the optional-field syntax (`self.?x`),
`bool()`, quantity, url, ip/cidr, sets, math and format libraries, and
`optionalOldSelf`. There is no cost budget: rules run unbounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import cel


def _index_of(value: Any, item: Any, *start: int) -> int:
    offset = start[0] if start else 0
    if isinstance(value, str):
        return value.find(item, offset)
    return next((i for i in range(offset, len(value)) if value[i] == item), -1)


def _last_index_of(value: Any, item: Any, *end: int) -> int:
    if isinstance(value, str):
        return value.rfind(item, 0, end[0] + len(item)) if end else value.rfind(item)
    return next((i for i in reversed(range(len(value))) if value[i] == item), -1)


def _replace(text: str, old: str, new: str, *count: int) -> str:
    return text.replace(old, new, count[0]) if count else text.replace(old, new)


def _split(text: str, separator: str, *limit: int) -> list[str]:
    if limit:
        return [] if limit[0] == 0 else text.split(separator, limit[0] - 1)
    return text.split(separator)


def _find(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    return found.group(0) if found else ""


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": lambda s, i: s[i] if i < len(s) else "",
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": lambda s: s.lower(),
    "upperAscii": lambda s: s.upper(),
    "replace": _replace,
    "split": _split,
    "substring": lambda s, start, *end: s[start : end[0]] if end else s[start:],
    "trim": lambda s: s.strip(),
    "join": lambda items, *sep: (sep[0] if sep else "").join(items),
    "isSorted": lambda items: list(items) == sorted(items),
    "sum": sum,
    "min": min,
    "max": max,
    "find": _find,
    "findAll": lambda s, pattern, *n: (
        re.findall(pattern, s)[: n[0]] if n else re.findall(pattern, s)
    ),
}
_STANDARD = frozenset(
    {
        "size",
        "matches",
        "startsWith",
        "endsWith",
        "contains",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "dyn",
        "type",
        "duration",
        "timestamp",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getMonth",
        "getSeconds",
    }
)
_MACRO_VARIABLE = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
REASONS = frozenset(
    {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
)


class RuleCompileError(ValueError):
    """A rule or messageExpression the server cannot evaluate; `field` names which."""

    def __init__(self, message: str, field: str = "rule") -> None:
        super().__init__(message)
        self.field = field


def _compile(expression: str, field: str = "rule") -> Any:
    try:
        program = cel.compile(expression)
    except ValueError as error:
        raise RuleCompileError(f"compilation failed: {error}", field) from error
    unsupported = sorted(
        name
        for name in program.functions()
        if name.isidentifier() and name not in _STANDARD and name not in FUNCTIONS
    )
    if unsupported:
        raise RuleCompileError(
            f"compilation failed: undeclared reference to '{unsupported[0]}' "
            "(function not supported by this server)",
            field,
        )
    bound = set(_MACRO_VARIABLE.findall(expression)) | {"self", "oldSelf"}
    undeclared = sorted(set(program.variables()) - bound)
    if undeclared:
        raise RuleCompileError(
            f"compilation failed: undeclared reference to '{undeclared[0]}'", field
        )
    return program


@dataclass(frozen=True)
class Rule:
    """One compiled validation rule."""

    rule: str
    program: Any
    message: str
    message_program: Any
    field_path: str
    reason: str
    # A rule that reads `oldSelf` is only evaluated on update, against an old value.
    transition: bool


def compile_rule(spec: Mapping[str, Any]) -> Rule:
    """Compile one `x-kubernetes-validations` entry; raises RuleCompileError."""
    rule = spec.get("rule")
    if not isinstance(rule, str) or not rule.strip():
        raise RuleCompileError("rule is not specified")
    message_expression = spec.get("messageExpression")
    reason = spec.get("reason") or "FieldValueInvalid"
    if reason not in REASONS:
        raise RuleCompileError(f"unsupported reason {reason!r}", "reason")
    program = _compile(rule)
    return Rule(
        rule=rule,
        program=program,
        message=spec.get("message") or "",
        message_program=_compile(message_expression, "messageExpression")
        if message_expression
        else None,
        field_path=(spec.get("fieldPath") or "").lstrip("."),
        reason=reason,
        transition="oldSelf" in program.variables(),
    )


def evaluate(rule: Rule, value: Any, old: Any) -> tuple[bool, str]:
    """(passed, message): message is the failure text, or the evaluation error."""
    context = cel.Context(variables={"self": value, "oldSelf": old}, functions=FUNCTIONS)
    try:
        result = rule.program.execute(context)
    except Exception as error:  # the cel binding raises several unrelated types
        return False, f"{_error_text(error)} evaluating rule: {rule.rule}"
    if result is True:
        return True, ""
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(context)
        except Exception:  # fall back to the static message, as the real server does
            text = ""
        if isinstance(text, str) and text.strip():
            return False, text
    return False, rule.message or f"failed rule: {rule.rule}"


def _error_text(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"no such key: {error.args[0]}"
    if isinstance(error, TypeError):
        return "no such overload"
    return str(error).split(". ")[0]
