"""YAML text read as data, by libyaml where PyYAML has it: the same data, about 20x faster.

`jobmachine up` reads every CRD and machine file at each start (about 1 s of pure-Python
parsing for `crds/` and `machines/` alone), and so does every test that starts a cluster.
Files whose positions matter (machine definitions, for their FILE:LINE:COL errors) are
read by engine.definition.loader instead.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    """The one document of `text` (None when it is empty), as `yaml.safe_load` reads it."""
    return yaml.load(text, Loader=_LOADER)


def load_all(text: str) -> list[Any]:
    """Every document of `text`, as `yaml.safe_load_all` reads them."""
    return list(yaml.load_all(text, Loader=_LOADER))
