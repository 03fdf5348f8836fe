"""`up` owns its API server, so its engine has no client rate limit unless one is asked for."""

from __future__ import annotations

import math

from engine.app.up import local_settings


def test_up_sends_without_a_rate_limit_by_default() -> None:
    settings = local_settings({})
    assert math.isinf(settings.client_qps) and math.isinf(settings.event_qps)


def test_a_limit_set_in_the_environment_is_kept() -> None:
    settings = local_settings({"JOBMACHINE_CLIENT_QPS": "20", "JOBMACHINE_WORKERS": "2"})
    assert (settings.client_qps, settings.workers) == (20.0, 2)
    assert math.isinf(settings.event_qps)


def test_overrides_win_over_both() -> None:
    settings = local_settings({"JOBMACHINE_CLIENT_QPS": "20"}, client_qps=5.0)
    assert settings.client_qps == 5.0
