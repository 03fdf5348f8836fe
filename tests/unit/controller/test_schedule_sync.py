"""One sync of a CronJob's schedule against a fake API: the writes it makes in order (the
Job created, old ones deleted with their uid as precondition, the status replaced), the
Events that tell each (SuccessfulCreate, SuccessfulDelete, FailedCreate, FailedDelete),
an `active` Job the cache lacks read once before it is called missing, a Job that exists
already taken as made when it is ours and left alone when not, and no status write when
nothing changed. What is due is plan.py's (tests/unit/schedules); this is the acting."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.controller.reconcile.children import JobKey
from engine.controller.reconcile.native_status import NATIVE_STATUS
from engine.controller.schedules import run as schedule_run
from engine.controller.schedules.run import ScheduleRun, sync_schedule
from engine.definition import CompiledSchedule, RenderedSchedule
from engine.definition.cel import CelEvaluationError
from engine.kube.cache import Cache
from engine.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from engine.kube.resources import Resource

CRONJOBS = Resource("batch", "v1", "cronjobs", "CronJob")
JOBS = Resource("batch", "v1", "jobs", "Job")
KEY = JobKey("CronJob", "team", "nightly")
T0 = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
DUE = T0 + timedelta(hours=1)
NOW = DUE + timedelta(seconds=5)
MADE = f"nightly-{int(DUE.timestamp()) // 60}"
OWNER = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "cj-uid",
         "controller": True, "blockOwnerDeletion": True}
RENDERED = RenderedSchedule(
    cron="0 * * * *", time_zone=None, starting_deadline_seconds=None,
    concurrency_policy="Allow", successful_history_limit=1, failed_history_limit=1,
    child_api_version="batch/v1", child_kind="Job", child_labels={}, child_annotations={},
    child_spec={"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}})


def cronjob(stored: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "team", "uid": "cj-uid",
                         "resourceVersion": "10", "creationTimestamp": "2026-11-28T10:00:00Z"},
            "spec": {"schedule": "0 * * * *"}, NATIVE_STATUS: stored or {}}


def job(name: str, *, uid: str | None = None, done: bool = False,
        owner: dict[str, Any] = OWNER) -> dict[str, Any]:
    status = {"conditions": [{"type": "Complete", "status": "True"}],
              "completionTime": "2026-11-28T10:30:00Z"} if done else {}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team", "uid": uid or f"uid-{name}",
                         "resourceVersion": "5", "ownerReferences": [owner]},
            "status": status}


def ref(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj["metadata"]
    return {"apiVersion": "batch/v1", "kind": "Job", "name": metadata["name"],
            "namespace": "team", "uid": metadata["uid"], "resourceVersion": "5"}


class FakeClient:
    """The Jobs the server has by name; every call in order; refusals planted per call."""

    def __init__(self, jobs: list[dict[str, Any]] = (), **refusals: ApiError) -> None:  # type: ignore[assignment]
        self.jobs = {j["metadata"]["name"]: copy.deepcopy(j) for j in jobs}
        self.refusals = refusals
        self.calls: list[tuple[Any, ...]] = []

    def _refuse(self, verb: str) -> None:
        if verb in self.refusals:
            raise self.refusals.pop(verb)

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", name))
        if name not in self.jobs:
            raise NotFound(404, "NotFound", f'jobs.batch "{name}" not found', {})
        return copy.deepcopy(self.jobs[name])

    def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None
               ) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(("create", name))
        self._refuse("create")
        if name in self.jobs:
            raise AlreadyExists(409, "AlreadyExists", f'jobs.batch "{name}" already exists', {})
        made = {**copy.deepcopy(body), "metadata": {**body["metadata"], "namespace": "team",
                                                    "uid": "new-uid", "resourceVersion": "11"}}
        self.jobs[name] = made
        return copy.deepcopy(made)

    def delete(self, res: Resource, name: str, namespace: str | None = None, *,
               uid: str | None = None, propagation_policy: str | None = None) -> None:
        self.calls.append(("delete", name, uid, propagation_policy))
        self._refuse("delete")
        if name not in self.jobs:
            raise NotFound(404, "NotFound", f'jobs.batch "{name}" not found', {})
        del self.jobs[name]

    def replace(self, res: Resource, name: str, body: dict[str, Any], *,
                namespace: str | None = None, subresource: str | None = None
                ) -> dict[str, Any]:
        self.calls.append(("replace", name, subresource, body["status"]))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "12"}}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, involved: Any, *, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


@pytest.fixture(autouse=True)
def rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's schedule renders to RENDERED (its CEL is the language's to test)."""
    monkeypatch.setattr(schedule_run, "render_schedule", lambda schedule, variables: RENDERED)


def sync(client: FakeClient, *, stored: dict[str, Any] | None = None,
         cached: list[dict[str, Any]] = (), now: datetime = NOW,  # type: ignore[assignment]
         governed: bool = True) -> tuple[Any, FakeRecorder]:
    cache = Cache()
    cache.replace(copy.deepcopy(list(cached)))
    recorder = FakeRecorder()
    outcome = sync_schedule(ScheduleRun(
        client=client, recorder=recorder, key=KEY, job=cronjob(stored),  # type: ignore[arg-type]
        resource=CRONJOBS, schedule=CompiledSchedule("batch/v1", "Job", {}), variables={},
        children=(JOBS, cache) if governed else None, now=now, suspended=False))
    return outcome, recorder


