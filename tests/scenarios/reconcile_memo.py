"""Every decision the simulated world makes, made twice: with the job's replica steps
remembered from its earlier passes (as the engine's reconciler decides) and without; the
two must be equal (engine/controller/reconcile/replica_memo.py). And where the reconciler
would take the job's last quiet decision again instead of deciding
(engine/controller/reconcile/quiet_decisions.py), that decision must be the one made.

`RememberingDecide` stands in for `decide` where the simulated world calls it, keeps one
memo per job (by uid) for as long as it is in place, and counts the steps it recalled. As
the reconciler keeps one observation per unchanged pod, it hands the remembering decide the
very observation of the last pass where the pod's is equal to it, so a replica whose last
visit did nothing is not visited again (`ReplicaMemo.quiet`) and is checked to be right.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import orjson
import pytest

from engine.controller.reconcile import decide as deciding
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.quiet_decisions import DecisionInputs, QuietDecisions, quiet
from engine.controller.reconcile.replica_memo import ReplicaMemo
from engine.controller.reconcile.variables import Surroundings
from engine.kube.timestamps import format_time, parse_time
from engine.simulation import world as simulated


class RememberingDecide:
    """`decide` checked against itself with a memo; its answer is the one without."""

    def __init__(self) -> None:
        self.memos: dict[str, ReplicaMemo] = {}
        self._observed: dict[str, dict[ReplicaId, PodFacts]] = {}
        self.quiet = QuietDecisions()
        self.quiet_checked = 0
        """Quiet decisions checked to be the same made later."""
        self._versions: dict[str, tuple[bytes, int]] = {}

    def __call__(self, definition: Any, job: Mapping[str, Any], spec: Any, record: Any,
                 pods: Mapping[ReplicaId, PodFacts], **kwargs: Any) -> Decision:
        plain = deciding.decide(definition, job, spec, record, pods, **kwargs)
        uid = str(job["metadata"].get("uid"))
        memo = self.memos.setdefault(uid, ReplicaMemo())
        remembered = deciding.decide(definition, job, spec, record,
                                     self._kept(uid, pods), memo=memo, **kwargs)
        assert remembered == plain, (
            f"{job['metadata'].get('name')}: the decision with remembered replica steps "
            f"differs from the one without")
        inputs = DecisionInputs(
            definition, self._versioned(uid, job), self._observed[uid],
            kwargs["job_observations"],
            kwargs.get("surroundings") or Surroundings(
                objects={child.name: {} for child in definition.objects}))
        recalled = self.quiet.recall(uid, inputs)
        assert recalled is None or recalled == plain, (
            f"{job['metadata'].get('name')}: the quiet decision taken again differs from "
            f"the one made")
        self.quiet.note(uid, inputs, plain, record)
        if quiet(plain, record):  # taken again later, on the same inputs: the clock moved
            later = format_time(parse_time(kwargs["now"]) + timedelta(days=1))
            again = deciding.decide(definition, job, spec, record, pods,
                                    **{**kwargs, "now": later})
            assert again == plain, (
                f"{job['metadata'].get('name')}: a quiet decision made a day later differs")
            self.quiet_checked += 1
        return plain

    def _versioned(self, uid: str, job: Mapping[str, Any]) -> dict[str, Any]:
        """`job` with a resourceVersion as a server gives one: a new one whenever its content
        changed (the simulated world keeps none)."""
        content = orjson.dumps(job, option=orjson.OPT_SORT_KEYS, default=str)
        last = self._versions.get(uid)
        version = last[1] if last is not None and last[0] == content else (
            (last[1] if last is not None else 0) + 1)
        self._versions[uid] = (content, version)
        return {**job, "metadata": {**job["metadata"], "resourceVersion": str(version)}}

    def _kept(self, uid: str, pods: Mapping[ReplicaId, PodFacts]
              ) -> dict[ReplicaId, PodFacts]:
        """`pods`, each observation equal to the last pass's being that very object."""
        last = self._observed.get(uid, {})
        kept = {replica: last[replica] if last.get(replica) == facts else facts
                for replica, facts in pods.items()}
        self._observed[uid] = kept
        return kept

    @property
    def recalled(self) -> int:
        """Replica steps recalled instead of taken, over every job."""
        return sum(memo.steps_recalled for memo in self.memos.values())

    @property
    def spared(self) -> int:
        """Replica visits left out as quiet, over every job."""
        return sum(memo.visits_spared for memo in self.memos.values())

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
