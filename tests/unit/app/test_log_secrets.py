"""A logged failure never shows the values of the failing frames' local variables."""

from __future__ import annotations

import uuid

import pytest
from loguru import logger

from engine.logs import LogFormat, configure_logging, reset_logging


def _read_a_secret(token: str) -> None:
    secret_data = {"password": token}
    raise KeyError(f"no such key in {len(secret_data)} entries")


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_logged_traceback_holds_no_frame_locals(
    log_format: LogFormat, capfd: pytest.CaptureFixture[str]
) -> None:
    token = f"tok-{uuid.uuid4().hex}"  # made at run time: no source line shows it
    configure_logging(log_format=log_format)
    try:
        try:
            _read_a_secret(token)
        except KeyError:
            logger.exception("the read failed")
        err = capfd.readouterr().err
    finally:
        reset_logging()
    assert "the read failed" in err and "KeyError" in err  # the failure itself is there
    assert "_read_a_secret" in err  # with where it happened
    assert token not in err
