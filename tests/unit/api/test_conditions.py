"""Condition helpers: Kubeflow's ordering, transition times, and no change when nothing changed."""

from __future__ import annotations

from engine.api.conditions import get_condition, is_true, set_condition

T1, T2, T3 = "2025-01-01T00:00:01Z", "2025-01-01T00:00:02Z", "2025-01-01T00:00:03Z"


def created() -> list[dict[str, str]]:
    return set_condition(
        [], type="Created", status="True", reason="JobCreated", message="created", now=T1
    )


def test_a_new_condition_is_appended_with_both_times() -> None:
    assert created() == [
        {
            "type": "Created",
            "status": "True",
            "reason": "JobCreated",
            "message": "created",
            "lastUpdateTime": T1,
            "lastTransitionTime": T1,
        }
    ]


def test_the_input_list_and_its_conditions_are_not_changed() -> None:
    before = created()
    snapshot = [dict(c) for c in before]

    after = set_condition(before, type="Created", status="False", reason="R", message="m", now=T2)

    assert before == snapshot
    assert after is not before and after[0] is not before[0]


def test_status_flip_moves_both_times() -> None:
    after = set_condition(
        created(), type="Created", status="False", reason="Gone", message="m", now=T2
    )

    assert (after[0]["lastUpdateTime"], after[0]["lastTransitionTime"]) == (T2, T2)


def test_same_status_new_reason_moves_only_the_update_time() -> None:
    after = set_condition(
        created(), type="Created", status="True", reason="Again", message="again", now=T2
    )

    assert after[0]["reason"] == "Again"
    assert (after[0]["lastUpdateTime"], after[0]["lastTransitionTime"]) == (T2, T1)


def test_nothing_changed_returns_an_equal_list() -> None:
    after = set_condition(
        created(), type="Created", status="True", reason="JobCreated", message="created", now=T3
    )

    assert after == created()


def test_a_changed_condition_moves_last_as_kubeflow_reads_the_last_one() -> None:
    conditions = set_condition(
        created(), type="Running", status="True", reason="JobRunning", message="", now=T2
    )

    conditions = set_condition(
        conditions, type="Created", status="False", reason="Done", message="", now=T3
    )

    assert [c["type"] for c in conditions] == ["Running", "Created"]


def test_get_and_is_true() -> None:
    conditions = set_condition(
        created(), type="Running", status="False", reason="Paused", message="", now=T2
    )

    assert get_condition(conditions, "Running") == conditions[1]
    assert get_condition(conditions, "Failed") is None
    assert is_true(conditions, "Created")
    assert not is_true(conditions, "Running")
    assert not is_true(conditions, "Failed")
