"""Which pods a clean-up deletes: the policy in force and the replicas it takes, including an
unknown policy (nothing) and replicas whose pods are already gone (skipped, not a stop)."""

from __future__ import annotations

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.cleanup import cleanup_policy, pods_to_clean
from engine.controller.reconcile.observe import PodFacts


@pytest.mark.parametrize(
    ("argument", "run_policy", "policy"),
    [
        ("All", {"cleanPodPolicy": "Running"}, "All"),
        (None, {"cleanPodPolicy": "Running"}, "Running"),
        ("", {"cleanPodPolicy": ""}, "None"),
        (None, {}, "None"),
    ],
)
def test_the_policy_in_force_is_the_argument_else_the_run_policy_else_none(
    argument: str | None, run_policy: dict[str, str], policy: str
) -> None:
    assert cleanup_policy(argument, run_policy) == policy


FACTS = {
    ReplicaId("Worker", 0): PodFacts("podMissing"),
    ReplicaId("Worker", 1): PodFacts("podRunning"),
    ReplicaId("Worker", 2): PodFacts("childMissing"),
    ReplicaId("Worker", 3): PodFacts("podSucceeded"),
    ReplicaId("Worker", 4): PodFacts("podPending"),
    ReplicaId("Worker", 5): PodFacts("childReady"),
}


@pytest.mark.parametrize(
    ("policy", "indexes"),
    [("All", [1, 3, 4, 5]), ("Running", [1, 4, 5]), ("None", []), ("Sometimes", [])],
)
def test_a_policy_takes_the_replicas_whose_pods_exist_as_it_says(
    policy: str, indexes: list[int]
) -> None:
    assert [r.index for r in pods_to_clean(policy, FACTS)] == indexes
