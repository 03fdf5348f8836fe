"""Where log lines go: loguru for people (text) or collectors (one flat JSON object a line).

The kubernetes client, urllib3 and apscheduler log through the standard
`logging` module; an intercept handler routes them into loguru so a cluster's
log pipeline sees one format. Context bound with `logger.bind` (job, replica)
becomes top-level JSON fields, not a nested record.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from datetime import UTC
from typing import Any, Literal

import orjson
from loguru import logger

LogFormat = Literal["text", "json"]
_TEXT_TIME_AND_LEVEL = "<green>{time:HH:mm:ss.SSS}</green> <level>{level: <7}</level> "
_CONTEXT_KEYS = ("job", "replica", "pod")
_QUIET_LIBRARIES = {"apscheduler": logging.WARNING, "urllib3": logging.WARNING,
                    "kubernetes": logging.WARNING, "transitions": logging.WARNING}


_DEFAULT_HANDLER = 0
"""The handler loguru installs at import (diagnose on, its own format): replaced here."""
_ours: list[int] = []


def configure_logging(*, log_format: LogFormat = "text", level: str = "INFO") -> None:
    """Send every log line (ours and the libraries') to stderr in `log_format`.

    Only loguru's default handler and the one an earlier call installed are replaced:
    sinks others added (a test's, an embedding program's) stay. Lines go to the stderr of
    this call, or to the current one once that is closed (`_StderrSink`).
    """
    for handler in (_DEFAULT_HANDLER, *_ours):
        with contextlib.suppress(ValueError):
            logger.remove(handler)
    _ours.clear()
    # diagnose=False: a traceback never prints the values of each frame's locals, where a
    # token or a Secret's data may be; backtrace=False: only the frames that raised.
    if log_format == "json":
        _ours.append(logger.add(_json_sink, level=level, diagnose=False, backtrace=False))
    else:
        _ours.append(logger.add(_StderrSink(sys.stderr), level=level, format=_text_format,
                                colorize=sys.stderr.isatty(), diagnose=False,
                                backtrace=False))
    logging.basicConfig(handlers=[_Intercept()], level=0, force=True)
    for name, library_level in _QUIET_LIBRARIES.items():
        logging.getLogger(name).setLevel(library_level)


def reset_logging() -> None:
    """Remove the handlers `configure_logging` installed (a test's clean-up)."""
    for handler in _ours:
        with contextlib.suppress(ValueError):
            logger.remove(handler)
    _ours.clear()


class _StderrSink:
    """Writes to the stderr of the moment logging was configured; should that stream be
    closed since (a command run in-process, whose runner swapped stderr), to the stderr of
    the moment of writing, instead of failing every line."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, message: Any) -> None:
        try:
            self._stream.write(str(message))
        except ValueError:  # I/O operation on a closed file
            self._stream = sys.stderr
            self._stream.write(str(message))


def _text_format(record: Any) -> str:
    """The text line's format for `record`: its bound job, replica and pod in brackets
    before the message. Worked out here rather than written into the record's `extra`,
    which every sink shares (a test's sink or an embedding program's would see a
    `context` key it never bound). The names go into the format itself, so braces are
    doubled and `<` escaped for loguru's markup."""
    extra = record["extra"]
    parts = [str(extra[k]) for k in _CONTEXT_KEYS if k in extra]
    context = ""
    if parts:
        escaped = f"[{' '.join(parts)}]".replace("{", "{{").replace("}", "}}").replace("<", r"\<")
        context = f"<cyan>{escaped}</cyan> "
    return _TEXT_TIME_AND_LEVEL + context + "{message}\n{exception}"


def _json_sink(message: Any) -> None:
    record = message.record
    line = {
        "time": record["time"].astimezone(UTC).isoformat(),
        "level": record["level"].name,
        "message": record["message"],
        "logger": record["name"],
        **{k: v if isinstance(v, str | int | float | bool) else str(v)
           for k, v in record["extra"].items()},
    }
    failure = record["exception"]
    if failure is not None:
        line["exception"] = "".join(
            traceback.format_exception(failure.type, failure.value, failure.traceback)
        )
    sys.stderr.write(orjson.dumps(line).decode() + "\n")


class _Intercept(logging.Handler):
    """Hands standard-library log records to loguru, keeping their level and origin."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        logger.opt(exception=record.exc_info, depth=6).bind(library=record.name).log(
            level, record.getMessage()
        )
