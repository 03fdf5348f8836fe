"""Label and field selectors, parsed and matched as kube-apiserver does.

List, watch and deletecollection filter with these; the grammar, the key and
value checks and the error messages follow k8s.io/apimachinery's `labels` and
`fields` packages, so kubectl users see the errors they know.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.encoding.go_numbers import go_int64
from engine.cluster.apiserver.encoding.go_text import go_quote
from engine.cluster.apiserver.registry.label_syntax import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GT,
    IN,
    LT,
    NOT_EQUALS,
    NOT_IN,
    SelectorSyntaxError,
    parse_selector,
)
from engine.cluster.apiserver.validation.names import label_key_errors, label_value_errors


class SelectorError(ValueError):
    """A selector that does not parse, or names a field the resource cannot select on."""


_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GT, LT, EXISTS, DOES_NOT_EXIST)
"""validRequirementOperators, in apimachinery's order (its NotSupported lists them so)."""


@dataclass(frozen=True)
class Requirement:
    """One term of a label selector: key, operator, values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator in (EQUALS, IN):
            return present and value in self.values
        if self.operator in (NOT_EQUALS, NOT_IN):
            return not present or value not in self.values
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        try:
            number, bound = int(value), int(self.values[0])
        except ValueError:
            return False
        return present and (number > bound if self.operator == GT else number < bound)

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (IN, NOT_IN):
            # As apimachinery: a lone empty value is written "()", which its parser (and
            # label_syntax) reads back as that value.
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        symbol = {EQUALS: "=", NOT_EQUALS: "!=", GT: ">", LT: "<"}[self.operator]
        return f"{self.key}{symbol}{self.values[0]}"


def requirement(key: str, operator: str, values: Collection[str] | None = ()) -> Requirement:
    """labels.NewRequirement: the key, and the values `operator` (one of this module's) takes,
    checked in its words, each a field error, several Go's aggregate `[a, b]`. `values` None
    is Go's nil slice (LabelSelectorAsSelector's for an expression without values)."""
    given = list(values or ())
    shown = "[]string(nil)" if values is None else (
        "[]string{" + ", ".join(go_quote(v) for v in given) + "}")
    problems: list[str] = []
    if key_problems := label_key_errors(key):
        problems.append(f"key: Invalid value: {go_quote(key)}: {'; '.join(key_problems)}")
    if operator in (IN, NOT_IN) and not given:
        problems.append(f"values: Invalid value: {shown}: for 'in', 'notin' operators, values "
                        "set can't be empty")
    elif operator in (EQUALS, NOT_EQUALS) and len(given) != 1:
        problems.append(f"values: Invalid value: {shown}: exact-match compatibility requires "
                        "one single value")
    elif operator in (EXISTS, DOES_NOT_EXIST) and given:
        problems.append(f"values: Invalid value: {shown}: values set must be empty for exists "
                        "and does not exist")
    elif operator in (GT, LT):
        if len(given) != 1:
            problems.append(f"values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly "
                            "one value is required")
        problems += [f"values[{index}]: Invalid value: {go_quote(value)}: for 'Gt', 'Lt' "
                     "operators, the value must be an integer"
                     for index, value in enumerate(given) if go_int64(value) is None]
    elif operator not in _OPERATORS:
        problems.append(f"operator: Unsupported value: {go_quote(operator)}: supported values: "
                        + ", ".join(go_quote(o) for o in _OPERATORS))
    for index, value in enumerate(given):
        if value_problems := label_value_errors(value):
            problems.append(f"values[{index}][{key}]: Invalid value: {go_quote(value)}: "
                            f"{'; '.join(value_problems)}")
    if problems:
        raise SelectorError(_aggregate(problems))
    return Requirement(key, operator, tuple(sorted(set(given))))


def _aggregate(messages: list[str]) -> str:
    """utilerrors.Aggregate's text: one message alone, several (once each) in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


