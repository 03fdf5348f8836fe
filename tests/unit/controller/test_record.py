"""The machines' record in status: compact index ranges, and a lossless status round trip."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.controller.reconcile import record as records
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import (
    InPlaceEnds,
    MachineRecord,
    RecordError,
    RestartRecord,
    format_ranges,
    parse_ranges,
    read_record,
    record_fields,
    state_of,
)

CANONICAL_PART = re.compile(r"[0-9]+(-[0-9]+)?")


@pytest.mark.parametrize(
    ("indexes", "text"),
    [
        ([], ""),
        ([5], "5"),
        ([0, 1], "0-1"),
        ([0, 1, 2, 3, 7], "0-3,7"),
        ([7, 3, 0, 2, 1, 3], "0-3,7"),
        ([1, 3, 5], "1,3,5"),
        ([0, 1, 2, 10, 11, 20], "0-2,10-11,20"),
    ],
)
def test_format_ranges_is_compact_and_sorted(indexes: list[int], text: str) -> None:
    assert format_ranges(indexes) == text


@pytest.mark.parametrize(("indexes", "text"), [
    ([0, 1], "0,1"), ([0, 1, 2, 10, 11, 20], "0-2,10,11,20"), ([4], "4"), ([1, 3], "1,3"),
])
def test_the_job_apis_form_writes_a_run_of_two_as_two(indexes: list[int], text: str) -> None:
    """Upstream's orderedIntervals.String: only runs of three or more become a-b."""
    assert format_ranges(indexes, job_api=True) == text


@pytest.mark.parametrize(
    ("text", "indexes"),
    [
        ("", []),
        ("7", [7]),
        ("0-3,7", [0, 1, 2, 3, 7]),
        (" 0-1 , 4 ", [0, 1, 4]),
        ("2-2", [2]),
    ],
)
def test_parse_ranges_reads_what_format_writes(text: str, indexes: list[int]) -> None:
    assert parse_ranges(text) == indexes


@given(st.sets(st.integers(min_value=0, max_value=100_000), max_size=60))
def test_any_set_of_indexes_survives_format_then_parse(indexes: set[int]) -> None:
    text = format_ranges(indexes)
    assert parse_ranges(text) == sorted(indexes)
    assert all(CANONICAL_PART.fullmatch(part) for part in filter(None, text.split(",")))


@given(st.sets(st.integers(min_value=0, max_value=1_000), min_size=1, max_size=40))
def test_formatted_ranges_never_touch(indexes: set[int]) -> None:
    """Canonical form: no range ends right before the next one starts (`0-1,2` is `0-2`)."""
    bounds = [
        tuple(int(n) for n in part.split("-")) for part in format_ranges(indexes).split(",")
    ]
    ends = [b[-1] for b in bounds]
    starts = [b[0] for b in bounds]
    assert all(start > end + 1 for end, start in zip(ends, starts[1:], strict=False))


@pytest.mark.parametrize(
    "garbage", ["a", "1.5", "-1", "3-1", "1-2-3", "1-x", "x-1", "0x1", "1 2", "[1]"]
)
def test_parse_ranges_rejects_garbage(garbage: str) -> None:
    with pytest.raises(ValueError):
        parse_ranges(garbage)


def test_parse_ranges_says_what_is_wrong_with_the_part() -> None:
    with pytest.raises(ValueError) as caught:
        parse_ranges("0-2,x")
    assert str(caught.value) == "'x' is not an index or a range like 0-3"
    with pytest.raises(ValueError) as caught:
        parse_ranges("0,3-1")
    assert str(caught.value) == "range '3-1' runs backwards"


@given(st.text(max_size=20))
def test_parse_ranges_raises_only_value_errors(text: str) -> None:
    try:
        found = parse_ranges(text)
    except ValueError:
        return
    assert all(index >= 0 for index in found)


@pytest.mark.parametrize("garbage", ["1-", "+1", "1_000", "\u0663"])
def test_parse_ranges_rejects_malformed_numbers(garbage: str) -> None:
    with pytest.raises(ValueError):
        parse_ranges(garbage)


def _sample_record() -> MachineRecord:
    return MachineRecord(
        state="Running",
        state_since="2027-01-15T08:00:00Z",
        replica_states={
            ReplicaId("Master", 0): "Running",
            ReplicaId("Worker", 0): "Running",
            ReplicaId("Worker", 1): "Restarting",
            ReplicaId("Worker", 2): "Running",
            ReplicaId("Worker", 3): "Running",
            ReplicaId("Worker", 4): "Pending",
            ReplicaId("Worker", 7): "Running",
        },
        restarts=3,
        replica_restarts={
            ReplicaId("Worker", 1): RestartRecord(2, "2027-01-15T08:05:00Z"),
            ReplicaId("Worker", 7): RestartRecord(1, "2027-01-15T08:01:00Z"),
        },
        restart_attempt=2,
        replica_timers={ReplicaId("Worker", 4): "2027-01-15T08:06:00Z"},
        history=(
            {"time": "2027-01-15T08:00:00Z", "level": "job", "from": None, "to": "Created",
             "reason": "Created"},
            {"time": "2027-01-15T08:05:00Z", "level": "replica", "replica": "Worker-1",
             "from": "Running", "to": "Restarting", "reason": "PodFailed"},
        ),
        transition_counts={
            ("job", "", "Created", "Created"): 1,
            ("replica", "Running", "Restarting", "PodFailed"): 3,
        },
    )


