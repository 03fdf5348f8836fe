"""A compiled machine is shared by the engine's workers, and builds the event of a set of
observations the first time it is met: two workers meeting a new set at once must build
it once, or every transition in it would be tried twice (a failing guard reported twice)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from engine.definition import StepResult, step
from tests.unit.definition.test_step import REPLICA, compiled, facts

# A failed pod can only restart its replica, and the guard of that transition reads
# pod.exitCode: a pod without one fails the guard, and the replica stays where it is.
ONLY_RESTARTS = REPLICA.replace(
    '      - {from: [Pending, Running], to: Failed, "on": podFailed}\n', ""
)


class _MeetingLock:
    """The machine's lock, taken only once both workers are waiting for it: each has
    looked for the event without the lock first, and found none."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._both = threading.Barrier(2, timeout=10)

    def __enter__(self) -> None:
        self._both.wait()
        self._lock.acquire()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._lock.release()


def test_two_workers_meeting_a_new_set_of_observations_build_its_event_once() -> None:
    machine = compiled(replica=ONLY_RESTARTS).replica
    events = machine.events
    lock = events._lock
    events._lock = _MeetingLock(lock)  # type: ignore[assignment]

    def failed() -> StepResult:
        return step(machine, "Running", facts("podFailed", pod={}))

    with ThreadPoolExecutor(2) as workers:
        both = [workers.submit(failed) for _ in range(2)]
        results = [result.result(timeout=30) for result in both]
    events._lock = lock
    results.append(failed())
    assert [(r.state, len(r.errors)) for r in results] == [("Running", 1)] * 3
    assert results[-1].errors[0].startswith("transition 4 guard:")
