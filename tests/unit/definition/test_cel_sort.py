"""`sort(list(string))`: a message that names a map's keys (replica types) reads the same
in every process. cel-cpp iterates a map in an order of its own hashing, which changes
from process to process; the shipped machines sort the types they name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.definition.cel import Scope, compile_expression

SCOPE = Scope("job")


def test_sort_orders_strings_by_code_point() -> None:
    ordered = compile_expression("sort(['Worker', 'Launcher', 'Chief', 'chief', ''])", SCOPE)
    assert ordered.evaluate({}) == ["", "Chief", "Launcher", "Worker", "chief"]
    assert compile_expression("sort([])", SCOPE).evaluate({}) == []


def test_sort_takes_only_a_list_of_strings() -> None:
    with pytest.raises(Exception, match="sort"):
        compile_expression("sort([1, 2])", SCOPE)


KEYS = ("import sys; from engine.definition.cel import Scope, compile_expression; "
        "print(compile_expression(sys.argv[1], Scope('job')).evaluate({}))")
MAP = "{'Worker': 1, 'Launcher': 2, 'Chief': 3, 'PS': 4, 'Evaluator': 5, 'Master': 6}"


def keys_in_processes(expression: str) -> set[str]:
    """What the expression gives in processes with different hash seeds."""
    seen = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run([sys.executable, "-c", KEYS, expression], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        seen.add(out)
    return seen


def test_a_sorted_filter_over_a_map_is_the_same_in_every_process() -> None:
    assert keys_in_processes(f"sort({MAP}.filter(k, true))") == {
        "['Chief', 'Evaluator', 'Launcher', 'Master', 'PS', 'Worker']"}
