"""Waiting for a job's conditions: every version the watch brings is judged at once.

The server is a script of watch answers and the clock is fake: a watch that brings
nothing more holds the clock until its timeout, as the API server holds the stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from engine.kube.client import KubeClient
from engine.kube.errors import Forbidden, Gone
from engine.kube.resources import Resource
from engine.sdk import JobClientError, JobFailedError, JobNotFoundError, JobTimeoutError
from engine.sdk.waiting import reached, wait_for_conditions
from tests.kinds import PYTORCHJOBS

Obj = dict[str, Any]
SUCCEEDED = frozenset({"Succeeded"})


def version(rv: int, *conditions: tuple[str, str], name: str = "mnist") -> Obj:
    """The job at resourceVersion `rv` with these (type, status) conditions."""
    return {"kind": "PyTorchJob",
            "metadata": {"namespace": "team", "name": name, "resourceVersion": str(rv)},
            "status": {"conditions": [
                {"type": t, "status": s, "reason": f"{t}Reason", "message": f"{t} message"}
                for t, s in conditions]}}


def modified(obj: Obj) -> Obj:
    return {"type": "MODIFIED", "object": obj}


class Stream:
    def __init__(self, events: list[Obj]) -> None:
        self._events = iter(events)
        self.closed = False

    def __iter__(self) -> Iterator[Obj]:
        return self._events

    def close(self) -> None:
        self.closed = True


class Server:
    """Each watch call takes the next answer: events, or an error to raise."""

    def __init__(self, *answers: list[Obj] | Exception, current: Obj | None = None) -> None:
        self.answers = list(answers)
        self.current = current
        self.now = 0.0
        self.watches: list[tuple[str, int]] = []
        self.streams: list[Stream] = []

    def clock(self) -> float:
        return self.now

    def watch(self, resource: Resource, namespace: str, *, resource_version: str,
              timeout_seconds: int) -> Stream:
        self.watches.append((resource_version, timeout_seconds))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if not answer:
            self.now += timeout_seconds
        stream = Stream(answer)
        self.streams.append(stream)
        return stream

    def get(self, resource: Resource, name: str, namespace: str) -> Obj:
        assert self.current is not None
        return self.current


def wait(server: Server, job: Obj, expected: frozenset[str] = SUCCEEDED,
         timeout: float = 10.0, seen: list[Obj] | None = None) -> Obj:
    return wait_for_conditions(
        cast(KubeClient, server), PYTORCHJOBS, job, expected=expected, timeout=timeout,
        on_version=seen.append if seen is not None else None, clock=server.clock)


def test_reached_is_true_when_an_expected_condition_is_true() -> None:
    assert reached(version(1, ("Succeeded", "True")), SUCCEEDED)
    assert not reached(version(1, ("Succeeded", "False"), ("Running", "True")), SUCCEEDED)
    assert reached(version(1, ("Failed", "True")), frozenset({"Failed"}))


def test_reached_raises_on_a_failure_nobody_waits_for() -> None:
    with pytest.raises(JobFailedError) as raised:
        reached(version(1, ("Running", "False"), ("Failed", "True")), SUCCEEDED)

    assert (raised.value.reason, raised.value.message) == ("FailedReason", "Failed message")


def test_every_version_is_seen_and_the_first_that_succeeded_is_returned() -> None:
    server = Server([modified(version(2, ("Running", "True"))),
                     modified(version(3, ("Running", "True"), name="other")),
                     modified(version(4, ("Succeeded", "True"))),
                     modified(version(5, ("Succeeded", "True")))])
    seen: list[Obj] = []

    done = wait(server, version(1), seen=seen)

    assert done["metadata"]["resourceVersion"] == "4"
    assert [v["metadata"]["resourceVersion"] for v in seen] == ["1", "2", "4"]
    assert server.watches == [("1", 10)]
    assert server.streams[0].closed


def test_a_watch_the_server_ends_is_opened_again_from_the_last_version() -> None:
    server = Server([modified(version(7, ("Running", "True")))],
                    [modified(version(9, ("Succeeded", "True")))])

    wait(server, version(1))

    assert [rv for rv, _ in server.watches] == ["1", "7"]


def test_a_failure_ends_the_wait_with_the_failed_conditions_reason() -> None:
    server = Server([modified(version(2, ("Failed", "True")))])

    with pytest.raises(JobFailedError, match="PyTorchJob team/mnist failed: FailedReason"):
        wait(server, version(1))


def test_a_failure_that_is_expected_is_returned() -> None:
    server = Server([modified(version(2, ("Failed", "True")))])

    assert wait(server, version(1), expected=frozenset({"Succeeded", "Failed"}))


def test_no_expected_condition_in_time_is_a_timeout_with_the_last_version_seen() -> None:
    server = Server([modified(version(2, ("Running", "True")))], [])

    with pytest.raises(JobTimeoutError) as raised:
        wait(server, version(1), timeout=2.5)

    assert raised.value.job["metadata"]["resourceVersion"] == "2"
    assert server.watches == [("1", 3), ("2", 3)]


def test_an_expired_resource_version_reads_the_job_again() -> None:
    server = Server(Gone(410, "Expired", "too old", {}),
                    [modified(version(12, ("Succeeded", "True")))],
                    current=version(11))

    wait(server, version(1))

    assert [rv for rv, _ in server.watches] == ["1", "11"]


def test_a_job_deleted_while_waited_for_is_not_found() -> None:
    server = Server([{"type": "DELETED", "object": version(3)}])

    with pytest.raises(JobNotFoundError, match="was deleted while waiting"):
        wait(server, version(1))


def test_a_watch_the_server_refuses_is_a_job_client_error_with_its_status() -> None:
    server = Server(Forbidden(403, "Forbidden", "watch is not allowed", {}))

    with pytest.raises(JobClientError) as raised:
        wait(server, version(1))

    assert (raised.value.status, raised.value.reason) == (403, "Forbidden")
    assert "cannot read PyTorchJob team/mnist: watch is not allowed" in str(raised.value)
