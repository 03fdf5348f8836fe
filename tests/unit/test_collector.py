"""`run`, `up` and `apiserver` collect garbage less often and freeze what start-up built:
their objects live as long as the process."""

from __future__ import annotations

import gc

from engine.collector import GC_THRESHOLDS, freeze_start_up, tune_collector

CPYTHON_DEFAULT = (700, 10, 10)


def test_the_collector_runs_less_often_than_cpythons_default() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(*CPYTHON_DEFAULT)
        tune_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert all(ours >= default for ours, default in zip(GC_THRESHOLDS, CPYTHON_DEFAULT,
                                                            strict=True))
    finally:
        gc.set_threshold(*before)


def test_start_up_objects_are_out_of_later_collections_and_garbage_is_collected_first() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    kept = [Node() for _ in range(10)]
    garbage = Node()
    del garbage  # a cycle: only a collection frees it, before the freeze
    try:
        freeze_start_up()
        assert gc.get_freeze_count() > len(kept)
        assert not any(type(o) is Node for o in gc.get_objects())  # frozen: out of sight
        assert gc.get_count()[0] < 10
    finally:
        gc.unfreeze()
    assert sum(type(o) is Node for o in gc.get_objects()) == len(kept)
