"""Simulated attempt counts: keyed by owner across pod recreations, kept on disk as a log
of one line per change, forgotten once no pod of their name and owner has existed for the
retention period."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.node.runtime import attempts
from engine.cluster.node.runtime.attempts import AttemptCounter, counter_key, pod_group

RETENTION = 3600.0


def pod(uid: str, owner: str | None = None) -> dict[str, Any]:
    refs = [{"uid": "not-controller"}] + ([{"uid": owner, "controller": True}] if owner else [])
    return {"metadata": {"name": "w-0", "namespace": "ns", "uid": uid, "ownerReferences": refs}}


def test_a_recreated_pod_with_the_same_owner_shares_the_count() -> None:
    assert counter_key(pod("u1", "job"), "main") == counter_key(pod("u2", "job"), "main")
    assert counter_key(pod("u1", "job"), "main") != counter_key(pod("u1", "job"), "side")
    assert counter_key(pod("u1"), "main") != counter_key(pod("u2"), "main")


def test_counts_survive_a_new_counter_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "simulate-attempts.jsonl"
    first = AttemptCounter(path)
    assert [first.next("k"), first.next("k"), first.next("other")] == [1, 2, 1]
    again = AttemptCounter(path)
    assert (again.current("k"), again.next("k")) == (2, 3)


def test_a_deleted_pod_without_owner_is_forgotten_and_owned_counts_stay(tmp_path: Path) -> None:
    counter = AttemptCounter(tmp_path / "a.json")
    bare, owned = counter_key(pod("u1"), "main"), counter_key(pod("u1", "job"), "main")
    counter.next(bare)
    counter.next(owned)
    counter.forget_pod("ns", "w-0", "u1")
    assert (counter.current(bare), counter.current(owned)) == (0, 1)


def test_an_unreadable_line_is_skipped_and_the_rest_counts(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"key": "ns/p/u/main", "count": 2}\n{"key": "ns/p/u/si')
    assert AttemptCounter(path).current("ns/p/u/main") == 2


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_start_appends_one_line_and_a_restart_compacts(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    counter = AttemptCounter(path)
    for _ in range(3):
        counter.next("ns/p/u/main")
    counter.next("ns/q/u/main")
    assert [line["count"] for line in _lines(path)] == [1, 2, 3, 1]
    AttemptCounter(path)
    assert _lines(path) == [{"key": "ns/p/u/main", "count": 3},
                            {"key": "ns/q/u/main", "count": 1}]


def test_a_long_log_is_compacted_while_running(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attempts, "_COMPACT_MIN_LINES", 4)
    path = tmp_path / "a.jsonl"
    counter = AttemptCounter(path)
    for _ in range(10):
        counter.next("ns/p/u/main")
    assert len(_lines(path)) <= 4
    assert AttemptCounter(path).current("ns/p/u/main") == 10


def test_an_owner_s_counts_outlive_a_re_creation_pause_but_not_the_retention(
    tmp_path: Path,
) -> None:
    clock = Clock()
    path = tmp_path / "a.jsonl"
    counter = AttemptCounter(path, retention_s=RETENTION, clock=clock)
    replica, other = pod("u1", "job"), pod("u9", "other-job")
    other["metadata"]["name"] = "w-1"
    counter.next(counter_key(replica, "main"))
    counter.next(counter_key(other, "main"))
    counter.prune([pod_group(other)])  # replica-0 deleted, to be recreated
    clock.now += RETENTION - 1
    counter.prune([pod_group(pod("u2", "job")), pod_group(other)])  # recreated in time
    clock.now += RETENTION
    counter.prune([pod_group(other)])  # gone again: the retention starts over
    assert counter.current(counter_key(replica, "main")) == 1
    clock.now += RETENTION
    counter.prune([])
    assert counter.current(counter_key(replica, "main")) == 0
    assert counter.current(counter_key(other, "main")) == 1
    again = AttemptCounter(path, retention_s=RETENTION, clock=clock)
    assert (again.current(counter_key(replica, "main")),
            again.current(counter_key(other, "main"))) == (0, 1)


def test_a_start_counts_as_the_group_being_alive(tmp_path: Path) -> None:
    clock = Clock()
    counter = AttemptCounter(tmp_path / "a.jsonl", retention_s=RETENTION, clock=clock)
    key = counter_key(pod("u1", "job"), "main")
    counter.next(key)
    counter.prune([])
    clock.now += RETENTION - 1
    counter.next(key)
    clock.now += 2
    counter.prune([])
    assert counter.current(key) == 2


def test_the_map_an_older_version_left_is_taken_over(tmp_path: Path) -> None:
    legacy = tmp_path / "simulate-attempts.json"
    legacy.write_text(json.dumps({"ns/p/u/main": 4}))
    path = tmp_path / "simulate-attempts.jsonl"
    assert AttemptCounter(path, legacy_path=legacy).next("ns/p/u/main") == 5
    assert not legacy.exists()
    assert AttemptCounter(path, legacy_path=legacy).current("ns/p/u/main") == 5


def test_an_unreadable_legacy_map_starts_from_zero(tmp_path: Path) -> None:
    legacy = tmp_path / "a.json"
    legacy.write_text("{not json")
    assert AttemptCounter(tmp_path / "a.jsonl", legacy_path=legacy).current("k") == 0
