"""How a job's child syncs (its objects, its schedule's children, its rollout's revisions)
say what they did: the engine's log bound to the job, and a Warning Event on the job for
what went wrong, so `kubectl describe` shows it where the log may not be read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from loguru import logger

from engine.controller.reporting.events import EventRecorder


class JobNamed(Protocol):
    """A job's key: `str()` names the job (namespace/name), `kind` is its kind."""

    @property
    def kind(self) -> str: ...


def job_logger(key: JobNamed) -> Any:
    """The engine's logger, bound to the job."""
    return logger.bind(job=str(key), kind=key.kind)


def warn_job(recorder: EventRecorder, job: Mapping[str, Any], key: JobNamed, reason: str,
             message: str) -> None:
    """A Warning Event on the job, and the same words in the log."""
    recorder.record(job, type="Warning", reason=reason, message=message)
    job_logger(key).warning(message)
