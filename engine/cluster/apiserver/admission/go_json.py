"""How Go's encoding/json names a JSON value in the errors the API server passes on.

Typed decoding refuses a value of the wrong kind with Go's own words
("json: cannot unmarshal string into Go struct field ... of type int32"); every
decoder of a built-in kind words its 400 through this one function.
"""

from __future__ import annotations

from typing import Any


def go_json_kind(value: Any) -> str:
    """How Go's JSON errors name the kind of a value ("cannot unmarshal array into ...")."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
