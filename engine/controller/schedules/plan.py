"""One sync of a job's schedule, decided without touching the API: what to delete, what
to create, which Events to post, the status that follows and when to look again.

The order and the words are the CronJob controller's (kube-controller-manager,
pkg/controller/cronjob; docs/design/batch-job-upstream.md section 8): the history is
trimmed first; then finished children leave `active` (SawCompletedJob), unknown running
children are reported (UnexpectedJob) and vanished ones dropped (MissingJob); a
suspended job stops there; else the most recent due time is found, skipped when it is
too old (MissSchedule), already made, or forbidden by the concurrency policy, and a
child is made for it, named deterministically from the due time so that a retry can
never make two. Pure: the runner (run.py) reads the world, asks, and acts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import format_datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.api.cron_schedule import CronScheduleError, most_recent_time, parse_schedule
from engine.controller.reconcile.notices import Notice
from engine.definition import RenderedSchedule
from engine.kube.timestamps import parse_time

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""On a child: the due time it was made for, RFC 3339 in the job's time zone."""
SCHEDULE_STATUS_FIELDS = ("active", "lastScheduleTime", "lastSuccessfulTime")
"""The status fields a schedule owns (the CronJob API's)."""
WAKE_SLACK = timedelta(milliseconds=100)
"""Looked at this long after a due time, as upstream, so the due time has surely passed."""

Obj = Mapping[str, Any]

@dataclass(frozen=True)
class Child:
    """A child the job owns (its controller reference), as the schedule judges it."""

    obj: Obj

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"]["uid"])

    @property
    def finished(self) -> str | None:
        """`Complete` or `Failed` (a True condition of that type; Kubeflow's `Succeeded`
        counts as Complete), else None while it runs."""
        for condition in (self.obj.get("status") or {}).get("conditions") or ():
            if condition.get("status") != "True":
                continue
            if condition.get("type") in ("Complete", "Succeeded"):
                return "Complete"
            if condition.get("type") == "Failed":
                return "Failed"
        return None

    @property
    def completion_time(self) -> str | None:
        value = (self.obj.get("status") or {}).get("completionTime")
        return str(value) if value else None

    @property
    def start_time(self) -> str | None:
        value = (self.obj.get("status") or {}).get("startTime")
        return str(value) if value else None

    def reference(self) -> dict[str, Any]:
        """The object reference `status.active` keeps."""
        metadata = self.obj["metadata"]
        return {"apiVersion": self.obj.get("apiVersion"), "kind": self.obj.get("kind"),
                "name": metadata["name"], "namespace": metadata.get("namespace"),
                "uid": metadata["uid"], "resourceVersion": metadata.get("resourceVersion")}


@dataclass(frozen=True)
class Creation:
    """A child to make for one due time."""

    name: str
    scheduled: datetime
    body: dict[str, Any]


@dataclass
class SchedulePlan:
    """What one sync does, in order: post `notices`, delete `deletions` (each with its own
    Event once done), make `creation`; the status fields follow."""

    notices: list[Notice] = field(default_factory=list)
    deletions: list[Child] = field(default_factory=list)
    creation: Creation | None = None
    active: list[dict[str, Any]] = field(default_factory=list)
    last_schedule_time: str | None = None
    last_successful_time: str | None = None
    wake_at: datetime | None = None
    """When to look again (the next due time, plus WAKE_SLACK); None: only on a change."""

    def status(self) -> dict[str, Any]:
        """The schedule's status fields (absent ones left out, as the API's omitempty)."""
        found: dict[str, Any] = {"active": self.active, "lastScheduleTime":
                                 self.last_schedule_time,
                                 "lastSuccessfulTime": self.last_successful_time}
        return {key: value for key, value in found.items() if value}


@dataclass(frozen=True)
class ScheduleInput:
    """What a sync reads: the job, its stored schedule status, its children (those whose
    `status.active` entry a fresh read found gone are listed in `missing`)."""

    job: Obj
    stored: Obj
    children: Sequence[Child]
    missing: frozenset[str]
    """uids of `status.active` entries the API server says no longer exist."""
    schedule: RenderedSchedule
    now: datetime
    suspended: bool
    owner_reference: Mapping[str, Any]


def plan_schedule(given: ScheduleInput) -> SchedulePlan:
    """The sync, as the CronJob controller's `sync`: clean up the history, then
    `syncCronJob`."""
    plan = SchedulePlan(active=[dict(ref) for ref in given.stored.get("active") or ()],
                        last_schedule_time=given.stored.get("lastScheduleTime"),
                        last_successful_time=given.stored.get("lastSuccessfulTime"))
    _trim_history(given, plan)
    _account_children(given, plan)
    if given.suspended:
        return plan
    _schedule_next(given, plan)
    return plan


def _trim_history(given: ScheduleInput, plan: SchedulePlan) -> None:
    """Beyond each history limit, the oldest finished children (by start time; unset last,
    name as the tie-break) are deleted and leave `active`."""
    limits = {"Complete": given.schedule.successful_history_limit,
              "Failed": given.schedule.failed_history_limit}
    for outcome, limit in limits.items():
        finished = sorted((c for c in given.children if c.finished == outcome),
                          key=lambda c: (c.start_time is None, c.start_time or "", c.name))
        for child in finished[:max(0, len(finished) - limit)]:
            plan.deletions.append(child)
            _leave_active(plan, child.uid)


