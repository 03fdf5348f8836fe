"""Shared fixtures for the controller plumbing tests: a clock that moves only when told (the
log records a test made are `tests/unit/conftest.py`'s)."""

from __future__ import annotations

import pytest


class FakeClock:
    """A monotonic clock for injection: `now` stays put until `advance` moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
