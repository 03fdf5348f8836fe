"""JSON documents: private copies (the store, patches and schema pruning all need them), and
the nesting limit every document entering the server is held to.

An orjson round trip copies a stored object about 8x faster than `copy.deepcopy`.
Objects reach the server through orjson, so they hold only what it encodes; anything
else (ints beyond 64 bits, non-string keys) falls back to `deepcopy`.

orjson encodes at most 255 levels, and the server's walkers recurse per level, so a
document nested deeper than MAX_DEPTH is refused with a 400 where it enters (a body, a
patch, or a patch's result) instead of failing later as a 500.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from engine.cluster.apiserver.errors import bad_request

MAX_DEPTH = 200


def json_copy(document: Any) -> Any:
    """A deep copy of a JSON document."""
    try:
        return orjson.loads(orjson.dumps(document))
    except TypeError:
        return copy.deepcopy(document)


def check_depth(document: Any, what: str) -> None:
    """400 when `document` nests objects and lists more than MAX_DEPTH levels deep (found
    level by level, without recursion, so any depth is measured safely; only containers are
    visited, since a scalar adds no level)."""
    level = [document] if isinstance(document, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise bad_request(f"{what} is nested more than {MAX_DEPTH} levels deep, more than "
                              f"this server accepts")
        below: list[Any] = []
        for value in level:
            children = value.values() if isinstance(value, dict) else value
            below.extend([child for child in children if isinstance(child, (dict, list))])
        level = below
