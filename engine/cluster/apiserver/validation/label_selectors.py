"""Label selectors in the specs of Jobs and the replicated workloads, judged as upstream does.

ValidateLabelSelector's rules (matchLabels as labels, each expression's operator, key and
values), the selector as LabelSelectorAsSelector reads it, and apimachinery's semantic
equality, which immutability checks compare with (unset, null and empty collections alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.registry.selectors import LabelSelector, SelectorError
from engine.cluster.apiserver.validation.field_errors import forbidden, invalid, required
from engine.cluster.apiserver.validation.names import label_key_errors, label_value_errors

_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def label_selector_causes(selector: Mapping[str, Any], path: str) -> list[Cause]:
    """ValidateLabelSelector: matchLabels as labels, then each expression."""
    causes: list[Cause] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        causes += [invalid(f"{path}.matchLabels", key, e) for e in label_key_errors(key)]
        causes += [invalid(f"{path}.matchLabels", value, e) for e in label_value_errors(value)]
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{index}]"
        # An unset operator is Go's zero string, and shows as "" in the message.
        operator, values = expression.get("operator") or "", expression.get("values") or []
        if operator in ("In", "NotIn") and not values:
            causes.append(required(f"{where}.values",
                                   "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append(forbidden(f"{where}.values", "may not be specified when `operator` "
                                                       "is 'Exists' or 'DoesNotExist'"))
        elif operator not in _SELECTOR_OPERATORS:
            causes.append(invalid(f"{where}.operator", operator, "not a valid selector operator"))
        key = str(expression.get("key") or "")
        causes += [invalid(f"{where}.key", key, e) for e in label_key_errors(key)]
        for value_index, value in enumerate(values):
            causes += [invalid(f"{where}.values[{value_index}]", value, e)
                       for e in label_value_errors(value)]
    return causes


def parsed_selector(selector: Mapping[str, Any]) -> LabelSelector | None:
    """The selector as LabelSelectorAsSelector reads it; None when it does not parse."""
    try:
        return LabelSelector.from_object(selector)
    except SelectorError:
        return None


def semantic(value: Any) -> Any:
    """A value as apimachinery's semantic equality compares it: unset, null and empty
    collections alike."""
    if isinstance(value, Mapping):
        kept = {key: semantic(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in (None, {}, [])}
    if isinstance(value, list):
        return [semantic(item) for item in value]
    return value
