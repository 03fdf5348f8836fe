"""A reconcile pass evaluates with its worker thread's remembered values (reconcile.py):
expressions over contents evaluated before in that thread are answered from memory."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from engine.controller.reconcile.children import JobKey
from engine.controller.reconcile.reconcile import Reconciler
from engine.controller.runtime.workers import Done, Outcome
from engine.definition.cel import (
    RememberedValues,
    Scope,
    compile_expression,
    remembered_values,
)


class _Seeing(Reconciler):
    """A reconciler whose pass only notes the remembered values it evaluates with."""

    def __init__(self) -> None:
        self._values = threading.local()
        self.seen: list[RememberedValues | None] = []

    def reconcile(self, key: JobKey) -> Outcome:
        self.seen.append(remembered_values())
        return Done()

    def _refusal_lifted(self, key: JobKey) -> None:
        pass


KEY = JobKey("PyTorchJob", "default", "a")


def test_passes_of_one_thread_share_its_remembered_values() -> None:
    reconciler = _Seeing()
    reconciler(KEY)
    reconciler(KEY)
    first, second = reconciler.seen
    assert isinstance(first, RememberedValues)
    assert second is first
    assert remembered_values() is None  # outside a pass: nothing remembered


def test_each_worker_thread_has_its_own() -> None:
    reconciler = _Seeing()
    reconciler(KEY)
    worker = threading.Thread(target=reconciler, args=(KEY,))
    worker.start()
    worker.join()
    mine, other = reconciler.seen
    assert isinstance(other, RememberedValues)
    assert other is not mine


def test_a_thread_keeps_fewer_values_than_the_model_checker() -> None:
    reconciler = _Seeing()
    reconciler(KEY)
    kept = reconciler.seen[0]
    assert kept is not None and kept.LIMIT < RememberedValues.LIMIT


def test_an_expression_over_equal_contents_is_not_run_again() -> None:
    """What the pass gains: the second evaluation over an equal job is answered from memory."""
    compiled = compile_expression("job.spec.x + 1", Scope("job"))
    runs: list[Any] = []

    class Counting:
        def execute(self, context: Any) -> Any:
            runs.append(context)
            return compiled.program.execute(context)

    expression = replace(compiled, program=Counting())
    values: list[Any] = []

    class Evaluating(_Seeing):
        def reconcile(self, key: JobKey) -> Outcome:
            values.append(expression.evaluate({"job": {"spec": {"x": 1}}}))
            return Done()

    reconciler = Evaluating()
    reconciler(KEY)
    reconciler(KEY)
    assert values == [2, 2]
    assert len(runs) == 1
