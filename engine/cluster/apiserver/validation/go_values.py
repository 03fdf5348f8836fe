"""Bad values as Go prints them inside field errors, for the values JSON would print otherwise.

apimachinery's field errors print a map or a slice with `%#v`
(`map[string]string{"a":"b"}`, `[]int32{3, 1}`) and a LabelSelector through its
generated `String()`; a kubectl user compares those words with a real cluster's,
so the batch validation renders them the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def go_string_map(labels: Mapping[str, Any] | None) -> str:
    """`%#v` of a map[string]string: keys sorted, `(nil)` when unset."""
    if labels is None:
        return "map[string]string(nil)"
    items = ", ".join(f"{_quoted(key)}:{_quoted(labels[key])}" for key in sorted(labels))
    return f"map[string]string{{{items}}}"


def go_int32_slice(values: Sequence[Any] | None) -> str:
    """`%#v` of a []int32: `[]int32{3, 1}`, `(nil)` when unset."""
    if values is None:
        return "[]int32(nil)"
    return f"[]int32{{{', '.join(str(value) for value in values)}}}"


def label_selector_string(selector: Mapping[str, Any]) -> str:
    """A metav1.LabelSelector's generated String(), as a field error prints a *LabelSelector."""
    labels = selector.get("matchLabels") or {}
    pairs = "".join(f"{key}: {labels[key]}," for key in sorted(labels))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
        if isinstance(e, Mapping)
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )


def _quoted(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)
