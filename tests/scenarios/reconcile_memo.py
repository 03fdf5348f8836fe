"""Every decision the simulated world makes, made twice: with the job's replica steps
remembered from its earlier passes (as the engine's reconciler decides) and without; the
two must be equal (engine/controller/reconcile/replica_memo.py).

`RememberingDecide` stands in for `decide` where the simulated world calls it, keeps one
memo per job (by uid) for as long as it is in place, and counts the steps it recalled.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from engine.controller.reconcile import decide as deciding
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.replica_memo import ReplicaMemo
from engine.simulation import world as simulated


class RememberingDecide:
    """`decide` checked against itself with a memo; its answer is the one without."""

    def __init__(self) -> None:
        self.memos: dict[str, ReplicaMemo] = {}

    def __call__(self, definition: Any, job: Mapping[str, Any], *args: Any,
                 **kwargs: Any) -> Decision:
        plain = deciding.decide(definition, job, *args, **kwargs)
        memo = self.memos.setdefault(str(job["metadata"].get("uid")), ReplicaMemo())
        remembered = deciding.decide(definition, job, *args, memo=memo, **kwargs)
        assert remembered == plain, (
            f"{job['metadata'].get('name')}: the decision with remembered replica steps "
            f"differs from the one without")
        return plain

    @property
    def recalled(self) -> int:
        """Replica steps recalled instead of taken, over every job."""
        return sum(memo.steps_recalled for memo in self.memos.values())

    @property
    def taken(self) -> int:
        """Replica steps taken, over every job (with the memo)."""
        return sum(memo.steps_taken for memo in self.memos.values())


@contextmanager
def remembering(monkeypatch: pytest.MonkeyPatch) -> Iterator[RememberingDecide]:
    """The simulated world decides through a `RememberingDecide` while in the block."""
    checked = RememberingDecide()
    with monkeypatch.context() as patched:
        patched.setattr(simulated, "decide", checked)
        yield checked
