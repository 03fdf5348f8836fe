"""The columns `kubectl get jobs` and `kubectl get cronjobs` show, with kube-apiserver's cells.

A Job's STATUS is the first that holds of Complete, Failed, being deleted
(Terminating), Suspended, FailureTarget, else Running, reading only the first
condition of each type; COMPLETIONS counts successes against the completions
(`0/1 of 3` for a work queue with parallelism); DURATION runs from startTime
to completionTime, or to now while the Job runs. A CronJob shows its schedule,
zone, suspension, active Jobs and the age of its last schedule. `-o wide` adds
the template's containers, images and the selector.
"""

from __future__ import annotations

import datetime
from typing import Any

from engine.cluster.apiserver.printing.printing import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Object,
    Printer,
    age,
    created,
    format_label_selector,
    human_duration,
    meta,
    parse_time,
    section,
    template_containers,
)

_WIDE = (
    Column("Containers", "string", "The names of the pod template's containers.", priority=1),
    Column("Images", "string", "The images of the pod template's containers.", priority=1),
    Column("Selector", "string", "The label selector of the Job's pods.", priority=1),
)


def _first_condition_true(status: dict[str, Any], kind: str) -> bool:
    """hasJobCondition: the first condition of that type decides."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def _job_status(job: Object) -> str:
    status = section(job, "status")
    if _first_condition_true(status, "Complete"):
        return "Complete"
    if _first_condition_true(status, "Failed"):
        return "Failed"
    if meta(job).get("deletionTimestamp"):
        return "Terminating"
    if _first_condition_true(status, "Suspended"):
        return "Suspended"
    if _first_condition_true(status, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _completions(spec: dict[str, Any], status: dict[str, Any]) -> str:
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = int(spec.get("parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(status: dict[str, Any], now: datetime.datetime) -> str:
    start = parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = parse_time(status.get("completionTime")) or now
    return human_duration(end - start)


def _job_cells(job: Object, now: datetime.datetime) -> list[Any]:
    spec, status = section(job, "spec"), section(job, "status")
    return [
        meta(job).get("name", ""),
        _job_status(job),
        _completions(spec, status),
        _duration(status, now),
        created(job, now),
        *template_containers(section(spec, "template")),
        format_label_selector(spec.get("selector")),
    ]


def _suspend(value: Any) -> str:
    """printBoolPtr."""
    if value is None:
        return "<unset>"
    return "True" if value else "False"


def _cronjob_cells(cronjob: Object, now: datetime.datetime) -> list[Any]:
    spec, status = section(cronjob, "spec"), section(cronjob, "status")
    last = parse_time(status.get("lastScheduleTime"))
    job_spec = section(section(spec, "jobTemplate"), "spec")
    return [
        meta(cronjob).get("name", ""),
        spec.get("schedule", ""),
        spec.get("timeZone") if spec.get("timeZone") is not None else "<none>",
        _suspend(spec.get("suspend")),
        len(status.get("active") or []),
        age(last, now) if last else "<none>",
        created(cronjob, now),
        *template_containers(section(job_spec, "template")),
        format_label_selector(job_spec.get("selector")),
    ]


JOB_PRINTER = Printer(
    (
        NAME_COLUMN,
        Column("Status", "string", "The Job's state: Running, Complete, Failed and the like."),
        Column("Completions", "string", "Succeeded pods against the completions wanted."),
        Column("Duration", "string", "How long the Job has run, or took."),
        AGE_COLUMN,
        *_WIDE,
    ),
    _job_cells,
)
CRONJOB_PRINTER = Printer(
    (
        NAME_COLUMN,
        Column("Schedule", "string", "The cron schedule Jobs are made on."),
        Column("Timezone", "string", "The time zone the schedule is read in."),
        Column("Suspend", "boolean", "Whether new Jobs are held back."),
        Column("Active", "integer", "How many of its Jobs are running."),
        Column("Last Schedule", "string", "When a Job was last scheduled."),
        AGE_COLUMN,
        *_WIDE,
    ),
    _cronjob_cells,
)
