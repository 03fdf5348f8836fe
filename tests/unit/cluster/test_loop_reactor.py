"""The store's background duties on the server's event loop: run after the write that
queued them (never inside it), in order, a delay of zero or less meaning soon, and a
failing duty logged without stopping the others. A fresh event loop of the test's own,
run on this thread and closed after."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from engine.cluster.apiserver.registry.reactor import LoopReactor


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    made = asyncio.new_event_loop()
    yield made
    made.close()


def settle(loop: asyncio.AbstractEventLoop, seconds: float = 0.0) -> None:
    loop.run_until_complete(asyncio.sleep(seconds))


def test_a_task_runs_after_the_call_that_queued_it_in_order(
    loop: asyncio.AbstractEventLoop
) -> None:
    reactor = LoopReactor(loop)
    ran: list[str] = []
    reactor.soon(lambda: ran.append("first"))
    reactor.soon(lambda: ran.append("second"))
    assert ran == []
    settle(loop)
    assert ran == ["first", "second"]


def test_a_negative_delay_is_soon(loop: asyncio.AbstractEventLoop) -> None:
    reactor = LoopReactor(loop)
    ran: list[str] = []
    reactor.later(-5.0, lambda: ran.append("late"))
    settle(loop)
    assert ran == ["late"]


def test_a_failing_task_is_logged_and_the_next_still_runs(
    loop: asyncio.AbstractEventLoop, records: list[dict[str, Any]]
) -> None:
    reactor = LoopReactor(loop)
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    reactor.soon(broken)
    reactor.soon(lambda: ran.append("after"))
    settle(loop)
    assert ran == ["after"]
    failures = [r for r in records if r["level"].name == "ERROR"]
    assert len(failures) == 1 and "background task" in failures[0]["message"]
    assert "broken" in failures[0]["message"]
