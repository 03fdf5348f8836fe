"""`run` and `up` collect garbage less often: an engine's cached objects live as long as it."""

from __future__ import annotations

import gc

from engine.app.run import GC_THRESHOLDS, tune_collector

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
