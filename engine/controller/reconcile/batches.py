"""Slow-start batches: one pass's creates of a kind of child, sent a batch at a time, the
requests of a batch at once.

kube-controller-manager's ReplicaSet and Job controllers create a sync's missing pods in
batches of 1, 2, 4, ... (`slowStartBatch`; the Job controller's `manageJob`), each batch's
creates in goroutines of their own, at most 500 a sync (`burstReplicas`,
`MaxPodCreateDeletePerSync`); after a batch in which a create was refused no further batch
starts, so a quota that refuses every pod costs one request, not hundreds. Here the
requests of a batch go through a bounded thread pool shared by the engine's reconciles
(the client is synchronous, and its rate limit is shared by every thread).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from engine.kube.errors import ApiError

BURST_REPLICAS = 500
"""At most this many creates (or deletes) of one type a pass: kube-controller-manager's
ReplicaSet burstReplicas and the Job controller's MaxPodCreateDeletePerSync."""

SENDERS = 16
"""Threads sending the requests of batches, shared by all reconciles of an engine.

Upstream starts a goroutine per create of a batch; threads cost more, and a request is
mostly waiting for the API server, so 16 keep a server of one's own busy (measured on
`jobmachine up`: docs/performance.md) while the client's rate limit still decides how
fast they go against a shared one. The client keeps 32 idle connections, so these do not
open new ones for every batch."""

Result = TypeVar("Result")


@dataclass
class SlowStart:
    """kube-controller-manager's slowStartBatch over one pass's creates of one type: batches
    of 1, 2, 4, ... creates; once a batch had a refused create, no further batch starts."""

    count: int = 0
    """Creates tried so far."""
    batch_end: int = 1
    """The count at which the current batch is over."""
    batch_size: int = 1
    failure: ApiError | None = None
    """The first refused create."""

    def may_try(self) -> bool:
        """Whether one more create may be tried now."""
        return self.room() > 0

    def room(self) -> int:
        """How many more creates the current batch takes (0: this pass tries no more)."""
        return max(min(self.batch_end, BURST_REPLICAS) - self.count, 0)

    def tried(self) -> None:
        """One create was tried: a batch that went through opens the next, twice as big."""
        self.count += 1
        if self.count == self.batch_end and self.failure is None:
            self.batch_size *= 2
            self.batch_end += self.batch_size

    def failed(self, exc: ApiError) -> None:
        """A create was refused: the batch ends as planned, and no other starts."""
        if self.failure is None:
            self.failure = exc


def send_all(pool: Executor | None, calls: Sequence[Callable[[], Result]]
             ) -> list[Result | Exception]:
    """Each call's result, or the exception it raised, in the order of `calls`: sent at once
    through `pool`, or one after another in this thread without one (or for a single call).

    Every call has ended when this returns, as upstream waits for a whole batch."""
    if pool is None or len(calls) < 2:
        return [_outcome(call) for call in calls]
    futures = [pool.submit(_outcome, call) for call in calls]
    return [future.result() for future in futures]


def _outcome(call: Callable[[], Result]) -> Result | Exception:
    try:
        return call()
    except Exception as exc:  # handed back to the pass, which knows what each one means
        return exc


_senders = ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="batch-send")


def senders() -> ThreadPoolExecutor:
    """The engine's pool of `SENDERS` threads (each started when first needed; idle ones end
    with the process)."""
    return _senders
