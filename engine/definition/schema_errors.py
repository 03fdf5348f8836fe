"""Pydantic validation errors -> diagnostics in the user's terms, at the YAML node.

Pydantic reports locations as tuples of field aliases and indexes and messages
in its own words; a definition author wants "unknown field 'bogus'; allowed:
..." at the line of `bogus`. This module walks the schema alongside each
location to know which model a field belongs to and what was expected.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from engine.definition.errors import Diagnostic, error, name_list, nearest_hint
from engine.definition.positions import Path, PositionIndex
from engine.definition.schema import ActionSpec, ConditionSpec, MachineDefinition

_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "float_type": "a number",
    "float_parsing": "a number",
}

_SHAPES = {
    ActionSpec: "an action is a name (createPod) or a one-key mapping (cleanupPods: {policy: All})",
    ConditionSpec: "a condition is a type name or a mapping with type, status, reason, message, "
                   "sticky, copyFrom, moveFrom or replaces",
}


def yaml_kind(value: Any) -> str:
    """How a YAML author would name the kind of `value`."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _unwrap(annotation: Any) -> list[Any]:
    """The alternatives of an annotation, with Annotated and None stripped."""
    if get_origin(annotation) is Annotated:
        return _unwrap(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for arg in get_args(annotation) for a in _unwrap(arg) if a is not type(None)]
    return [annotation]


def _field_annotation(model: type[BaseModel], name: str) -> Any:
    for field_name, info in model.model_fields.items():
        if name in (field_name, info.alias):
            return info.annotation
    return None


def _walk(loc: tuple[int | str, ...], root: Any = MachineDefinition) -> tuple[Path, Any]:
    """The YAML path of `loc` (union member tags dropped) and the type found there.

    pydantic names the member of a union each of its errors is about (`str`, `Inner`,
    `dict[str,any]`) right after the union's place: an error of the member itself is the
    union's (the kinds of every member are named), one inside it is the member's."""
    current: Any = root
    path: list[int | str] = []
    for at, item in enumerate(loc):
        options = _unwrap(current)
        if len(options) > 1 and isinstance(item, str):
            if at + 1 < len(loc):
                current = _member(options, item)
            continue
        models = [o for o in options if isinstance(o, type) and issubclass(o, BaseModel)]
        containers = [o for o in options if get_origin(o) in (list, dict)]
        if models and isinstance(item, str):
            current = _field_annotation(models[0], item) or Any
        elif containers:
            current = get_args(containers[0])[-1]
        else:
            current = Any
        path.append(item)
    return tuple(path), current


def _member(options: list[Any], tag: str) -> Any:
    """The union member pydantic's `tag` names (a class by its name, a list or dict by its
    origin), else Any."""
    origin = tag.partition("[")[0]
    for option in options:
        if getattr(option, "__name__", None) == tag or getattr(
                get_origin(option), "__name__", None) == origin:
            return option
    return Any


def _owner(loc: tuple[int | str, ...], root: Any) -> tuple[Path, Any]:
    return _walk(loc[:-1], root) if loc else ((), root)


def _allowed(owner: Any) -> list[str]:
    """The fields of the section a field was written in (an optional section's model too)."""
    for model in _unwrap(owner):
        if isinstance(model, type) and issubclass(model, BaseModel):
            return [info.alias or name for name, info in model.model_fields.items()]
    return []


def _literal_choices(annotation: Any) -> str:
    choices = [a for option in _unwrap(annotation) if get_origin(option) is Literal
               for a in get_args(option)]
    return name_list(str(c) for c in choices)


def _field_name(path: Path) -> str:
    if not path:
        return "document"
    if path[-1] == "args" and len(path) > 1:
        return f"arguments of {_field_name(path[:-1])}"
    if isinstance(path[-1], int):
        return f"{_field_name(path[:-1])} item {path[-1] + 1}"
    return str(path[-1])


