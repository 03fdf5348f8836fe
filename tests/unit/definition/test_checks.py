"""The static checks: each error class at its exact FILE:LINE:COL, with its message."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.definition.schema import ConditionSpec
from engine.definition.validate import validate_text
from tests.unit.definition.texts import JOB, REPLICA, document

JOB_OBSERVATIONS = ("deleting, suspended, resumed, deadlineExceeded, invalid, settled, timedOut, "
                    "replicaRestarting, noReplicaRestarting")


def lines(text: str) -> list[str]:
    return [str(d) for d in validate_text(text, "demo.yaml")]


def job(old: str, new: str) -> list[str]:
    assert old in JOB
    return lines(document(job=JOB.replace(old, new)))


def test_a_good_definition_has_no_problems() -> None:
    assert lines(document()) == []


def test_initial_state_not_defined() -> None:
    assert job("initial: Running", "initial: Start") == [
        "demo.yaml:7:14: error: initial state 'Start' is not defined; states: Running, Done"
    ]


def test_to_names_an_undefined_state() -> None:
    assert job("to: Done", "to: Dnoe") == [
        "demo.yaml:12:29: error: undefined state 'Dnoe' in 'to'; states: Running, Done"
    ]


def test_from_names_an_undefined_state() -> None:
    assert job("from: Running", "from: [Running, Nope]") == [
        "demo.yaml:12:26: error: undefined state 'Nope' in 'from'; states: Running, Done"
    ]


def test_unreachable_state() -> None:
    added = "      Done: {terminal: success}\n      Lost: {terminal: failure}\n"
    assert job("      Done: {terminal: success}\n", added) == [
        "demo.yaml:11:7: error: state 'Lost' is unreachable from the initial state 'Running'"
    ]


def test_non_terminal_state_without_a_way_out() -> None:
    text = JOB.replace("      Done: {terminal: success}\n",
                       "      Done: {terminal: success}\n      Stuck: {}\n")
    text += "      - {from: Running, to: Stuck, \"on\": suspended}\n"
    assert lines(document(job=text)) == [
        "demo.yaml:11:7: error: state 'Stuck' is not terminal but has no transition to another "
        "state: mark it terminal (success or failure) or steady (a job level state it may "
        "rest in for ever), or add one"
    ]


def test_a_self_loop_is_not_a_way_out() -> None:
    text = JOB.replace("      Done: {terminal: success}\n",
                       "      Done: {terminal: success}\n      Stuck: {}\n")
    text += "      - {from: Running, to: Stuck, \"on\": suspended}\n"
    text += "      - {from: Stuck, to: Stuck, \"on\": resumed}\n"
    assert lines(document(job=text))[0].startswith(
        "demo.yaml:11:7: error: state 'Stuck' is not terminal but has no transition"
    )


def test_transition_out_of_a_terminal_state() -> None:
    assert lines(document(job=JOB + "      - {from: Done, to: Running}\n")) == [
        "demo.yaml:13:16: error: transition out of terminal state 'Done': a terminal state has "
        "no transitions out"
    ]


def test_wildcard_does_not_leave_terminal_states() -> None:
    assert job("from: Running", "from: '*'") == []


def test_wildcard_must_stand_alone() -> None:
    assert job("from: Running", "from: ['*', Running]") == [
        "demo.yaml:12:16: error: '*' (every non-terminal state) must be the only entry of 'from'"
    ]


def test_unknown_observation_lists_the_level_s_observations() -> None:
    assert job('when: "restarts == 0"', "\"on\": finished") == [
        f"demo.yaml:12:41: error: unknown observation 'finished'; job observations are: "
        f"{JOB_OBSERVATIONS}"
    ]


def test_observation_of_the_other_level() -> None:
    assert job('when: "restarts == 0"', "\"on\": podRunning") == [
        f"demo.yaml:12:41: error: 'podRunning' is a replica observation; job observations are: "
        f"{JOB_OBSERVATIONS}"
    ]


def test_unknown_action() -> None:
    assert job('when: "restarts == 0"', "actions: [launch]") == [
        "demo.yaml:12:45: error: unknown action 'launch'; job actions are: cleanupPods, "
        "restartJob, setCondition, event"
    ]


def test_action_of_the_other_level() -> None:
    assert job('when: "restarts == 0"', "actions: [createPod]") == [
        "demo.yaml:12:45: error: 'createPod' is not a job action; job actions are: "
        "cleanupPods, restartJob, setCondition, event"
    ]


def test_unknown_action_argument() -> None:
    assert job('when: "restarts == 0"', "actions: [{cleanupPods: {policy: All, force: true}}]") == [
        "demo.yaml:12:73: error: action 'cleanupPods' has no argument 'force'; arguments: policy"
    ]


def test_action_argument_not_among_its_choices() -> None:
    assert job('when: "restarts == 0"', "actions: [{cleanupPods: {policy: Some}}]") == [
        "demo.yaml:12:68: error: argument 'policy' of 'cleanupPods' must be one of: All, "
        "Running, None (got 'Some')"
    ]


def test_yaml_boolean_is_read_as_its_choice() -> None:
    action = "actions: [{setCondition: {type: Ready, status: False}}]"
    assert job('when: "restarts == 0"', action) == []


def test_missing_action_argument() -> None:
    assert job('when: "restarts == 0"', "actions: [{setCondition: {reason: Done}}]") == [
        "demo.yaml:12:45: error: action 'setCondition' needs argument 'type'"
    ]


def test_template_argument_must_be_text() -> None:
    action = "actions: [{event: {reason: Done, message: [1]}}]"
    assert job('when: "restarts == 0"', action) == [
        "demo.yaml:12:77: error: argument 'message' of 'event' must be a string (a template)"
    ]


def test_reason_must_be_camel_case() -> None:
    assert job('when: "restarts == 0"', "reason: all_done") == [
        "demo.yaml:12:43: error: reason 'all_done' must be CamelCase (a capital letter, then "
        "letters and digits)"
    ]


def test_reason_argument_must_be_camel_case() -> None:
    assert job('when: "restarts == 0"', "actions: [{event: {reason: not-camel}}]") == [
        "demo.yaml:12:62: error: reason 'not-camel' must be CamelCase (a capital letter, then "
        "letters and digits)"
    ]


def test_condition_and_hold_replicas_are_job_level_only() -> None:
    replica = REPLICA.replace("Running: {}", "Running: {condition: Running, holdReplicas: true}")
    assert lines(document(replica=replica)) == [
        "demo.yaml:17:17: error: 'condition' is not allowed at replica level (conditions live "
        "on the job): use the setCondition action",
        "demo.yaml:17:37: error: 'holdReplicas' is only allowed at job level",
    ]


def ended_by(condition: str) -> list[str]:
    """The problems of the demo machine whose Running sets condition Running and whose Done
    sets `condition` (line 10, the condition's mapping at column 44)."""
    text = JOB.replace("Running: {}", "Running: {condition: Running}").replace(
        "Done: {terminal: success}", f"Done: {{terminal: success, condition: {condition}}}")
    return lines(document(job=text))


def test_copy_from_and_move_from_take_a_condition_another_state_sets() -> None:
    assert ended_by("{type: Done, copyFrom: Running}") == []
    assert ended_by("{type: Done, moveFrom: Running}") == []


def test_move_from_names_a_condition_no_state_sets() -> None:
    assert ended_by("{type: Done, moveFrom: Runing}") == [
        "demo.yaml:10:67: error: moveFrom 'Runing' is not a condition any state of this "
        "machine sets; conditions: Done, Running"
    ]


def test_copy_from_and_move_from_cannot_name_the_condition_s_own_type() -> None:
    assert ended_by("{type: Done, moveFrom: Done}") == [
        "demo.yaml:10:67: error: moveFrom names the condition's own type 'Done'"
    ]
    assert ended_by("{type: Done, copyFrom: Done}") == [
        "demo.yaml:10:67: error: copyFrom names the condition's own type 'Done'"
    ]


def test_move_from_takes_reason_and_message_so_the_condition_gives_neither() -> None:
    refused = ("demo.yaml:10:67: error: a condition with moveFrom takes its reason and message "
               "from 'Running': remove its own 'reason' and 'message'")
    assert ended_by("{type: Done, moveFrom: Running, reason: AllDone}") == [refused]
    assert ended_by("{type: Done, moveFrom: Running, message: done}") == [refused]


def test_the_schema_refuses_copy_from_beside_move_from() -> None:
    with pytest.raises(ValidationError, match="give copyFrom or moveFrom, not both"):
        ConditionSpec.model_validate({"type": "Done", "copyFrom": "Running",
                                      "moveFrom": "Running"})


def test_a_condition_takes_copy_from_or_move_from_not_both() -> None:
    assert ended_by("{type: Done, copyFrom: Running, moveFrom: Running}") == [
        "demo.yaml:10:44: error: give copyFrom or moveFrom, not both: moveFrom copies too"
    ]


def test_replaces_names_conditions_other_states_set() -> None:
    assert ended_by("{type: Done, replaces: [Running]}") == []
    assert ended_by("{type: Done, replaces: [Running, Runing, Done]}") == [
        "demo.yaml:10:77: error: replaces 'Runing', which is not a condition any state of "
        "this machine sets; conditions: Done, Running",
        "demo.yaml:10:85: error: replaces names the condition's own type 'Done'",
    ]


def test_bad_durations() -> None:
    assert job("Running: {}", "Running: {timeout: 10 minutes, requeueAfter: 5mins}") == [
        "demo.yaml:9:26: error: 'timeout' must be a duration such as 500ms, 30s, 10m or 1h30m, "
        "or a whole number of seconds (got '10 minutes')",
        "demo.yaml:9:52: error: 'requeueAfter' must be a duration such as 500ms, 30s, 10m or "
        "1h30m, or a whole number of seconds (got '5mins')",
    ]


def test_good_durations_and_delay_expressions() -> None:
    state = "Running: {timeout: 1h30m, requeueAfter: \"restarts * 10\"}"
    assert job("Running: {}", state) == []


def test_guard_only_cycle_names_its_states_in_order() -> None:
    text = JOB.replace("      Done: {terminal: success}\n",
                       "      Done: {terminal: success}\n      Waiting: {}\n")
    text += "      - {from: Running, to: Waiting, when: \"restarts > 1\"}\n"
    text += "      - {from: Waiting, to: Running, when: \"restarts < 1\"}\n"
    assert lines(document(job=text)) == [
        "demo.yaml:14:9: error: transitions can loop without the world changing: "
        "Running -> Waiting -> Running (with no observation needed; transitions at lines 14, "
        "15); guards are not taken into account: make one of these transitions wait for an "
        "observation"
    ]


def test_cycle_through_observations_that_hold_together() -> None:
    text = REPLICA + (
        "      - {from: Running, to: Pending, \"on\": timedOut}\n"
    )
    assert lines(document(replica=text)) == [
        "demo.yaml:22:9: error: transitions can loop without the world changing: "
        "Pending -> Running -> Pending (while podRunning, timedOut hold; transitions at lines "
        "22, 25); guards are not taken into account: make one of these transitions wait for an "
        "observation"
    ]


def test_exclusive_observations_do_not_make_a_cycle() -> None:
    text = REPLICA + "      - {from: Running, to: Pending, \"on\": podMissing}\n"
    assert lines(document(replica=text)) == []


def test_shadowed_transition_is_a_warning() -> None:
    text = JOB.replace('when: "restarts == 0"', "reason: First")
    text += "      - {from: Running, to: Done, reason: Later}\n"
    assert lines(document(job=text)) == [
        "demo.yaml:13:9: warning: this transition can never fire: an earlier transition from "
        "the same state with no 'when' (line 12) always wins"
    ]


def test_a_guarded_earlier_transition_does_not_shadow() -> None:
    assert lines(document(job=JOB + "      - {from: Running, to: Done, reason: Later}\n")) == []


def test_state_listed_twice_in_from_is_a_warning() -> None:
    assert job("from: Running", "from: [Running, Running]") == [
        "demo.yaml:12:26: warning: state 'Running' is listed twice in 'from'"
    ]


def test_unknown_replica_type_in_services() -> None:
    text = document().replace("kind: Demo}", "kind: Demo, replicaTypes: [Master, Worker]}")
    text += "  services:\n    - {replicaTypes: [Master, Chief], ports: []}\n"
    assert lines(text) == [
        "demo.yaml:26:31: error: unknown replica type 'Chief'; replica types: Master, Worker"
    ]


def test_graph_checks_wait_for_names_to_be_right() -> None:
    # With `to` misspelled, Done looks unreachable; only the real mistake is reported.
    assert len(job("to: Done", "to: Dnoe")) == 1
