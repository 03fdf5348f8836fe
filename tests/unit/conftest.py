"""Fixtures every unit test may take: the log records a test made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger


@pytest.fixture
def records() -> Iterator[list[dict[str, Any]]]:
    """Every log record (DEBUG and up) made during the test, as loguru's record dicts."""
    captured: list[dict[str, Any]] = []
    sink = logger.add(lambda message: captured.append(dict(message.record)), level="DEBUG")
    yield captured
    logger.remove(sink)
