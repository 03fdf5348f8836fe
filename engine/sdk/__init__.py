"""A Python client for jobs of every kind the cluster's machines govern.

`JobClient` creates, finds, waits for, reads the logs of and deletes jobs;
`JobBuilder` writes a job of any kind from typed calls, laid out as its machine says.
Every failure is a `JobClientError`. docs/sdk.md shows them at work.

Its log lines are off unless the program asks (`logger.enable("engine.sdk")`), as loguru
advises a library: a notebook should not fill with a client's debug lines.
"""

from loguru import logger

from engine.sdk.builder import JobBuilder
from engine.sdk.client import JobClient
from engine.sdk.errors import (
    InvalidJobError,
    JobClientError,
    JobFailedError,
    JobNotFoundError,
    JobTimeoutError,
    UnknownKindError,
)

__all__ = [
    "InvalidJobError",
    "JobBuilder",
    "JobClient",
    "JobClientError",
    "JobFailedError",
    "JobNotFoundError",
    "JobTimeoutError",
    "UnknownKindError",
]

logger.disable("engine.sdk")
