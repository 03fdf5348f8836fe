"""Engine settings: documented defaults, immutability, explicit environment reading."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.settings import EngineSettings


def test_defaults_are_the_documented_ones() -> None:
    settings = EngineSettings()
    assert settings.workers == 4
    assert (settings.queue_backoff_base_s, settings.queue_backoff_cap_s) == (0.005, 1000.0)
    assert settings.resync_period_s == 300.0
    assert settings.expectations_ttl_s == 300.0
    assert (settings.client_qps, settings.client_burst) == (50.0, 100)
    assert (settings.event_qps, settings.event_burst) == (50.0, 100)
    assert (settings.lease_duration_s, settings.renew_deadline_s, settings.retry_period_s) == (
        15.0,
        10.0,
        2.0,
    )
    assert settings.lease_name == "jobmachine-leader"
    assert settings.status_last_transitions == 0  # no lastTransitions unless asked for
    assert (settings.replica_backoff_base_s, settings.replica_backoff_cap_s) == (10.0, 600.0)
    assert settings.log_format == "text"


def test_every_field_is_described() -> None:
    undocumented = [n for n, f in EngineSettings.model_fields.items() if not f.description]
    assert undocumented == []


def test_settings_are_frozen() -> None:
    with pytest.raises(ValidationError):
        EngineSettings().workers = 8  # type: ignore[misc]


def test_from_env_reads_prefixed_variables_and_overrides_win() -> None:
    environ = {"JOBMACHINE_WORKERS": "8", "JOBMACHINE_LOG_FORMAT": "json", "WORKERS": "2"}
    settings = EngineSettings.from_env(environ, log_format="text")
    assert settings.workers == 8
    assert settings.log_format == "text"


def test_last_transitions_are_turned_on_from_the_environment() -> None:
    environ = {"JOBMACHINE_STATUS_LAST_TRANSITIONS": "3"}
    assert EngineSettings.from_env(environ).status_last_transitions == 3


def test_from_env_reports_bad_values() -> None:
    with pytest.raises(ValidationError, match="workers"):
        EngineSettings.from_env({"JOBMACHINE_WORKERS": "many"})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"queue_backoff_base_s": 5, "queue_backoff_cap_s": 1}, "queue_backoff_base_s"),
        ({"replica_backoff_base_s": 700}, "replica_backoff_base_s"),
        ({"renew_deadline_s": 20}, "lease_duration_s > renew_deadline_s"),
        ({"workers": 0}, "workers"),
        ({"status_last_transitions": -1}, "status_last_transitions"),
        ({"log_format": "xml"}, "log_format"),
        ({"wokers": 2}, "wokers"),
    ],
)
def test_inconsistent_or_unknown_values_are_rejected(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        EngineSettings.model_validate(fields)
