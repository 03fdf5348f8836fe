"""Whether the API server can be reached, as one fact the whole engine shares.

The client tells `ApiHealth` of every request: an answer means the server is reachable, a
connection that fails (refused, reset, timed out) or a gateway's 502/503/504 means it is
not. In the engine it logs exactly one WARNING when the server goes away and one INFO line
when it is back (with how long it was gone), so an outage costs two lines however many
watches, workers and event posts retry meanwhile; those log their failures at DEBUG when
`unreachable(error)` says the outage explains them. `/readyz` answers 503 while it is down.

An outage is told once it has lasted `ANNOUNCE_AFTER_S`: kept-alive connections that a
proxy or load balancer resets, and whose retries are answered at once, are a blip, logged
at DEBUG (a WARNING and an INFO line each time would bury real outages).

Only requests sent after the last change of state count: an answer to a request sent
before the outage was noticed does not end it, and a request sent before the server came
back does not start a new one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from loguru import logger

from engine.kube.errors import Unavailable

GATEWAY_STATUSES = frozenset({502, 503, 504})
"""What a load balancer or proxy answers when the server behind it is gone."""
ANNOUNCE_AFTER_S = 1.0
"""How long the server must have been unreachable before the outage is logged: at the first
failure after that, or at the return if no request failed meanwhile."""

Listener = Callable[[float], None]
"""Told, with the outage's length in seconds, once the server is reachable again."""


def unreachable(error: BaseException) -> bool:
    """Whether `error` is the server being out of reach (a failed connection or a gateway
    error), which `ApiHealth` reports once per outage; 429 and other 5xx answers are not."""
    return isinstance(error, Unavailable) and (
        error.status == 0 or error.status in GATEWAY_STATUSES)


class ApiHealth:
    """The reachability of one API server; thread-safe. `clock` is monotonic seconds.

    It logs outages only when `announce` is set (the engine sets it: it retries; a one-shot
    command that fails has its own error to print).
    """

    def __init__(
        self, server: str, *, announce: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._server = server
        self.announce = announce
        """Whether each outage's start and end are logged (WARNING, then INFO)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._announced = False
        self._changed_at = float("-inf")
        self._failures = 0
        self._outages = 0
        self._listeners: list[Listener] = []
        self._log = logger.bind(server=server)

    @property
    def reachable(self) -> bool:
        """False from the first failed request of an outage until a later one is answered."""
        with self._lock:
            return self._down_since is None

    @property
    def outages(self) -> int:
        """Outages seen so far (the one under way included)."""
        with self._lock:
            return self._outages

    def down_for(self) -> float:
        """Seconds since the server became unreachable; 0 while it is reachable."""
        with self._lock:
            return 0.0 if self._down_since is None else self._clock() - self._down_since

    def now(self) -> float:
        """The clock's time: what a request records as its start before it is sent."""
        return self._clock()

    def add_listener(self, listener: Listener) -> None:
        """Have `listener` called (on the thread of the answered request) after each outage."""
        self._listeners.append(listener)

    def failed(self, error: BaseException, *, sent_at: float) -> None:
        """A request sent at `sent_at` failed with `error`; only `unreachable` errors count."""
        if not unreachable(error):
            return
        with self._lock:
            now = self._clock()
            if self._down_since is not None:
                self._failures += 1
                if now - self._down_since >= ANNOUNCE_AFTER_S:
                    self._announce_outage(error)
                return
            if sent_at < self._changed_at:
                return  # sent before the server came back: not a new outage
            self._down_since = self._changed_at = now
            self._announced = False
            self._failures = 1
            self._outages += 1
            if self.announce:
                self._log.debug("a request to the API server at {} failed ({}); an outage if "
                                "it lasts {:g}s", self._server, error, ANNOUNCE_AFTER_S)

    def _announce_outage(self, error: BaseException | str) -> None:
        """The outage's WARNING, once (the lock is held)."""
        if self._announced or not self.announce:
            return
        self._announced = True
        self._log.warning("the API server at {} is unreachable ({}); retrying with "
                          "back-off (failures are logged at DEBUG until it answers)",
                          self._server, error)

    def answered(self, *, sent_at: float) -> None:
        """A request sent at `sent_at` got an answer (any HTTP status but a gateway error)."""
        with self._lock:
            if self._down_since is None or sent_at < self._changed_at:
                return  # reachable already, or sent before the outage was noticed
            now = self._clock()
            gone_for, failures = now - self._down_since, self._failures
            if gone_for >= ANNOUNCE_AFTER_S:
                self._announce_outage(f"for {gone_for:.1f}s")
            self._down_since = None
            self._changed_at = now
            listeners = list(self._listeners)
            level = "INFO" if self._announced else "DEBUG"
            if self.announce:
                self._log.log(level, "the API server at {} is reachable again after {:.1f}s ({} "
                              "failed {} meanwhile)", self._server, gone_for, failures,
                              "request" if failures == 1 else "requests")
        for listener in listeners:
            try:
                listener(gone_for)
            except Exception:
                self._log.exception("a listener of the API server's return failed")
