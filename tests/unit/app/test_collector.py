"""`run` and `up` collect garbage less often: an engine's cached objects live as long as it."""

from __future__ import annotations

import gc

from engine.app.run import GC_THRESHOLDS, tune_collector


def test_the_collector_runs_less_often_than_cpythons_default() -> None:
    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > before[0]
    finally:
        gc.set_threshold(*before)
