"""What a write to a Job's `/status` may do, judged as kube-apiserver judges it.

With the JobManagedBy gate on (beta, on by default, in the served release) the
status strategy checks every Job's status transitions, so a controller other
than the built-in one cannot leave a Job in a state clients misread: counters
never negative and never decreasing, terminal conditions final, Failed only
after FailureTarget and Complete only after SuccessCriteriaMet, completionTime
exactly with Complete, finished Jobs with nothing active, index lists in the
interval format. Most rules apply only when the fields they read change in this
write (upstream's getStatusValidationOptions), so a status already wrong can
still take unrelated updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation.field_errors import (
    duplicate,
    invalid,
    invalid_omitted,
    invalid_shown,
    non_negative,
    required,
)
from engine.cluster.apiserver.validation.job_policies import indexes_format, indexes_overlap

Spec = Mapping[str, Any]
_PATH = "status"
_CONDITIONS = "status.conditions"


@dataclass(frozen=True)
class _Job:
    """The parts of a Job the rules read, with Go's zero values for what is absent."""

    obj: Spec

    @property
    def spec(self) -> Spec:
        return self.obj.get("spec") or {}

    @property
    def status(self) -> Spec:
        return self.obj.get("status") or {}

    def count(self, name: str) -> int:
        return int(self.status.get(name) or 0)

    def true(self, kind: str) -> bool:
        """IsConditionTrue: some condition of this type is True."""
        return any(c.get("type") == kind and c.get("status") == "True"
                   for c in self.status.get("conditions") or [] if isinstance(c, Mapping))

    def false(self, kind: str) -> bool:
        """Some condition of this type is False (a Suspended=False marks a resume)."""
        return any(c.get("type") == kind and c.get("status") == "False"
                   for c in self.status.get("conditions") or [] if isinstance(c, Mapping))

    @property
    def finished(self) -> bool:
        return self.true("Complete") or self.true("Failed")

    def time(self, name: str) -> datetime | None:
        return _parsed_time(self.status.get(name))

    @property
    def uncounted(self) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        pods = self.status.get("uncountedTerminatedPods")
        if pods is None:
            return None
        return tuple(pods.get("succeeded") or ()), tuple(pods.get("failed") or ())

    @property
    def indexed(self) -> bool:
        return self.spec.get("completionMode") == "Indexed"


def validate_job_status(obj: Spec, old: Spec) -> list[Cause]:
    """ValidateJobStatusUpdate with the options the status strategy computes."""
    new, before = _Job(obj), _Job(old)
    return _status_causes(new, before) + _transition_causes(new, before)


def _status_causes(job: _Job, old: _Job) -> list[Cause]:
    """validateJobStatus: the status on its own, each gated rule when its fields changed."""
    status = job.status
    changed = _Changes(job, old)
    causes: list[Cause] = []
    for name in ("active", "succeeded", "failed"):
        causes += non_negative(f"{_PATH}.{name}", job.count(name))
    for name in ("ready", "terminating"):
        causes += non_negative(f"{_PATH}.{name}", status.get(name))
    causes += _uncounted_causes(job)
    complete, failed = job.true("Complete"), job.true("Failed")
    target, met = job.true("FailureTarget"), job.true("SuccessCriteriaMet")
    completion, start = job.time("completionTime"), job.time("startTime")
    if (changed.complete or changed.failed) and complete and failed:
        causes.append(invalid_omitted(_CONDITIONS,
                                      "cannot set Complete=True and Failed=true conditions"))
    if (changed.complete or changed.target) and complete and target:
        causes.append(invalid_omitted(_CONDITIONS,
                                      "cannot set Complete=True and FailureTarget=true conditions"))
    if changed.complete or changed.completion_time:
        if completion is not None and not complete:
            causes.append(invalid_shown(f"{_PATH}.completionTime", _go_time(completion),
                                        "cannot set completionTime when there is no "
                                        "Complete=True condition"))
        if completion is None and complete:
            causes.append(required(f"{_PATH}.completionTime",
                                   "completionTime is required for Complete jobs"))
    if ((changed.start_time or changed.completion_time) and start is not None
            and completion is not None and completion < start):
        causes.append(invalid_shown(f"{_PATH}.completionTime", _go_time(completion),
                                    "completionTime cannot be set before startTime"))
    if (changed.failed or changed.target) and failed and not target:
        causes.append(invalid_omitted(_CONDITIONS, "cannot set Failed=True condition without "
                                                   "the FailureTarget=true condition"))
    if (changed.complete or changed.met) and complete and not met:
        causes.append(invalid_omitted(_CONDITIONS, "cannot set Complete=True condition without "
                                                   "the SuccessCriteriaMet=true condition"))
    causes += _finished_causes(job, changed)
    causes += _index_causes(job, changed)
    terminating = status.get("terminating")
    if ((changed.finished or changed.terminating) and job.finished and terminating is not None
            and terminating > 0):
        causes.append(invalid(f"{_PATH}.terminating", terminating,
                              "terminating>0 is invalid for finished job"))
    if ((changed.ready or changed.active) and status.get("ready") is not None
            and status["ready"] > job.count("active")):
        causes.append(invalid(f"{_PATH}.ready", status["ready"],
                              "cannot set more ready pods than active"))
    if met and failed:
        causes.append(invalid_omitted(_CONDITIONS, "cannot set SuccessCriteriaMet=True and "
                                                   "Failed=true conditions"))
    if met and target:
        causes.append(invalid_omitted(_CONDITIONS, "cannot set SuccessCriteriaMet=True and "
                                                   "FailureTarget=true conditions"))
    if job.spec.get("successPolicy") is not None and not met and complete:
        causes.append(invalid_omitted(_CONDITIONS, "cannot set Complete=True for Job with "
                                                   "SuccessPolicy unless SuccessCriteriaMet=True"))
    return causes


