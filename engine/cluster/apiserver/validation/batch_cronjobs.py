"""batch/v1 CronJob validation on create and update, in upstream's order and words.

The schedule must parse as robfig/cron's standard parser reads it
(`engine/api/cron_schedule.py`) and may not carry its own `TZ=` zone (tolerated on update
when the stored schedule already had one, but never together with
`spec.timeZone`); `spec.timeZone` must be an explicit IANA zone, judged only
when it changes; the job template follows the Job spec rules but its selector is
always generated. A CronJob's name leaves 11 characters for the `-<minutes>`
suffix of the Jobs it makes, so it may be at most 52 long, on create only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.api.cron_schedule import location_error, schedule_error
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation.batch_jobs import job_spec_causes
from engine.cluster.apiserver.validation.field_errors import (
    invalid,
    invalid_shown,
    non_negative,
    not_supported,
    required,
)
from engine.cluster.apiserver.validation.go_values import go_label_selector

_MAX_NAME = 63 - 11
_POLICIES = ("Allow", "Forbid", "Replace")
# https://data.iana.org/time-zones/theory.html#naming, with the legacy digits and "+".
_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
Spec = Mapping[str, Any]


def validate_cronjob(obj: Spec, old: Spec | None) -> list[Cause]:
    """ValidateCronJobCreate, or ValidateCronJobUpdate when `old` is given."""
    spec = obj.get("spec") or {}
    old_spec = None if old is None else old.get("spec") or {}
    causes: list[Cause] = []
    schedule = str(spec.get("schedule") or "")
    if not schedule:
        causes.append(required("spec.schedule"))
    else:
        tz_allowed = old_spec is not None and "TZ" in str(old_spec.get("schedule") or "")
        causes += _schedule_causes(schedule, tz_allowed, spec.get("timeZone"))
    causes += non_negative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        causes += _time_zone_causes(spec.get("timeZone"), "spec.timeZone")
    policy = spec.get("concurrencyPolicy")
    if policy not in _POLICIES:  # defaulting turned an unset policy into Allow
        causes.append(not_supported("spec.concurrencyPolicy", policy, _POLICIES))
    causes += _job_template_causes(spec.get("jobTemplate") or {}, "spec.jobTemplate")
    for name in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        causes += non_negative(f"spec.{name}", spec.get(name))
    name = str((obj.get("metadata") or {}).get("name") or "")
    if old is None and len(name) > _MAX_NAME:
        too_long = f"must be no more than {_MAX_NAME} characters"
        causes.append(invalid("metadata.name", name, too_long))
    return causes


def _schedule_causes(schedule: str, tz_allowed: bool, time_zone: Any) -> list[Cause]:
    problem = schedule_error(schedule)
    causes = [invalid("spec.schedule", schedule, problem)] if problem else []
    if "TZ" in schedule:
        if tz_allowed and time_zone is not None:
            causes.append(invalid("spec.schedule", schedule,
                                  "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
        elif not tz_allowed:
            causes.append(invalid("spec.schedule", schedule,
                                  "cannot use TZ or CRON_TZ in schedule, use timeZone field "
                                  "instead"))
    return causes


def _time_zone_causes(zone: Any, path: str) -> list[Cause]:
    if zone is None:
        return []
    if zone == "":
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.fullmatch(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    causes: list[Cause] = []
    if zone.lower() == "local":
        causes.append(invalid(path, zone, "timeZone must be an explicit time zone as defined in "
                                          "https://www.iana.org/time-zones"))
    problem = location_error(zone)
    if problem:
        causes.append(invalid(path, zone, problem))
    return causes


def _job_template_causes(template: Spec, path: str) -> list[Cause]:
    """ValidateJobTemplateSpec: the JobSpec rules; the selector is always generated."""
    spec = template.get("spec") or {}
    causes = job_spec_causes(spec, f"{path}.spec")
    selector = spec.get("selector")
    if selector is not None:
        causes.append(invalid_shown(f"{path}.spec.selector", go_label_selector(selector),
                                    "`selector` will be auto-generated"))
    if spec.get("manualSelector") is True:
        causes.append(not_supported(f"{path}.spec.manualSelector", True, ("nil", "false")))
    return causes
