"""Logging configured by a command run in-process survives the end of that command."""

from __future__ import annotations

import io
import sys

import pytest
from loguru import logger

from engine.logs import configure_logging, reset_logging


def test_lines_after_the_configured_stream_closed_go_to_the_current_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner_stream, later = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", runner_stream)
    configure_logging()
    try:
        logger.info("while the command runs")
        runner_stream.close()  # the runner is done with its stream
        monkeypatch.setattr(sys, "stderr", later)
        logger.info("after it")
    finally:
        reset_logging()
    assert "after it" in later.getvalue()
    assert "Logging error" not in later.getvalue()