def _uncounted_causes(job: _Job) -> list[Cause]:
    uncounted = job.uncounted
    if uncounted is None:
        return []
    causes: list[Cause] = []
    seen: set[str] = set()
    for name, uids in zip(("succeeded", "failed"), uncounted, strict=True):
        for index, uid in enumerate(uids):
            where = f"{_PATH}.uncountedTerminatedPods.{name}[{index}]"
            if uid == "":
                causes.append(invalid(where, uid, "must not be empty"))
            elif uid in seen:
                causes.append(duplicate(where, uid))
            else:
                seen.add(uid)
    return causes


def _finished_causes(job: _Job, changed: _Changes) -> list[Cause]:
    """A finished Job has a start time, nothing active and nothing uncounted."""
    if not job.finished:
        return []
    causes: list[Cause] = []
    if (changed.finished or changed.active) and job.count("active") > 0:
        causes.append(invalid(f"{_PATH}.active", job.count("active"),
                              "active>0 is invalid for finished job"))
    if (changed.finished or changed.start_time) and job.time("startTime") is None:
        causes.append(required(f"{_PATH}.startTime", "startTime is required for finished job"))
    uncounted = job.uncounted
    if (changed.finished or changed.uncounted) and uncounted is not None and any(uncounted):
        causes.append(invalid_shown(f"{_PATH}.uncountedTerminatedPods", _go_uncounted(uncounted),
                                    "uncountedTerminatedPods needs to be empty for finished job"))
    return causes


def _index_causes(job: _Job, changed: _Changes) -> list[Cause]:
    """completedIndexes and failedIndexes: interval format below completions, only for the Jobs
    that have them, never overlapping."""
    spec, status = job.spec, job.status
    completions = spec.get("completions")
    completed = str(status.get("completedIndexes") or "")
    failed = status.get("failedIndexes")
    causes: list[Cause] = []
    if changed.completed_indexes and completions is not None:
        error = indexes_format(completed, completions)[1]
        if error:
            causes.append(invalid(f"{_PATH}.completedIndexes", completed,
                                  f"error parsing completedIndexes: {error}"))
    per_index = spec.get("backoffLimitPerIndex") is not None
    if changed.failed_indexes and completions is not None and per_index and failed is not None:
        error = indexes_format(failed, completions)[1]
        if error:
            causes.append(invalid(f"{_PATH}.failedIndexes", failed,
                                  f"error parsing failedIndexes: {error}"))
    if changed.completed_indexes and completed and not job.indexed:
        causes.append(invalid(f"{_PATH}.completedIndexes", completed,
                              "cannot set non-empty completedIndexes when non-indexed "
                              "completion mode"))
    if changed.failed_indexes and not per_index and failed is not None:
        causes.append(invalid(f"{_PATH}.failedIndexes", failed,
                              "cannot set non-null failedIndexes when backoffLimitPerIndex is "
                              "null"))
    if ((changed.failed_indexes or changed.completed_indexes) and completions is not None
            and failed is not None):
        overlap = indexes_overlap(completed, failed, completions)
        if overlap:
            causes.append(invalid(f"{_PATH}.failedIndexes", failed, overlap))
    return causes