def _account_children(given: ScheduleInput, plan: SchedulePlan) -> None:
    deleted = {child.uid for child in plan.deletions}
    active = {ref.get("uid") for ref in plan.active}
    for child in given.children:
        if child.uid in deleted:
            continue
        outcome = child.finished
        if outcome is None and child.uid not in active:
            plan.notices.append(Notice("Warning", "UnexpectedJob", "Saw a job that the "
                                       f"controller did not create or forgot: {child.name}"))
        elif outcome is not None and child.uid in active:
            _leave_active(plan, child.uid)
            plan.notices.append(Notice("Normal", "SawCompletedJob",
                                       f"Saw completed job: {child.name}, status: {outcome}"))
        if outcome == "Complete" and child.completion_time and (
                plan.last_successful_time is None
                or parse_time(child.completion_time) > parse_time(plan.last_successful_time)):
            plan.last_successful_time = child.completion_time
    for ref in list(plan.active):
        if ref.get("uid") in given.missing:
            _leave_active(plan, str(ref.get("uid")))
            plan.notices.append(Notice("Normal", "MissingJob",
                                       f"Active job went missing: {ref.get('name')}"))


def _schedule_next(given: ScheduleInput, plan: SchedulePlan) -> None:
    schedule = given.schedule
    zone_name = schedule.time_zone
    if zone_name is not None:
        try:
            ZoneInfo(zone_name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            problem = (f"unknown time zone {zone_name}"
                       if isinstance(exc, ZoneInfoNotFoundError) else str(exc))
            plan.notices.append(Notice("Warning", "UnknownTimeZone",
                                       f'invalid timeZone: "{zone_name}": {problem}'))
            return
    try:
        cron = parse_schedule(schedule.cron, zone_name)
    except CronScheduleError as exc:
        plan.notices.append(Notice("Warning", "UnparseableSchedule",
                                   f'unparseable schedule: "{schedule.cron}" : {exc}'))
        return
    if "TZ" in schedule.cron:  # whether or not spec.timeZone is set, as upstream
        plan.notices.append(Notice(
            "Warning", "UnsupportedSchedule",
            f'CRON_TZ or TZ used in schedule "{schedule.cron}" is not officially supported, '
            "see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more "
            "details"))
    created = parse_time(given.job["metadata"]["creationTimestamp"])
    earliest = parse_time(plan.last_schedule_time) if plan.last_schedule_time else created
    deadline = schedule.starting_deadline_seconds
    if deadline is not None:
        earliest = max(earliest, given.now - timedelta(seconds=deadline))
    try:
        missed = most_recent_time(cron, earliest, given.now)
    except CronScheduleError as exc:
        plan.notices.append(Notice("Warning", "InvalidSchedule",
                                   f"invalid schedule: {schedule.cron} : {exc}"))
        return
    following = cron.next_after(given.now)
    plan.wake_at = None if following is None else following + WAKE_SLACK
    if missed.time is None:
        return
    if missed.too_many:
        plan.notices.append(Notice(
            "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
            ".spec.startingDeadlineSeconds or check clock skew"))
    scheduled = missed.time
    if deadline is not None and scheduled + timedelta(seconds=deadline) < given.now:
        plan.notices.append(Notice("Warning", "MissSchedule",
                                   "Missed scheduled time to start a job: "
                                   f"{format_datetime(scheduled.astimezone(ZoneInfo('UTC')))}"))
        return
    name = child_name(given.job, scheduled)
    if any(ref.get("name") == name for ref in plan.active) or (
            plan.last_schedule_time is not None
            and parse_time(plan.last_schedule_time) == scheduled):
        return
    running = list(plan.active)
    if schedule.concurrency_policy == "Forbid" and running:
        plan.notices.append(Notice("Normal", "JobAlreadyActive",
                                   "Not starting job because prior execution is running and "
                                   "concurrency policy is Forbid"))
        return
    if schedule.concurrency_policy == "Replace":
        by_uid = {child.uid: child for child in given.children}
        for ref in running:
            child = by_uid.get(str(ref.get("uid")))
            if child is not None and child not in plan.deletions:
                plan.deletions.append(child)
            _leave_active(plan, str(ref.get("uid")))
    plan.creation = Creation(name, scheduled, _child_body(given, name, scheduled))


def child_name(job: Obj, scheduled: datetime) -> str:
    """`<job>-<due time in minutes since the epoch>`: one name per due time, so a child is
    never made twice for it."""
    return f"{job['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def _child_body(given: ScheduleInput, name: str, scheduled: datetime) -> dict[str, Any]:
    schedule = given.schedule
    zone = ZoneInfo(schedule.time_zone) if schedule.time_zone else ZoneInfo("UTC")
    stamp = scheduled.astimezone(zone).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {
        "apiVersion": schedule.child_api_version,
        "kind": schedule.child_kind,
        "metadata": {
            "name": name,
            "namespace": given.job["metadata"]["namespace"],
            "labels": dict(schedule.child_labels),
            "annotations": {**schedule.child_annotations,
                            SCHEDULED_TIMESTAMP_ANNOTATION: stamp},
            "ownerReferences": [dict(given.owner_reference)],
        },
        "spec": dict(schedule.child_spec),
    }


def _leave_active(plan: SchedulePlan, uid: str) -> None:
    plan.active = [ref for ref in plan.active if ref.get("uid") != uid]
