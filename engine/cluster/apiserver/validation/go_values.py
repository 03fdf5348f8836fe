"""Bad values as Go prints them inside field errors, for the values JSON would print otherwise.

apimachinery's field errors (kube-apiserver 1.32, whose ErrorBody dereferences a pointer
first) print a map, a slice or a struct without `String()` with `%#v`
(`map[string]string{"a":"b"}`, `[]int32{3, 1}`, `v1.LabelSelector{...}`: its String()
has a pointer receiver, so the dereferenced value has none); a kubectl user compares
those words with a real cluster's, so the validation renders them the same way.
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


def go_string_slice(values: Sequence[Any] | None) -> str:
    """`%#v` of a []string: `[]string{"a", "b"}`, `(nil)` when unset."""
    if values is None:
        return "[]string(nil)"
    return f"[]string{{{', '.join(_quoted(value) for value in values)}}}"


def go_struct(type_name: str, fields: Sequence[tuple[str, Any]]) -> str:
    """`%#v` of a struct of string fields (a struct without String()), e.g.
    `rbac.RoleRef{APIGroup:"", Kind:"Role", Name:"r"}`."""
    shown = ", ".join(f"{name}:{_quoted('' if value is None else value)}"
                      for name, value in fields)
    return f"{type_name}{{{shown}}}"


def go_label_selector(selector: Mapping[str, Any]) -> str:
    """`%#v` of a metav1.LabelSelector, as a field error prints a *LabelSelector:
    `v1.LabelSelector{MatchLabels:map[string]string{"app":"x"},
    MatchExpressions:[]v1.LabelSelectorRequirement(nil)}` (unset lists and maps are nil)."""
    expressions = selector.get("matchExpressions")
    if expressions is None:
        shown = "[]v1.LabelSelectorRequirement(nil)"
    else:
        requirements = ", ".join(
            "v1.LabelSelectorRequirement{"
            f"Key:{_quoted(e.get('key', ''))}, Operator:{_quoted(e.get('operator', ''))}, "
            f"Values:{go_string_slice(e.get('values'))}}}"
            for e in expressions if isinstance(e, Mapping))
        shown = f"[]v1.LabelSelectorRequirement{{{requirements}}}"
    return (f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, "
            f"MatchExpressions:{shown}}}")


def _quoted(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)