def test_the_record_is_one_compact_text_with_replica_states_as_ranges() -> None:
    fields = record_fields(_sample_record())
    stored = json.loads(fields["record"])
    assert " " not in fields["record"]
    assert stored["replicas"] == {
        "Master": {"Running": "0"},
        "Worker": {"Pending": "4", "Restarting": "1", "Running": "0,2-3,7"},
    }
    assert stored["timers"] == {"Worker": {"4": "2027-01-15T08:06:00Z"}}
    assert stored["restarts"] == {
        "Worker": {"1": [2, "2027-01-15T08:05:00Z"], "7": [1, "2027-01-15T08:01:00Z"]}
    }
    # A count leaves out a reason that is the target's name (the language's default).
    assert stored["counts"] == {"job": [["", "Created", 1]],
                                "replica": [["Running", "Restarting", "PodFailed", 3]]}
    assert "history" not in stored


def test_status_shows_state_restarts_attempt_and_the_last_transitions_as_text() -> None:
    fields = record_fields(_sample_record())
    assert (fields["state"], fields["restarts"], fields["restartAttempt"]) == ("Running", 3, 2)
    assert fields["lastTransitions"] == [
        "2027-01-15T08:00:00Z job: -> Created (Created)",
        "2027-01-15T08:05:00Z Worker-1: Running -> Restarting (PodFailed)",
    ]
    assert fields["lastFailure"] is None


def test_the_last_transitions_are_read_back_from_their_text() -> None:
    record = MachineRecord(state="Running", history=_sample_record().history)
    assert read_record(json.loads(json.dumps(record_fields(record)))).history == record.history


def test_a_line_of_the_last_transitions_not_in_its_format_is_skipped() -> None:
    status = {**record_fields(_sample_record()), "lastTransitions": ["edited by hand"]}
    assert read_record(status).history == ()
    lines = ["edited by hand", *record_fields(_sample_record())["lastTransitions"]]
    status = {**record_fields(_sample_record()), "lastTransitions": lines}
    assert read_record(status).history == _sample_record().history


def test_record_survives_a_json_round_trip_through_status() -> None:
    record = _sample_record()
    stored = json.loads(json.dumps(record_fields(record)))
    assert read_record(stored) == record


def test_in_place_ends_and_the_last_failure_survive_the_round_trip() -> None:
    record = MachineRecord(
        state="Running",
        in_place_ends={ReplicaId("Worker", 3): InPlaceEnds("uid-1", 4)},
        last_failure="Worker-3 (exit code 2, Error: boom)",
    )
    fields = record_fields(record)
    assert fields["lastFailure"] == "Worker-3 (exit code 2, Error: boom)"
    assert read_record(json.loads(json.dumps(fields))) == record


def test_the_last_failures_cause_survives_the_round_trip() -> None:
    record = MachineRecord(state="Failed", last_failure="Worker-0 (exit code 137)",
                           last_failure_cause="OOMKilled")
    assert read_record(json.loads(json.dumps(record_fields(record)))).last_failure_cause == (
        "OOMKilled")


def test_an_empty_status_is_an_empty_record() -> None:
    assert read_record({}) == MachineRecord()
    assert read_record({"replicaStates": None, "history": None}) == MachineRecord()


def test_an_empty_record_says_nothing_it_need_not() -> None:
    fields = record_fields(MachineRecord())
    assert {k: v for k, v in fields.items() if v is not None} == {
        "record": '{"v":1}',
    }


def test_a_status_written_before_the_record_was_one_field_is_read_from_its_old_fields() -> None:
    legacy = {
        "state": "Running",
        "stateSince": "2027-01-15T08:00:00Z",
        "restarts": 3,
        "restartAttempt": 2,
        "replicaStates": {"Master": {"Running": "0"},
                          "Worker": {"Pending": "4", "Restarting": "1", "Running": "0,2-3,7"}},
        "replicaRestarts": {"Worker": {"1": {"count": 2, "last": "2027-01-15T08:05:00Z"},
                                       "7": {"count": 1, "last": "2027-01-15T08:01:00Z"}}},
        "replicaBackoff": {"Worker": {"1": {"count": 2, "last": "2027-01-15T08:05:00Z"}}},
        "replicaTimers": {"Worker": {"4": "2027-01-15T08:06:00Z"}},
        "history": [dict(entry) for entry in _sample_record().history],
        "lastTransitions": [
            "2027-01-15T08:00:00Z job: -> Created (Created)",
            "2027-01-15T08:05:00Z Worker-1: Running -> Restarting (PodFailed)",
        ],
        "transitionCounts": [
            {"level": "job", "from": None, "to": "Created", "reason": "Created", "count": 1},
            {"level": "replica", "from": "Running", "to": "Restarting", "reason": "PodFailed",
             "count": 3},
        ],
    }
    assert read_record(legacy) == replace(_sample_record(), replica_backoff={
        ReplicaId("Worker", 1): RestartRecord(2, "2027-01-15T08:05:00Z")})