def _transition_causes(job: _Job, old: _Job) -> list[Cause]:
    """ValidateJobStatusUpdate's comparisons with the stored status."""
    causes: list[Cause] = []
    for kind in ("Failed", "Complete", "FailureTarget"):
        if old.true(kind) and not job.true(kind):
            causes.append(invalid_omitted(_CONDITIONS,
                                          f"cannot disable the terminal {kind}=True condition"))
    if job.count("failed") < old.count("failed"):
        causes.append(invalid(f"{_PATH}.failed", job.count("failed"),
                              "cannot decrease the failed counter"))
    elastic = job.indexed and job.spec.get("completions") == job.spec.get("parallelism")
    if not elastic and job.count("succeeded") < old.count("succeeded"):
        causes.append(invalid(f"{_PATH}.succeeded", job.count("succeeded"),
                              "cannot decrease the succeeded counter"))
    completion, old_completion = job.time("completionTime"), old.time("completionTime")
    if completion is not None and old_completion is not None and completion != old_completion:
        causes.append(invalid_shown(f"{_PATH}.completionTime", _go_time(completion),
                                    "completionTime cannot be mutated"))
    start, old_start = job.time("startTime"), old.time("startTime")
    resuming = old.true("Suspended") and job.false("Suspended")
    if (old_start is not None and start != old_start and job.spec.get("suspend") is not True
            and not resuming):
        causes.append(required(f"{_PATH}.startTime",
                               "startTime cannot be removed for unsuspended job"))
    if old.true("SuccessCriteriaMet") and not job.true("SuccessCriteriaMet"):
        causes.append(invalid_omitted(_CONDITIONS,
                                      "cannot disable the SuccessCriteriaMet=True condition"))
    if (old.true("Complete") and not old.true("SuccessCriteriaMet")
            and job.true("SuccessCriteriaMet")):
        causes.append(invalid_omitted(_CONDITIONS, "cannot set SuccessCriteriaMet=True for Job "
                                                   "already has Complete=true conditions"))
    return causes


class _Changes:
    """Which of the fields the gated rules read differ between the stored and the new Job."""

    def __init__(self, job: _Job, old: _Job) -> None:
        self.complete = job.true("Complete") != old.true("Complete")
        self.failed = job.true("Failed") != old.true("Failed")
        self.target = job.true("FailureTarget") != old.true("FailureTarget")
        self.met = job.true("SuccessCriteriaMet") != old.true("SuccessCriteriaMet")
        self.finished = job.finished != old.finished
        self.active = job.count("active") != old.count("active")
        self.ready = job.status.get("ready") != old.status.get("ready")
        self.terminating = job.status.get("terminating") != old.status.get("terminating")
        self.start_time = job.time("startTime") != old.time("startTime")
        self.completion_time = job.time("completionTime") != old.time("completionTime")
        self.uncounted = job.uncounted != old.uncounted
        self.completed_indexes = (job.status.get("completedIndexes") or "") != (
            old.status.get("completedIndexes") or "")
        self.failed_indexes = job.status.get("failedIndexes") != old.status.get("failedIndexes")


def _parsed_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _go_time(moment: datetime) -> str:
    """A metav1.Time as a field error prints it (time.Time's String, in UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _go_uncounted(uncounted: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    """`%#v` of batch.UncountedTerminatedPods."""
    def uids(values: tuple[str, ...]) -> str:
        if not values:
            return "[]types.UID(nil)"
        return "[]types.UID{" + ", ".join(f'"{value}"' for value in values) + "}"
    succeeded, failed = uncounted
    return f"batch.UncountedTerminatedPods{{Succeeded:{uids(succeeded)}, Failed:{uids(failed)}}}"