def test_a_due_time_makes_its_job_says_so_and_records_it_as_active() -> None:
    client = FakeClient()
    outcome, recorder = sync(client)
    active = {"apiVersion": "batch/v1", "kind": "Job", "name": MADE, "namespace": "team",
              "uid": "new-uid", "resourceVersion": "11"}
    assert client.calls == [
        ("create", MADE),
        ("replace", "nightly", "status",
         {"active": [active], "lastScheduleTime": "2026-11-28T11:00:00Z"}),
    ]
    assert recorder.events == [("Normal", "SuccessfulCreate", f"Created job {MADE}")]
    assert outcome.wake_at == DUE + timedelta(hours=1, milliseconds=100)
    assert outcome.written is not None


def test_nothing_due_and_nothing_changed_writes_nothing() -> None:
    client = FakeClient()
    outcome, recorder = sync(client, now=T0 + timedelta(minutes=30))
    assert (client.calls, recorder.events, outcome.written) == ([], [], None)


def test_our_job_made_by_an_earlier_try_is_taken_as_made_without_an_event() -> None:
    ours = job(MADE)
    client = FakeClient([ours])
    _, recorder = sync(client)
    assert [call[0] for call in client.calls] == ["create", "get", "replace"]
    assert client.calls[-1][3]["active"] == [ref(ours)]
    assert recorder.events == []


def test_a_job_of_that_name_someone_else_owns_is_left_to_its_maker() -> None:
    theirs = job(MADE, owner={**OWNER, "uid": "other-uid"})
    client = FakeClient([theirs])
    _, recorder = sync(client)
    assert client.calls == [("create", MADE), ("get", MADE)]
    assert recorder.events == []


def test_a_refused_create_is_a_warning_and_nothing_is_recorded() -> None:
    refusal = ApiError(422, "Invalid", 'Job.batch "x" is invalid: spec.template: Required', {})
    client = FakeClient(create=refusal)
    _, recorder = sync(client)
    assert client.calls == [("create", MADE)]
    assert recorder.events == [("Warning", "FailedCreate", "Error creating job: "
                                "Job.batch \"x\" is invalid: spec.template: Required")]


def test_finished_jobs_beyond_the_history_limit_are_deleted_oldest_first() -> None:
    old, older = job("nightly-2", done=True), job("nightly-1", done=True)
    older["status"]["completionTime"] = "2026-11-28T10:10:00Z"
    client = FakeClient([old, older])
    _, recorder = sync(client, cached=[old, older], now=T0 + timedelta(minutes=30))
    assert client.calls[0] == ("delete", "nightly-1", "uid-nightly-1", "Background")
    assert recorder.events[0] == ("Normal", "SuccessfulDelete", "Deleted job nightly-1")


def test_a_refused_delete_is_a_warning_and_one_already_gone_is_silent() -> None:
    old, older = job("nightly-2", done=True), job("nightly-1", done=True)
    older["status"]["completionTime"] = "2026-11-28T10:10:00Z"
    refused = FakeClient([old, older], delete=Conflict(409, "Conflict", "uid precondition "
                                                       "failed", {}))
    _, recorder = sync(refused, cached=[old, older], now=T0 + timedelta(minutes=30))
    assert recorder.events == [("Warning", "FailedDelete", "Deleted job: uid precondition "
                                "failed")]
    gone = FakeClient([old])
    _, recorder = sync(gone, cached=[old, older], now=T0 + timedelta(minutes=30))
    assert recorder.events == []


def test_an_active_job_the_cache_lacks_is_read_once_before_it_is_called_missing() -> None:
    fresh = job("nightly-fresh")
    replaced = job("nightly-replaced", uid="new")
    stored = {"active": [ref(fresh), {**ref(replaced), "uid": "old"}, ref(job("nightly-gone"))],
              "lastScheduleTime": "2026-11-28T11:00:00Z"}
    client = FakeClient([fresh, replaced])
    sync(client, stored=stored)
    assert client.calls[:3] == [("get", "nightly-fresh"), ("get", "nightly-replaced"),
                                ("get", "nightly-gone")]
    assert client.calls[-1][0] == "replace"
    assert [r["name"] for r in client.calls[-1][3]["active"]] == ["nightly-fresh"]


def test_a_cached_active_job_is_not_read_again() -> None:
    running = job("nightly-1")
    stored = {"active": [ref(running)], "lastScheduleTime": "2026-11-28T11:00:00Z"}
    client = FakeClient([running])
    outcome, _ = sync(client, stored=stored, cached=[running])
    assert client.calls == [] and outcome.written is None


def test_a_schedule_that_cannot_be_computed_warns_and_looks_again_later(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(schedule: Any, variables: Any) -> RenderedSchedule:
        raise CelEvaluationError("no such key: cron")
    monkeypatch.setattr(schedule_run, "render_schedule", broken)
    client = FakeClient()
    outcome, recorder = sync(client)
    assert recorder.events == [("Warning", "ScheduleTemplateError",
                                "the machine's schedule cannot be computed: no such key: cron")]
    assert (client.calls, outcome.wake_at) == ([], NOW + timedelta(seconds=30))


def test_a_child_kind_no_machine_runs_warns_and_looks_again_later() -> None:
    client = FakeClient()
    outcome, recorder = sync(client, governed=False)
    assert recorder.events == [("Warning", "ChildKindNotGoverned",
                                "the schedule makes Job (batch/v1) objects, which no machine "
                                "of this engine runs")]
    assert (client.calls, outcome.wake_at) == ([], NOW + timedelta(seconds=30))