def _message(err: ErrorDetails, path: Path, annotation: Any, root: Any) -> str:
    kind, value = err["type"], err["input"]
    name = _field_name(path)
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return f"missing required field '{name}'"
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        _, owner = _owner(err["loc"], root)
        allowed = _allowed(owner)
        return (f"unknown field '{name}'{nearest_hint(name, allowed)}; allowed fields: "
                f"{name_list(allowed)}")
    if kind == "literal_error":
        return f"'{name}' must be one of: {_literal_choices(annotation)} (got {value!r})"
    if kind == "string_pattern_mismatch" and path == ("metadata", "name"):
        return (
            f"metadata.name {value!r} is not a valid name: use lower-case letters, digits, "
            "'-' and '.', starting and ending with a letter or digit"
        )
    if kind == "string_pattern_mismatch":
        return f"'{name}' must match {ctx.get('pattern')} (got {value!r})"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        bound = next(iter(ctx.values()), "?")
        word = {"greater_than_equal": ">=", "less_than_equal": "<=",
                "greater_than": ">", "less_than": "<"}[kind]
        return f"'{name}' must be {word} {bound} (got {value!r})"
    if kind in ("string_too_short", "string_too_long"):
        return f"'{name}' has the wrong length: {err['msg'].lower()}"
    expected = " or ".join(
        dict.fromkeys(_TYPE_NAMES.get(k, k) for k in _expected_kinds(annotation, kind))
    )
    return f"'{name}' must be {expected}, not {yaml_kind(value)}"


def _another_member_takes(err: ErrorDetails, annotation: Any) -> bool:
    """Whether `err` is one union member's refusal of the value's kind while another member
    takes values of that kind (a list for `list[int] | int`): that member's own errors say
    what is wrong inside the value, and this one would only contradict them."""
    if len(_unwrap(annotation)) < 2 or err["type"] not in _TYPE_NAMES:
        return False
    names = {_TYPE_NAMES.get(k, k) for k in _expected_kinds(annotation, err["type"])}
    return yaml_kind(err["input"]) in names


def _expected_kinds(annotation: Any, kind: str) -> list[str]:
    simple = {str: "string_type", int: "int_type", bool: "bool_type", float: "float_type"}
    found: list[str] = []
    for option in _unwrap(annotation):
        origin = get_origin(option)
        if option in simple:
            found.append(simple[option])
        elif origin is list:
            found.append("list_type")
        elif origin is dict or (isinstance(option, type) and issubclass(option, BaseModel)):
            found.append("dict_type")
    return found or [kind]


def _shape_path(loc: tuple[int | str, ...], root: Any) -> tuple[Path, Any] | None:
    """The path of an action or condition whose written form is wrong, if `loc` is in one."""
    for end in range(len(loc), 0, -1):
        path, annotation = _walk(loc[:end], root)
        shapes = [option for option in _unwrap(annotation) if option in _SHAPES]
        if not shapes:
            continue
        if end == len(loc) or (shapes[0] is ActionSpec and loc[end] != "args"):
            return path, shapes[0]
        return None
    return None


def _yaml_path(data: Any, path: Path) -> Path:
    """`path` with an action's `args` replaced by the action's name, as written."""
    for i, item in enumerate(path):
        if item == "args":
            parent = _lookup(data, path[:i])
            if isinstance(parent, dict) and len(parent) == 1 and "args" not in parent:
                return (*path[:i], next(iter(parent)), *path[i + 1 :])
        if not isinstance(data, dict | list):
            break
    return path


def schema_diagnostics(
    exc: ValidationError, data: Any, index: PositionIndex, root: type[BaseModel] = MachineDefinition
) -> list[Diagnostic]:
    """One diagnostic per schema problem in `data` (a `root` document), at the offending key
    or value."""
    found: list[Diagnostic] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        # A model's own check (value_error: copyFrom beside moveFrom) says what is wrong.
        shape = _shape_path(loc, root) if err["type"] != "value_error" else None
        if shape is not None:
            path, model = shape
            written = _got(_lookup(data, path))
            found.append(error(index.value(path), f"{_SHAPES[model]}; got {written}"))
            continue
        path, annotation = _walk(loc, root)
        if _another_member_takes(err, annotation):
            continue
        message = _message(err, path, annotation, root)
        path = _yaml_path(data, path)
        if err["type"] == "extra_forbidden":
            found.append(error(index.key(path), message))
        elif err["type"] == "missing":
            found.append(error(index.value(path[:-1]), message))
        else:
            found.append(error(index.value(path), message))
    return list(dict.fromkeys(found))


def _lookup(data: Any, path: Path) -> Any:
    for item in path:
        data = data[item]
    return data


def _got(value: Any) -> str:
    if isinstance(value, dict):
        return f"a mapping with keys {name_list(str(k) for k in value)}"
    return yaml_kind(value)
