"""Waiting for the engine's caches to fill at start, for as long as they make progress.

A fixed deadline crash-loops an engine whose caches are large: 100,000 pods and as many
Services are 400 pages of a list, which on a busy control plane take longer than any fixed
minute. kube-controller-manager waits for its caches without a limit; controller-runtime stops
after two minutes. The engine waits while every list brings pages and stops only when one
brought nothing for the whole timeout, which is what a missing CRD, a refused list or an
unreachable server look like; the cause is logged by the informer meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol

from engine.kube.resources import Resource

POLL_S = 0.2
"""How often the wait looks at `stop` and at the lists' progress."""


class Syncing(Protocol):
    """What the wait reads of an informer."""

    @property
    def resource(self) -> Resource: ...

    @property
    def progressed_at(self) -> float | None: ...

    def wait_synced(self, timeout: float) -> bool: ...


def wait_for_caches(informers: Sequence[Syncing], *, timeout_s: float,
                    stop: threading.Event | None = None) -> bool:
    """True once every informer has synced; False if `stop` was set first; TimeoutError when
    an unsynced informer's list brought no page for `timeout_s` seconds."""
    started = time.monotonic()
    for informer in informers:
        while not informer.wait_synced(POLL_S):
            if stop is not None and stop.is_set():
                return False
            quiet_since = max(started, informer.progressed_at or started)
            if time.monotonic() - quiet_since >= timeout_s:
                raise TimeoutError(
                    f"caches did not sync: the list of {informer.resource.plural} brought "
                    f"nothing for {timeout_s:.0f}s")
    return True
