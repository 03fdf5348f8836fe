"""A refused list or watch advises granting a permission only when the authorizer refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loguru import logger

from engine.kube.errors import Forbidden
from tests.unit.kube.test_informer import ScriptedClient, obj, run

ADVICE = "grant the engine's service account this permission"
SA = "system:serviceaccount:jobmachine-system:jobmachine"


@pytest.fixture
def logged() -> Iterator[list[tuple[str, str]]]:
    lines: list[tuple[str, str]] = []
    sink = logger.add(lambda m: lines.append((m.record["level"].name, m.record["message"])),
                      level="WARNING")
    yield lines
    logger.remove(sink)


def _refused_watch(message: str) -> ScriptedClient:
    return ScriptedClient(lists=[([obj("a", "1")], "1")],
                          watches=[Forbidden(403, "Forbidden", message, {}), []])


def test_rbac_refusing_a_watch_gets_the_advice(logged: list[tuple[str, str]]) -> None:
    run(_refused_watch(f'pods is forbidden: User "{SA}" cannot watch resource "pods" in API '
                       f'group "" at the cluster scope'))
    assert [level for level, line in logged if ADVICE in line] == ["ERROR"]


def test_another_refusal_of_a_watch_gets_no_advice(logged: list[tuple[str, str]]) -> None:
    run(_refused_watch("pods is forbidden: the proxy in front of the server refused"))
    refused = [(level, line) for level, line in logged if "watch refused" in line]
    assert [level for level, _ in refused] == ["WARNING"]
    assert not [line for _, line in refused if ADVICE in line]
