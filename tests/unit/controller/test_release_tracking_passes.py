"""Tracking finalizers released over passes that share the engine's memory of removals
(`ReleasedFinalizers`): a later pass over a cache that still shows a pod from before the
removal does not send it again, whether the pod is a replica's or unplaced; a copy that
carries no resourceVersion is not held back by a removal answered without one."""

from __future__ import annotations

from typing import Any, cast

from engine.controller.reconcile.actions import release_tracking, remove_finalizer
from engine.controller.reconcile.children import TRACKING_FINALIZER
from engine.controller.runtime.freshness import ReleasedFinalizers
from engine.kube.client import KubeClient
from tests.scenarios.world import worker
from tests.unit.controller.test_release_tracking import SUCCEEDED, Api, pod, run_of


def test_a_later_pass_over_the_copy_from_before_does_not_release_again() -> None:
    api = Api()
    shared = ReleasedFinalizers()
    pods = {worker(1): pod("w1", TRACKING_FINALIZER)}
    unplaced = (pod("u", TRACKING_FINALIZER),)
    for _ in range(2):
        run = run_of(api, pods=pods, facts={worker(1): SUCCEEDED}, unplaced=unplaced)
        run.released = shared
        release_tracking(run)
    assert api.patched == ["w1", "u"]


class Unversioned(Api):
    """Answers a patch without a resourceVersion."""

    def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        super().patch(*args, **kwargs)
        return {"metadata": {"name": args[1]}}


def test_a_copy_without_a_version_is_not_held_back_by_an_answer_without_one() -> None:
    api = Unversioned()
    released = ReleasedFinalizers()
    copy = pod("p", TRACKING_FINALIZER)
    del copy["metadata"]["resourceVersion"]
    for _ in range(2):
        remove_finalizer(cast(KubeClient, api), copy, TRACKING_FINALIZER, released=released)
    assert api.patched == ["p", "p"]
