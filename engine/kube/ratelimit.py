"""The client-side rate limit: client-go's token bucket, shared by every thread of the engine."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class TokenBucket:
    """client-go's token bucket: `burst` requests at once, then `qps` per second; waits.

    Each caller reserves its token under the lock and sleeps outside it, so concurrent
    callers queue up one 1/qps apart instead of all waking at once. A `qps` of infinity is
    no limit (a server of one's own, as under `jobmachine up`).
    """

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be positive and burst at least 1, not {qps} and {burst}")
        self._qps = qps
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._lock = threading.Lock()

    def take(self) -> None:
        """Take one token, waiting until it is due."""
        if math.isinf(self._qps):
            return
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1
            wait = -self._tokens / self._qps
        if wait > 0:
            self._sleep(wait)
