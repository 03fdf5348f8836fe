"""A pass's tracking-finalizer removals are sent at once through the run's pool, as the Job
controller removes a sync's finalizers in parallel, and a failure is raised only once every
removal has answered. The pass and API helpers are test_release_tracking.py's."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest

from engine.controller.reconcile.actions import release_tracking
from engine.controller.reconcile.children import TRACKING_FINALIZER
from engine.kube.resources import Resource
from tests.scenarios.world import worker
from tests.unit.controller.test_release_tracking import RUNNING, SUCCEEDED, Api, pod, run_of

ENDED = 4


class TogetherApi(Api):
    """Answers a removal only once `together` are in flight at once (one after another, the
    barrier breaks instead of hanging), and refuses those named in `refused`."""

    def __init__(self, together: int, refused: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self._barrier = threading.Barrier(together, timeout=10)
        self._refused = refused

    def patch(self, resource: Resource, name: str, body: Any, *, namespace: str | None = None,
              patch_type: str = "merge") -> dict[str, Any]:
        self._barrier.wait()
        if name in self._refused:
            raise RuntimeError(f"connection reset sending {name}")
        return super().patch(resource, name, body, namespace=namespace, patch_type=patch_type)


@pytest.fixture
def pool() -> Any:
    with ThreadPoolExecutor(ENDED) as senders:
        yield senders


def ended_pass(api: Api, pool: ThreadPoolExecutor) -> Any:
    """A pass over a job whose ENDED Workers' pods ended and whose last one still runs."""
    pods = {worker(i): pod(f"w{i}", TRACKING_FINALIZER) for i in range(ENDED + 1)}
    facts = {worker(i): SUCCEEDED for i in range(ENDED)} | {worker(ENDED): RUNNING}
    return replace(run_of(api, pods=pods, facts=facts, workers=ENDED + 1), pool=pool)


def test_the_removals_of_a_pass_are_in_flight_together(pool: ThreadPoolExecutor) -> None:
    api = TogetherApi(ENDED)
    release_tracking(ended_pass(api, pool))
    assert sorted(api.patched) == [f"w{i}" for i in range(ENDED)]


def test_a_failed_removal_is_raised_after_the_others_went_through(
        pool: ThreadPoolExecutor) -> None:
    api = TogetherApi(ENDED, refused=frozenset({"w0"}))
    with pytest.raises(RuntimeError, match="sending w0"):
        release_tracking(ended_pass(api, pool))
    assert sorted(api.patched) == [f"w{i}" for i in range(1, ENDED)]

