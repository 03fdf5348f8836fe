"""The live model fed watch events: what pages read back, and whom it tells of what."""

from __future__ import annotations

from engine.app.web.state import EVENTS_KEPT, Change, JobKey, LiveJobs, Replica
from tests.unit.app.web.support import PYTORCHJOBS, TFJOBS, deliver, event, job, pod


def test_a_job_added_then_modified_reads_back_as_its_latest_status() -> None:
    model = LiveJobs()
    feed = model.job_feed(PYTORCHJOBS)

    deliver(feed, "ADDED", job("one", state="Created"))
    deliver(feed, "MODIFIED", job("one", state="Running", restarts=1, rv="2", replicas={
        "Worker": {"Running": "0-1", "Restarting": "2"}}))

    (seen,) = model.jobs()
    assert (seen.kind, seen.state, seen.restarts, seen.revision) == (
        "PyTorchJob", "Running", 1, "pytorchjob-abc")
    assert seen.replicas == (Replica("Worker", 0, "Running", 0), Replica("Worker", 1, "Running", 0),
                             Replica("Worker", 2, "Restarting", 0))
    assert model.job(PYTORCHJOBS, "default", "one") == seen
    assert model.job(TFJOBS, "default", "one") is None


def test_listeners_hear_which_job_changed_and_how_until_they_stop() -> None:
    model = LiveJobs()
    jobs, pods, events = model.job_feed(PYTORCHJOBS), model.pod_feed(), model.event_feed()
    heard: list[tuple[JobKey, Change]] = []
    stop = model.listen(lambda key, change: heard.append((key, change)))

    deliver(jobs, "ADDED", job("one", namespace="team"))
    deliver(pods, "ADDED", pod("one-worker-0", "one", namespace="team"))
    deliver(events, "ADDED", event("e1", about="one", namespace="team"))
    deliver(jobs, "DELETED", job("one", namespace="team"))
    stop()
    deliver(jobs, "ADDED", job("two"))

    key = ("team", "one")
    assert heard == [(key, "job"), (key, "pod"), (key, "event"), (key, "job")]
    assert model.jobs() == [model.job(PYTORCHJOBS, "default", "two")]


def test_jobs_are_listed_by_namespace_then_name_across_kinds() -> None:
    model = LiveJobs()
    deliver(model.job_feed(TFJOBS), "ADDED", job("b", namespace="a"))
    pytorch = model.job_feed(PYTORCHJOBS)
    deliver(pytorch, "ADDED", job("a", namespace="b"))
    deliver(pytorch, "ADDED", job("a", namespace="a", uid="u2"))

    assert [(j.namespace, j.name, j.kind) for j in model.jobs()] == [
        ("a", "a", "PyTorchJob"), ("a", "b", "TFJob"), ("b", "a", "PyTorchJob")]
    assert model.kind("tfjobs.kubeflow.org") == TFJOBS
    assert model.kind("tfjobs") is None


def test_a_kind_no_longer_governed_takes_its_jobs_with_it() -> None:
    model = LiveJobs()
    deliver(model.job_feed(TFJOBS), "ADDED", job("x"))
    heard: list[tuple[JobKey, Change]] = []
    model.listen(lambda key, change: heard.append((key, change)))

    model.drop_kind(TFJOBS)

    assert model.jobs() == []
    assert model.kinds() == []
    assert heard == [(("default", "x"), "job")]


def test_pods_of_a_job_are_its_own_by_label_and_owner_in_replica_order() -> None:
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job("one"))
    pods = model.pod_feed()
    deliver(pods, "ADDED", pod("one-worker-10", "one", index=10))
    deliver(pods, "ADDED", pod("one-worker-2", "one", index=2, state={
        "terminated": {"exitCode": 137, "reason": "Error"}}, phase="Failed"))
    deliver(pods, "ADDED", pod("one-master-0", "one", replica_type="Master"))
    deliver(pods, "ADDED", pod("old-one-worker-0", "one", owner="uid-of-an-older-job"))
    deliver(pods, "ADDED", pod("one-worker-0", "one", namespace="elsewhere"))

    seen = model.pods_of(model.jobs()[0])

    assert [p.name for p in seen] == ["one-master-0", "one-worker-2", "one-worker-10"]
    assert seen[1].container_state == "terminated (exit code 137)"
    assert (seen[1].phase, seen[1].container) == ("Failed", "pytorch")


def test_events_of_a_job_are_its_own_newest_first_and_at_most_a_page() -> None:
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job("one"))
    events = model.event_feed()
    deliver(events, "ADDED", event("first", reason="Created", last="2027-01-15T08:00:01Z",
                                   rv="5"))
    # Same second: the later write comes first.
    deliver(events, "ADDED", event("second", reason="Running", last="2027-01-15T08:00:01Z",
                                   rv="6"))
    deliver(events, "ADDED", event("other", about_uid="uid-2", reason="NotMine"))
    deliver(events, "ADDED", event("gone", reason="Deleted"))
    deliver(events, "DELETED", event("gone", reason="Deleted"))

    (one,) = model.jobs()
    assert [e.reason for e in model.events_of(one)] == ["Running", "Created"]

    for number in range(EVENTS_KEPT + 5):
        deliver(events, "ADDED", event(f"many-{number}", rv=str(100 + number),
                                       last="2027-01-15T09:00:00Z"))
    shown = model.events_of(one)
    assert len(shown) == EVENTS_KEPT
    assert shown[0].last_seen == "2027-01-15T09:00:00Z"


def test_a_record_the_engine_did_not_write_is_said_not_hidden() -> None:
    model = LiveJobs()
    broken = job("one", restarts=2)
    broken["status"]["record"] = "{not json"
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", broken)

    (seen,) = model.jobs()
    assert "cannot be read" in seen.record_error
    assert (seen.state, seen.restarts, seen.replicas) == ("Running", 2, ())
