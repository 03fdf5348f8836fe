"""Every order of events in a rollout, explored for small shapes: the engine's planner
(engine/controller/rollouts/plan.py) against ReplicaSets that make, ready and delete their
pods one at a time, in any order, with the exploration `jobmachine check` runs
(engine/modelcheck/rollouts.py).

Here the rollout is given to the planner directly (not rendered by a machine's CEL, which
tests/unit/modelcheck/test_rollouts.py covers), so a fault is the planner's. The bounds the
exploration judges by are worked out a second time here, from the API's documented rules,
so that an error in the checker's arithmetic does not hide one in the planner's.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition import RenderedRollout
from engine.modelcheck.rollouts import RolloutShape, explore_shape, rollout_shapes

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "a:2"}]}}


def rendered(shape: RolloutShape) -> RenderedRollout:
    """The rollout a Deployment of the shape asks for, with upstream's 25% defaults."""
    return RenderedRollout(
        replicas=shape.replicas, selector={"matchLabels": {"app": "web"}}, template=TEMPLATE,
        strategy=shape.strategy,
        max_surge="25%" if shape.max_surge is None else shape.max_surge,
        max_unavailable="25%" if shape.max_unavailable is None else shape.max_unavailable,
        paused=False, min_ready_seconds=0, revision_history_limit=10,
        progress_deadline_seconds=600, child_api_version="apps/v1", child_kind="ReplicaSet")


def bounds(shape: RolloutShape) -> tuple[int, int]:
    """(most pods wanted, fewest available) as the API documents them: a percentage of
    replicas, the surge rounded up, the unavailable down, both 0 making the unavailable 1;
    Recreate never surges and may go to 0."""
    replicas = shape.replicas
    if shape.strategy == "Recreate":
        return replicas, 0
    surge: Any = "25%" if shape.max_surge is None else shape.max_surge
    unavailable: Any = "25%" if shape.max_unavailable is None else shape.max_unavailable
    up = -(-int(surge[:-1]) * replicas // 100) if isinstance(surge, str) else surge
    down = (int(unavailable[:-1]) * replicas // 100 if isinstance(unavailable, str)
            else unavailable)
    if up == 0 and down == 0:
        down = 1
    return replicas + up, replicas - min(down, replicas)


@pytest.mark.parametrize("shape", list(rollout_shapes()), ids=str)
def test_a_rollout_keeps_its_bounds_and_completes_whatever_the_order(
    shape: RolloutShape,
) -> None:
    assert shape.bounds() == bounds(shape)
    situations, violations = explore_shape(shape, rendered(shape))
    assert violations == []
    assert situations > 1


def test_the_shapes_cover_recreate_and_rolling_updates_of_one_to_four_replicas() -> None:
    shapes = list(rollout_shapes())
    assert {s.replicas for s in shapes} == {1, 2, 3, 4}
    assert {s.strategy for s in shapes} == {"RollingUpdate", "Recreate"}
    assert RolloutShape(3, "RollingUpdate", 0, 0) in shapes
    assert RolloutShape(3, "RollingUpdate", "50%", "50%") in shapes
