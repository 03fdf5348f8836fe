"""A pytest plugin for mutmut's forked runs: empty the engine's function caches first.

mutmut forks each mutant's test run from a process that already ran the tests once, so an
`lru_cache` still holds answers the unmutated code computed, and a mutant beneath it would
survive without ever running. Module-level values computed at import stay as they are.
"""

from __future__ import annotations

import os
import sys

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    for name, module in list(sys.modules.items()):
        if name != "engine" and not name.startswith("engine."):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()
