"""An event the server refuses because its namespace is being deleted is dropped quietly
(client-go's recorder logs it at V(5) and never retries); any other refusal is a warning."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loguru import logger

from engine.controller.reporting.events import EventRecorder
from engine.kube.errors import Forbidden

from .conftest import FakeClock
from .test_events import WAIT, FakeEventClient, record, settle

TERMINATING = Forbidden(403, "Forbidden", (
    'events "train.18a2b" is forbidden: unable to create new content in namespace team '
    "because it is being terminated"), {"details": {"kind": "events", "causes": [
        {"reason": "NamespaceTerminating", "message": "namespace team is being terminated",
         "field": "metadata.namespace"}]}})
WEBHOOK = Forbidden(403, "Forbidden", (
    'events "train.18a2b" is forbidden: admission webhook "audit.example.com" denied the '
    "request: no events here"), {"details": {"kind": "events"}})


@pytest.fixture
def api() -> FakeEventClient:
    return FakeEventClient()


@pytest.fixture
def recorder(api: FakeEventClient, clock: FakeClock) -> Iterator[EventRecorder]:
    recorder = EventRecorder(api, host="node-1", clock=clock)
    recorder.start()
    yield recorder
    recorder.stop(flush_timeout_s=WAIT)


@pytest.fixture
def warned() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(m.record["message"]), level="WARNING")
    yield lines
    logger.remove(sink)


@pytest.mark.parametrize(("refusal", "warnings"), [(TERMINATING, 0), (WEBHOOK, 1)],
                         ids=["namespace terminating", "webhook"])
def test_a_refused_post_warns_unless_the_namespace_is_going(
    recorder: EventRecorder, api: FakeEventClient, warned: list[str], refusal: Forbidden,
    warnings: int,
) -> None:
    api.failures.append(refusal)
    record(recorder, "Worker 0 exited with code 137")
    settle(recorder)
    assert api.kinds() == ["create"], "a refusal is not retried"
    assert len([line for line in warned if "could not post event" in line]) == warnings
    assert recorder.stats().failed == 1
