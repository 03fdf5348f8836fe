"""A pytest plugin for mutmut's runs: empty the engine's function caches where a cached
answer would hide code from the run.

mutmut forks each mutant's test run from a process that already ran the tests once, so an
`lru_cache` still holds answers the unmutated code computed, and a mutant beneath it would
survive without ever running: the caches are emptied before each mutant's tests.

The first run ("stats") learns which tests execute which function, and a mutant is later
tested by those tests only. With the caches kept across that run, only the first test to
ask for a cached value is seen executing the code beneath it (a kind's CEL types are built
once per schema, for whichever test compiles against it first), and a mutant there is
judged by that one test: the caches are emptied before every test of that run too.
Module-level values computed at import stay as they are.
"""

from __future__ import annotations

import os
import sys

import pytest


def _clear_engine_caches() -> None:
    for name, module in list(sys.modules.items()):
        if name != "engine" and not name.startswith("engine."):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def pytest_sessionstart(session: pytest.Session) -> None:
    if "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", ""):
        _clear_engine_caches()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        _clear_engine_caches()
