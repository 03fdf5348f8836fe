"""The engine waits for its caches at start for as long as their lists bring pages.

A large cache (100,000 pods are 200 pages) must not be taken for a stuck one: before, a
fixed minute stopped an engine over such a cluster, at every start again (a crash loop).
"""

from __future__ import annotations

import threading
import time

import pytest

from engine.controller.runtime import cache_sync
from engine.controller.runtime.cache_sync import wait_for_caches
from engine.kube.resources import PODS


class PagedList:
    """A list that brings a page at each look for `pages` looks, then has synced; with
    `pages` None it never syncs and brings nothing after its start."""

    resource = PODS

    def __init__(self, pages: int | None, *, progressed_at: float | None = None) -> None:
        self.pages = pages
        self.progressed_at = progressed_at
        self.looks = 0

    def wait_synced(self, timeout: float) -> bool:
        time.sleep(timeout)
        self.looks += 1
        if self.pages is None:
            return False
        self.progressed_at = time.monotonic()
        return self.looks > self.pages


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_sync, "POLL_S", 0.01)


def test_a_list_that_keeps_bringing_pages_is_waited_for_past_the_timeout() -> None:
    paged = PagedList(pages=60)  # about 0.6 s of pages, against a timeout of 0.2 s
    started = time.monotonic()
    assert wait_for_caches([PagedList(pages=1), paged], timeout_s=0.2) is True
    assert paged.looks == 61 and time.monotonic() - started > 0.2


def test_a_list_that_brings_nothing_for_the_timeout_stops_the_start() -> None:
    with pytest.raises(TimeoutError) as stopped:
        wait_for_caches([PagedList(pages=None)], timeout_s=0.6)
    assert str(stopped.value) == "caches did not sync: the list of pods brought nothing for 1s"


def test_a_list_that_stalls_after_its_first_pages_stops_the_start() -> None:
    stalled = PagedList(pages=None, progressed_at=time.monotonic() + 0.1)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        wait_for_caches([stalled], timeout_s=0.2)
    assert time.monotonic() - started >= 0.3  # 0.2 s after its last page, not after the start


def test_a_stop_ends_the_wait() -> None:
    stop = threading.Event()
    stop.set()
    assert wait_for_caches([PagedList(pages=None)], timeout_s=60, stop=stop) is False