@pytest.mark.parametrize("garbage", ["not json", "[]", '{"v":99}', '{"v":1,"replicas":{"W":1}}'])
def test_a_record_edited_by_hand_is_a_clear_error(garbage: str) -> None:
    with pytest.raises(RecordError, match=r"status\.record cannot be read"):
        read_record({"record": garbage})


def test_a_record_of_an_unknown_format_says_which_and_who_writes_it() -> None:
    with pytest.raises(RecordError) as caught:
        read_record({"record": '{"v":99}'})
    assert str(caught.value) == ("status.record cannot be read (unknown format 99); it is "
                                 "written by the engine only")


REPLICA_STATES = st.dictionaries(
    st.builds(
        ReplicaId,
        st.sampled_from(["Master", "Worker", "PS", "Chief"]),
        st.integers(min_value=0, max_value=500),
    ),
    st.sampled_from(["Pending", "Running", "Restarting", "Succeeded", "Failed"]),
    max_size=40,
)


@given(REPLICA_STATES)
def test_any_replica_states_survive_the_round_trip(states: dict[ReplicaId, str]) -> None:
    record = MachineRecord(state="Running", replica_states=states)
    assert read_record(json.loads(json.dumps(record_fields(record)))) == record


def test_the_state_is_read_from_the_phase_where_it_is_the_phases_word() -> None:
    # build_status leaves `state` out where it equals `phase` (every shipped machine's state).
    assert state_of({"phase": "Running"}) == "Running"
    assert state_of({"state": "Warming", "phase": "Running"}) == "Warming"
    assert state_of({}) is None
    assert read_record({"phase": "Succeeded", "record": '{"v":1}'}).state == "Succeeded"


def test_a_record_written_again_is_written_from_each_of_its_own_mappings() -> None:
    """Each part is written once per mapping and handed out again while the record holds
    that very mapping: a record that shares some of the last one's mappings and replaces
    others writes the new ones."""
    record = _sample_record()
    first = json.loads(record_fields(record)["record"])
    worker = ReplicaId("Worker", 1)
    changed = record.with_changes(
        replica_states={**record.replica_states, worker: "Succeeded"},
        transition_counts={**record.transition_counts,
                           ("replica", "Restarting", "Succeeded", "PodSucceeded"): 1})
    second = json.loads(record_fields(changed)["record"])
    assert second["replicas"]["Worker"]["Succeeded"] == "1"
    assert ["Restarting", "Succeeded", "PodSucceeded", 1] in second["counts"]["replica"]
    assert (second["timers"], second["restarts"]) == (first["timers"], first["restarts"])
    assert json.loads(record_fields(read_record(record_fields(changed)))["record"]) == second


def test_a_mapping_that_took_a_dead_ones_id_is_written_anew() -> None:
    """The written forms are kept by the mapping's id, which Python hands out again once a
    mapping is gone: a form kept for another object under that id is not handed out."""
    states = {ReplicaId("Worker", 0): "Running"}
    records._WRITTEN[(id(states), "replicas")] = ({}, {"Worker": {"Pending": "0"}})
    written = json.loads(record_fields(MachineRecord(replica_states=states))["record"])
    assert written["replicas"] == {"Worker": {"Running": "0"}}


def test_the_written_forms_kept_are_bounded() -> None:
    """At most `_WRITTEN_KEPT` forms are kept (the model checker writes thousands of
    records): the next one empties the store first."""
    records._WRITTEN.clear()
    kept = [{index: index} for index in range(records._WRITTEN_KEPT)]
    for value in kept:
        records._written(value, "part", dict)
    assert len(records._WRITTEN) == records._WRITTEN_KEPT
    assert records._written({-1: -1}, "part", dict) == {-1: -1}
    assert len(records._WRITTEN) == 1


def test_a_changed_record_is_a_copy_and_an_unknown_field_an_error() -> None:
    record = _sample_record()
    changed = record.with_changes(state="Failed", restarts=4)
    assert changed == replace(record, state="Failed", restarts=4)
    assert (record.state, record.restarts) == ("Running", 3)
    with pytest.raises(TypeError, match="no field 'stat'"):
        record.with_changes(stat="Failed")
