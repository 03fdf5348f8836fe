"""Every order of events in a rollout, explored for small shapes: the rollout's plan
(engine/controller/rollouts/plan.py) against ReplicaSets that make, ready and delete their
pods one at a time, in any order.

The Deployment controller's promise, for any interleaving: the pods the ReplicaSets want
never exceed `replicas + maxSurge`, and available pods never drop below `replicas -
maxUnavailable` (from a fully available start, without failures); and from every
situation the rollout can still complete. Under Recreate, pods of two revisions never
exist at once. Situations are (per revision: wanted pods,
pods, available pods); after each event the plan runs until it changes nothing, as the
engine reconciles after each watch event.
"""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.controller.rollouts.plan import RolloutInput, plan_rollout
from engine.controller.rollouts.revisions import Create, Revision, Update
from engine.definition import RenderedRollout

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OLD = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"image": "a:1"}]}}
NEW = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"image": "a:2"}]}}
Situation = tuple[tuple[str, int, int, int], ...]
"""Per revision, oldest first: (name, wanted pods, pods, available pods)."""


def revision(name: str, wanted: int, pods: int, available: int, order: int) -> Revision:
    template = OLD if name == "old" else NEW
    return Revision.of({
        "metadata": {"name": name, "uid": name, "creationTimestamp": f"t{order}",
                     "resourceVersion": "1", "generation": 1,
                     "annotations": {"deployment.kubernetes.io/revision": str(order + 1)}},
        "spec": {"replicas": wanted, "template": template},
        # As the ReplicaSet machine writes it: the pods it keeps (a surplus pod, deleted
        # not-ready first, is not counted once the ReplicaSet has seen its spec).
        "status": {"replicas": min(pods, wanted), "availableReplicas": min(available, wanted),
                   "readyReplicas": min(available, wanted), "observedGeneration": 1},
    }, running_pods=pods)


def rendered(replicas: int, surge: Any = "25%", unavailable: Any = "25%",
             strategy: str = "RollingUpdate") -> RenderedRollout:
    return RenderedRollout(
        replicas=replicas, selector={"matchLabels": {"app": "web"}}, template=NEW,
        strategy=strategy, max_surge=surge, max_unavailable=unavailable,
        paused=False, min_ready_seconds=0, revision_history_limit=10,
        progress_deadline_seconds=600, child_api_version="apps/v1",
        child_kind="ReplicaSet")


def settle(situation: Situation, rollout: RenderedRollout) -> Situation:
    """The plan run until it changes nothing: its creates and scalings applied."""
    for _ in range(20):
        children = [revision(n, w, p, a, i) for i, (n, w, p, a) in enumerate(situation)]
        job = {"metadata": {"name": "web", "namespace": "ns", "uid": "d", "generation": 1},
               "apiVersion": "apps/v1", "kind": "Deployment"}
        plan = plan_rollout(RolloutInput(job=job, stored={}, children=children,
                                         rollout=rollout, now=NOW))
        wanted = {n: w for n, w, _, _ in situation}
        for op in plan.operations:
            if isinstance(op, Create):
                wanted["new"] = op.replicas
            elif isinstance(op, Update):
                wanted[op.name] = op.replicas
        after = tuple((n, wanted[n], p, a) for n, _, p, a in situation)
        if "new" in wanted and all(n != "new" for n, *_ in situation):
            after = (*after, ("new", wanted["new"], 0, 0))
        if after == situation:
            return situation
        situation = after
    raise AssertionError(f"the plan never settles from {situation}")


def events(situation: Situation) -> list[Situation]:
    """What a ReplicaSet can do next, one pod at a time: make a missing pod, see one become
    available, delete a surplus one (not available ones first, as its deletion order)."""
    found = []
    for i, (name, wanted, pods, available) in enumerate(situation):
        changed: list[tuple[int, int]] = []
        if pods < wanted:
            changed.append((pods + 1, available))
        if available < pods:
            changed.append((pods, available + 1))
        if pods > wanted:
            changed.append((pods - 1, available if available < pods else available - 1))
        for pods_after, available_after in changed:
            found.append((*situation[:i], (name, wanted, pods_after, available_after),
                          *situation[i + 1:]))
    return found


def bounds(replicas: int, surge: Any, unavailable: Any) -> tuple[int, int]:
    """(most pods wanted, fewest available), worked out here as the API documents them:
    a percentage of replicas, the surge rounded up, the unavailable down, both 0 making
    the unavailable 1."""
    up = -(-int(surge[:-1]) * replicas // 100) if isinstance(surge, str) else surge
    down = int(unavailable[:-1]) * replicas // 100 if isinstance(unavailable, str) \
        else unavailable
    if up == 0 and down == 0:
        down = 1
    return replicas + up, replicas - min(down, replicas)


def explore(rollout: RenderedRollout, holds: Any) -> int:
    """Every situation reachable from a fully available old revision, each of which
    `holds`; the rollout can complete from each. How many there are."""
    replicas = rollout.replicas
    start = settle((("old", replicas, replicas, replicas),), rollout)
    seen, queue, edges = {start}, deque([start]), {}
    while queue:
        situation = queue.popleft()
        holds(situation)
        edges[situation] = [settle(after, rollout) for after in events(situation)]
        for after in edges[situation]:
            if after not in seen:
                seen.add(after)
                queue.append(after)
    done = {s for s in seen if s[-1][0] == "new" and s[-1][1:] == (replicas,) * 3
            and all(w == p == 0 for n, w, p, _ in s if n == "old")}
    assert done, "the rollout never completes"
    reaching = set(done)
    while True:  # every situation can still complete (no dead end)
        more = {s for s in seen - reaching if any(e in reaching for e in edges[s])}
        if not more:
            break
        reaching |= more
    assert reaching == seen, sorted(seen - reaching)[:3]
    return len(seen)


@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize(("surge", "unavailable"), [
    ("25%", "25%"), (1, 0), (0, 1), (2, 1), ("50%", "50%"), (0, 0), (3, 0),
])
def test_a_rolling_update_stays_within_its_bounds_whatever_the_order(
    replicas: int, surge: Any, unavailable: Any
) -> None:
    most, least = bounds(replicas, surge, unavailable)

    def holds(situation: Situation) -> None:
        assert sum(w for _, w, _, _ in situation) <= most, situation
        assert sum(a for *_, a in situation) >= least, situation

    assert explore(rendered(replicas, surge, unavailable), holds) > 1


@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_recreate_never_runs_both_revisions_pods_whatever_the_order(replicas: int) -> None:
    def holds(situation: Situation) -> None:
        assert sum(1 for _, _, pods, _ in situation if pods > 0) <= 1, situation

    assert explore(rendered(replicas, strategy="Recreate"), holds) > 1
