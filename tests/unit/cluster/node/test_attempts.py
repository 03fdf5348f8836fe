"""Simulated attempt counts: keyed by owner across pod recreations, kept on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.cluster.node.attempts import AttemptCounter, counter_key


def pod(uid: str, owner: str | None = None) -> dict[str, Any]:
    refs = [{"uid": "not-controller"}] + ([{"uid": owner, "controller": True}] if owner else [])
    return {"metadata": {"name": "w-0", "namespace": "ns", "uid": uid, "ownerReferences": refs}}


def test_a_recreated_pod_with_the_same_owner_shares_the_count() -> None:
    assert counter_key(pod("u1", "job"), "main") == counter_key(pod("u2", "job"), "main")
    assert counter_key(pod("u1", "job"), "main") != counter_key(pod("u1", "job"), "side")
    assert counter_key(pod("u1"), "main") != counter_key(pod("u2"), "main")


def test_counts_survive_a_new_counter_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "simulate-attempts.json"
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


def test_an_unreadable_file_starts_from_zero(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("{not json")
    assert AttemptCounter(path).current("k") == 0
