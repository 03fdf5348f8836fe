"""Which pods a clean-up deletes: the clean-pod policy (All, Running, None) over observations.

Both the executor of `cleanupPods` and `decide` (which must know whether a job is
settled before it may say Failed or Succeeded) ask the same question, so it is
answered here once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.observe import PodFacts

_CLEANED_BY_POLICY: dict[str, frozenset[str] | None] = {
    "All": None,
    "Running": frozenset({"podPending", "podRunning", "childPending", "childReady"}),
    "None": frozenset(),
}
_ABSENT = frozenset({"podMissing", "childMissing"})


def cleanup_policy(argument: Any, run_policy: Mapping[str, Any]) -> str:
    """The policy in force: the action's argument, else runPolicy.cleanPodPolicy, else None."""
    return str(argument or run_policy.get("cleanPodPolicy") or "None")


def pods_to_clean(policy: str, facts: Mapping[ReplicaId, PodFacts]) -> Iterator[ReplicaId]:
    """The replicas whose pods (or spec.child objects) `policy` deletes: those that exist,
    as observed; Running takes those that have not ended."""
    wanted = _CLEANED_BY_POLICY.get(policy, frozenset())
    for replica, observed in facts.items():
        if observed.observation in _ABSENT:
            continue
        if wanted is None or observed.observation in wanted:
            yield replica
