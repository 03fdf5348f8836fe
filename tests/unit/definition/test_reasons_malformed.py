"""`${job.kind}` in reasons when the document is malformed or an action is written by name:
what is not a governed machine comes back unchanged, and nothing is added to an action."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition.reasons import expand_kind

REASON = {"reason": "${job.kind}Started"}


@pytest.mark.parametrize(
    "data",
    [
        None,
        ["spec"],
        {"spec": "job"},
        {"spec": {"governs": "PyTorchJob"}},
        {"spec": {"governs": {"kind": 5}, "job": {"states": {"A": {"condition": REASON}}}}},
        {"spec": {"job": {"states": {"A": {"condition": REASON}}}}},
    ],
)
def test_what_governs_no_kind_comes_back_unchanged(data: Any) -> None:
    assert expand_kind(data) == data


def _expanded_actions(*actions: Any) -> list[Any]:
    data = {
        "spec": {
            "governs": {"kind": "TFJob"},
            "job": {"states": {"A": {"onEnter": list(actions)}}},
        }
    }
    result: list[Any] = expand_kind(data)["spec"]["job"]["states"]["A"]["onEnter"]
    return result


def test_an_action_written_by_name_gets_its_reason_and_nothing_else() -> None:
    assert _expanded_actions(
        {"name": "event", "args": {"reason": "${job.kind}Waits", "message": "m"}},
        {"name": "createPod"},
        {"name": "event", "args": "not a mapping"},
        "countRestart",
    ) == [
        {"name": "event", "args": {"reason": "TFJobWaits", "message": "m"}},
        {"name": "createPod"},
        {"name": "event", "args": "not a mapping"},
        "countRestart",
    ]
