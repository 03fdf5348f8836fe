"""A job's schedule against the API: read its children, ask plan.py, act, write the status.

Runs after the job's machine has stepped and its status is written, once per
reconcile. Children are read from the watch cache of their kind, which must be a
kind the engine governs (a CronJob's Jobs are run by the batch-job machine): a
child's every change then queues its owner again. An `active` entry the cache
lacks is read once from the API server before it is called missing, since the
cache may not have seen a child made a moment ago. Deletions, the creation and
the status write each say what went wrong in an Event; an error the next
reconcile may not meet (a conflict) is raised for the work queue's back-off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine.controller.reconcile.children import JobKey, controller_uid, owner_reference
from engine.controller.reconcile.native_status import NATIVE_STATUS, replace_native_status
from engine.controller.reporting.events import EventRecorder
from engine.controller.reporting.job_log import job_logger, warn_job
from engine.controller.schedules.plan import (
    SCHEDULE_STATUS_FIELDS,
    Child,
    Creation,
    ScheduleInput,
    SchedulePlan,
    plan_schedule,
)
from engine.definition import CompiledSchedule, render_schedule
from engine.definition.cel import CelEvaluationError
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, NotFound
from engine.kube.resources import Resource
from engine.kube.timestamps import format_time

Obj = Mapping[str, Any]
_LATER = timedelta(seconds=30)
"""A schedule that cannot run now (its values fail, its child kind is not governed)."""


@dataclass(frozen=True)
class ScheduleRun:
    """What one sync of a job's schedule needs."""

    client: KubeClient
    recorder: EventRecorder
    key: JobKey
    job: Obj
    """The job as its status write left it (an engine view: NATIVE_STATUS holds its own)."""
    resource: Resource
    """The job's own resource (its status is written through it)."""
    schedule: CompiledSchedule
    variables: Mapping[str, Any]
    children: tuple[Resource, Cache] | None
    """The resource and watch cache of the child kind; None when the engine does not govern
    it."""
    now: datetime
    suspended: bool


@dataclass(frozen=True)
class ScheduleOutcome:
    """What a sync leaves: when to look again (None: only when something changes), and
    the job as its status write returned it (None: not written)."""

    wake_at: datetime | None
    written: Obj | None = None


def sync_schedule(run: ScheduleRun) -> ScheduleOutcome:
    """One sync of the job's schedule."""
    try:
        schedule = render_schedule(run.schedule, run.variables)
    except CelEvaluationError as exc:
        _warn(run, "ScheduleTemplateError", f"the machine's schedule cannot be computed: {exc}")
        return ScheduleOutcome(run.now + _LATER)
    if run.children is None:
        _warn(run, "ChildKindNotGoverned", f"the schedule makes {run.schedule.kind} "
              f"({run.schedule.api_version}) objects, which no machine of this engine runs")
        return ScheduleOutcome(run.now + _LATER)
    resource, cache = run.children
    metadata = run.job["metadata"]
    children = [Child(obj) for obj in cache.by_owner(metadata["uid"])
                if obj["metadata"].get("namespace") == metadata["namespace"]
                and controller_uid(obj) == metadata["uid"]]
    stored = run.job.get(NATIVE_STATUS) or {}
    plan = plan_schedule(ScheduleInput(
        job=run.job, stored=stored, children=children,
        missing=_missing(run, resource, stored, children), schedule=schedule, now=run.now,
        suspended=run.suspended, owner_reference=owner_reference(run.job)))
    for notice in plan.notices:
        run.recorder.record(run.job, type=notice.type, reason=notice.reason,
                            message=notice.message)
    for child in plan.deletions:
        _delete(run, resource, child)
    if plan.creation is not None:
        _create(run, resource, plan, plan.creation)
    return ScheduleOutcome(plan.wake_at, _write_status(run, stored, plan))


def _missing(run: ScheduleRun, resource: Resource, stored: Obj, children: list[Child]
             ) -> frozenset[str]:
    """uids of `active` entries that neither the cache nor the API server has."""
    seen = {child.uid for child in children}
    gone: set[str] = set()
    for ref in stored.get("active") or ():
        if ref.get("uid") in seen:
            continue
        try:
            found = run.client.get(resource, str(ref.get("name")), run.key.namespace)
        except NotFound:
            gone.add(str(ref.get("uid")))
            continue
        if found["metadata"].get("uid") != ref.get("uid"):
            gone.add(str(ref.get("uid")))  # a new object under the old name
    return frozenset(gone)


def _delete(run: ScheduleRun, resource: Resource, child: Child) -> None:
    try:
        run.client.delete(resource, child.name, run.key.namespace, uid=child.uid,
                          propagation_policy="Background")
    except NotFound:
        return
    except ApiError as exc:
        _warn(run, "FailedDelete", f"Deleted job: {exc.message}")
        return
    run.recorder.record(run.job, type="Normal", reason="SuccessfulDelete",
                        message=f"Deleted job {child.name}")
    _log(run).info(f"deleted {resource.kind.lower()} {child.name}")


def _create(run: ScheduleRun, resource: Resource, plan: SchedulePlan, creation: Creation) -> None:
    """Make the child. One that exists already is, as upstream: someone else's, left alone
    (its maker is assumed to keep the status); or ours, made by an earlier try whose status
    write did not land (or for an earlier due time of the same minute): taken as made,
    without a SuccessfulCreate."""
    try:
        made = run.client.create(resource, creation.body, run.key.namespace)
    except AlreadyExists:
        try:
            made = run.client.get(resource, creation.name, run.key.namespace)
        except NotFound:
            return  # deleted in between: the next look makes it again
        if controller_uid(made) != run.job["metadata"]["uid"]:
            _log(run).info(f"{resource.kind} {creation.name} exists and is not this job's: "
                           "left to its maker")
            return
    except ApiError as exc:
        _warn(run, "FailedCreate", f"Error creating job: {exc.message}")
        return
    else:
        run.recorder.record(run.job, type="Normal", reason="SuccessfulCreate",
                            message=f"Created job {creation.name}")
        _log(run).info(f"created {resource.kind.lower()} {creation.name} for "
                       f"{format_time(creation.scheduled)}")
    plan.active.append(Child(made).reference())  # finished: the next sync sees it so
    plan.last_schedule_time = format_time(creation.scheduled)


def _write_status(run: ScheduleRun, stored: Obj, plan: SchedulePlan) -> Obj | None:
    """Write the schedule's status fields beside the rest of the job's own status."""
    wanted = plan.status()
    if wanted == {key: stored[key] for key in SCHEDULE_STATUS_FIELDS if key in stored}:
        return None
    status = {key: value for key, value in stored.items() if key not in SCHEDULE_STATUS_FIELDS}
    return replace_native_status(run.client, run.resource, run.job, {**status, **wanted})


def _warn(run: ScheduleRun, reason: str, message: str) -> None:
    warn_job(run.recorder, run.job, run.key, reason, message)


def _log(run: ScheduleRun) -> Any:
    return job_logger(run.key)
