"""The text log line names the object a line is about, without touching what other sinks see."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
from loguru import logger

from engine.logs import configure_logging, reset_logging


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch) -> Any:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging()
    yield stream
    reset_logging()


def test_a_line_bound_to_a_replica_names_its_job_and_replica(stderr: io.StringIO) -> None:
    logger.bind(job="default/mnist", replica="Worker-1").info("pod created")
    line = stderr.getvalue().strip()
    assert line.endswith("INFO    [default/mnist Worker-1] pod created")


def test_a_line_bound_to_nothing_has_no_brackets(stderr: io.StringIO) -> None:
    logger.info("engine started")
    assert stderr.getvalue().strip().endswith("INFO    engine started")


def test_braces_and_markup_in_a_bound_name_are_written_as_they_are(stderr: io.StringIO) -> None:
    logger.bind(job="ns/{odd}", pod="<red>p").warning("seen")
    assert "[ns/{odd} <red>p] seen" in stderr.getvalue()


def test_other_sinks_see_only_what_was_bound(stderr: io.StringIO) -> None:
    seen: list[dict[str, Any]] = []
    sink = logger.add(lambda message: seen.append(dict(message.record["extra"])))
    try:
        logger.bind(job="default/mnist").info("one")
    finally:
        logger.remove(sink)
    assert seen == [{"job": "default/mnist"}]


def test_an_exception_is_written_after_its_line(stderr: io.StringIO) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.bind(job="default/mnist").exception("failed")
    text = stderr.getvalue()
    assert "[default/mnist] failed" in text
    assert "RuntimeError: boom" in text