@dataclass(frozen=True)
class LabelSelector:
    """AND of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """labels.Parse of `text` (label_syntax.py); SelectorError in its words."""
        try:
            found = parse_selector(text, _parsed_requirement)
        except SelectorSyntaxError as exc:
            raise SelectorError(str(exc)) from exc
        return cls(tuple(sorted(found, key=lambda r: r.key)))

    @classmethod
    def from_object(cls, sel: Mapping[str, Any]) -> LabelSelector:
        """From a metav1.LabelSelector (`matchLabels`, `matchExpressions`)."""
        reqs = [requirement(k, EQUALS, [v]) for k, v in (sel.get("matchLabels") or {}).items()]
        operators = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
        for expr in sel.get("matchExpressions") or []:
            op = expr.get("operator", "")
            if op not in operators:
                raise SelectorError(f'"{op}" is not a valid label selector operator')
            reqs.append(requirement(expr.get("key", ""), operators[op], expr.get("values") or None))
        return cls(tuple(sorted(reqs, key=lambda r: r.key)))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _parsed_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """A requirement the parser read ("==" is "="), NewRequirement's words a syntax error."""
    try:
        return requirement(key, EQUALS if operator == DOUBLE_EQUALS else operator, values)
    except SelectorError as exc:
        raise SelectorSyntaxError(str(exc)) from exc


_COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_EXTRA_FIELDS: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    ("", "events"): frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    ("", "nodes"): frozenset({"spec.unschedulable"}),
    ("", "namespaces"): frozenset({"status.phase"}),
    ("", "secrets"): frozenset({"type"}),
    ("batch", "jobs"): frozenset({"status.successful"}),
    ("apps", "replicasets"): frozenset({"status.replicas"}),
    ("", "replicationcontrollers"): frozenset({"status.replicas"}),
}
# Selectable names that are not the JSON path of the value they select.
_FIELD_PATHS = {"source": "source.component", "status.successful": "status.succeeded"}
# Integers the real server renders with strconv.Itoa, so absent reads "0".
_INTEGER_FIELDS = frozenset({"status.successful", "status.replicas"})
# Booleans the real server renders with strconv.FormatBool, so absent reads "false".
_BOOLEAN_FIELDS = frozenset({"spec.hostNetwork", "spec.unschedulable"})


def fields_for(group: str, plural: str) -> frozenset[str]:
    """The field selectors a resource supports, as the real server lists them."""
    return _COMMON_FIELDS | _EXTRA_FIELDS.get((group, plural), frozenset())


def field_value(obj: Mapping[str, Any], name: str) -> str:
    """The string a field selector compares against; a missing field reads as ""."""
    node: Any = obj
    for part in _FIELD_PATHS.get(name, name).split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if node is None:
        if name in _INTEGER_FIELDS:
            return "0"
        return "false" if name in _BOOLEAN_FIELDS else ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


@dataclass(frozen=True)
class FieldTerm:
    """One `field=value` or `field!=value` term."""

    field: str
    value: str
    negated: bool = False

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.field) == self.value) != self.negated


@dataclass(frozen=True)
class FieldSelector:
    """AND of field terms; the empty selector matches everything."""

    terms: tuple[FieldTerm, ...] = ()

    @classmethod
    def parse(cls, text: str, supported: Collection[str]) -> FieldSelector:
        terms = []
        for part in _split_unescaped(text, ","):
            if not part.strip():
                continue
            terms.append(_parse_field_term(part.strip(), text))
        for term in terms:
            if term.field not in supported:
                raise SelectorError(f"field label not supported: {term.field}")
        return cls(tuple(terms))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(term.matches(obj) for term in self.terms)

    def exact(self, field: str) -> str | None:
        """The value a `field=value` term pins, so callers can narrow a lookup."""
        return next((t.value for t in self.terms if t.field == field and not t.negated), None)

    @property
    def empty(self) -> bool:
        return not self.terms


def _parse_field_term(part: str, text: str) -> FieldTerm:
    for symbol, negated in (("!=", True), ("==", False), ("=", False)):
        pieces = _split_unescaped(part, symbol, maxsplit=1)
        if len(pieces) == 2:
            return FieldTerm(pieces[0].strip(), _unescape(pieces[1]), negated)
    raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")


def _split_unescaped(text: str, separator: str, maxsplit: int = -1) -> list[str]:
    """Split on `separator` where it is not escaped by a backslash."""
    parts: list[str] = []
    current, i = "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            current += text[i : i + 2]
            i += 2
        elif text.startswith(separator, i) and maxsplit != len(parts):
            parts.append(current)
            current, i = "", i + len(separator)
        else:
            current += text[i]
            i += 1
    return [*parts, current]


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)
