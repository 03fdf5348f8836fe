"""Page rendering: what the pages say, and that nothing from the cluster becomes markup."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest

from engine.app.web import job_page, list_page, markup, pages
from engine.app.web.job_page import JobDetail, LogTail, replica_status
from engine.app.web.list_page import ListView
from engine.app.web.picture import Picture
from engine.app.web.state import LiveJobs, pod_from
from tests.unit.app.web.support import PYTORCHJOBS, TFJOBS, deliver, event, job, pod

NOW = datetime(2027, 1, 15, 8, 5, tzinfo=UTC)
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


class Tags(HTMLParser):
    """Every start tag and its attributes, as a browser would parse them."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _assert_inert(text: str) -> None:
    """Only our own script tag, no event handler attribute, no image."""
    tags = Tags(text).tags
    assert [attrs.get("src") for tag, attrs in tags if tag == "script"] in (
        [markup.SCRIPT_URL], [])
    assert not [tag for tag, _ in tags if tag == "img"]
    assert not [name for _, attrs in tags for name in attrs if name.startswith("on")]


def _detail(**changes: object) -> JobDetail:
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job("one", namespace="team", restarts=1,
                                                      replicas={"Worker": {"Running": "0-1"}},
                                                      conditions=[{
        "type": "Running", "status": "True", "reason": "PyTorchJobRunning",
        "message": EVIL, "lastTransitionTime": "2027-01-15T08:01:00Z"}]))
    pods, events = model.pod_feed(), model.event_feed()
    deliver(pods, "ADDED", pod("one-worker-0", "one", namespace="team"))
    deliver(events, "ADDED", event("e", about="one", namespace="team", reason="PodFailed",
                                   message=EVIL, last="2027-01-15T08:04:00Z"))
    (one,) = model.jobs()
    detail = {
        "job": one, "picture": Picture(None, "no machine yet"), "pods": model.pods_of(one),
        "events": model.events_of(one), "logs": {"one-worker-0": LogTail(text=EVIL + "\n")},
    }
    return JobDetail(**{**detail, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(("ago", "shown"), [
    (timedelta(seconds=0), "0s"), (timedelta(seconds=119), "119s"),
    (timedelta(seconds=120), "2m"), (timedelta(seconds=310), "5m10s"),
    (timedelta(minutes=10, seconds=5), "10m"), (timedelta(hours=2, minutes=59), "179m"),
    (timedelta(hours=3), "3h"), (timedelta(hours=7, minutes=30), "7h30m"),
    (timedelta(hours=8, minutes=30), "8h"), (timedelta(hours=47), "47h"),
    (timedelta(hours=48), "2d"), (timedelta(days=3, hours=4), "3d4h"),
    (timedelta(days=400), "400d"), (timedelta(seconds=-5), "0s"),
])
def test_ages_read_as_kubectl_writes_them(ago: timedelta, shown: str) -> None:
    assert markup.age(NOW - ago, NOW) == shown


def _listed() -> LiveJobs:
    model = LiveJobs()
    feed = model.job_feed(PYTORCHJOBS)
    deliver(feed, "ADDED", job("b", namespace="team-b", state="Succeeded", restarts=2))
    deliver(feed, "ADDED", job("a", namespace="team-a", uid="u2", state="Failed"))
    deliver(model.job_feed(TFJOBS), "ADDED", job("c", namespace="team-a", uid="u3"))
    return model


def test_the_list_shows_kind_state_restarts_and_a_live_age_with_counts_on_top() -> None:
    markup_ = list_page.jobs_page(_listed().jobs(), user="alice", now=NOW, stream="/stream")

    assert ('<a href="/jobs/team-b/pytorchjobs.kubeflow.org/b">b</a></td><td>team-b</td>'
            '<td>PyTorchJob</td><td><span class="state" data-state="Succeeded" '
            'data-tone="succeeded">Succeeded</span></td><td class="number">2</td><td><time '
            'class="age" datetime="2027-01-15T08:00:00+00:00">5m</time></td>') in markup_
    counts = markup_[markup_.index('id="counts"'):markup_.index('class="filters"')]
    # failed first, then running, then the rest; each a link that filters by its state
    assert counts.index("All <b>3</b>") < counts.index("Failed <b>1</b>") < counts.index(
        "Running <b>1</b>") < counts.index("Succeeded <b>1</b>")
    assert 'href="?state=Failed"' in counts
    assert 'data-stream="/stream"' in markup_
    assert "signed in as <b>alice</b>" in markup_
    assert '<link rel="icon" href="/favicon.svg"' in markup_


def test_the_list_filters_by_state_kind_and_namespace_and_sorts() -> None:
    jobs = _listed().jobs()

    def names(**query: str) -> list[str]:
        view = ListView.from_query(query)
        return [job.name for job in view.shown(jobs)]

    assert names(state="Failed") == ["a"]
    assert names(kind="TFJob") == ["c"]
    assert names(namespace="team-a", sort="name") == ["a", "c"]
    assert names(sort="state") == ["a", "c", "b"]  # failed, running, succeeded
    assert names(sort="nonsense") == names()  # newest first (all made at once: by name)
    view = ListView.from_query({"state": "Failed", "sort": "state"})
    assert view.query(state="") == "?sort=state"
    parts = list_page.render_jobs_parts(jobs, NOW, ListView(state="Nope"))
    assert parts["jobs"] == '<p class="empty">No job matches these filters.</p>'
    assert "All <b>3</b>" in parts["counts"]  # counts are of every job, not the shown ones


def test_failed_and_running_badges_have_strong_tones_whatever_a_kind_calls_them() -> None:
    tones = {state: markup.tone(state) for state in (
        "Failed", "FailedByRule", "PendingTimedOut", "Running", "Active", "SucceededAsChief",
        "Complete", "Restarting", "Failing", "Pending", "")}
    assert tones == {
        "Failed": "failed", "FailedByRule": "failed", "PendingTimedOut": "failed",
        "Running": "running", "Active": "running", "SucceededAsChief": "succeeded",
        "Complete": "succeeded", "Restarting": "waiting", "Failing": "waiting",
        "Pending": "waiting", "": "none"}


def test_a_name_from_the_cluster_cannot_break_out_of_its_link() -> None:
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job('x"><b>', namespace="n/../s"))

    markup_ = list_page.render_jobs_parts(model.jobs(), NOW)["jobs"]

    assert 'href="/jobs/n%2F..%2Fs/pytorchjobs.kubeflow.org/x%22%3E%3Cb%3E"' in markup_
    assert "x&quot;&gt;&lt;b&gt;</a>" in markup_


def _shown(markup_: str) -> str:
    return markup_.rpartition('">')[2].removesuffix("</span>")


@pytest.mark.parametrize(("case", "shown", "tone"), [(case[:4], case[4], case[5]) for case in [
    ("Running", "Running", False, False, "Running", "running"),
    ("Running", None, False, False, "Running (pod deleted)", "waiting"),
    ("Running", "Succeeded", False, False, "Running (pod Succeeded)", "waiting"),
    ("Pending", "Running", False, False, "Pending (pod Running)", "waiting"),
    ("Restarting", None, False, False, "Restarting", "waiting"),
    ("Running", None, True, False, "Running, stopped at job end (pod deleted)", "waiting"),
    ("Running", "Succeeded", True, False, "Running, stopped at job end (pod Succeeded)",
     "waiting"),
    ("Succeeded", None, True, True, "Succeeded", "succeeded"),
    ("Failed", None, True, True, "Failed", "failed"),
]])
def test_a_replica_row_says_what_is_true_now(case: tuple[str, str | None, bool, bool],
                                             shown: str, tone: str) -> None:
    state, phase, job_ended, ended = case
    replica_pod = None if phase is None else pod_from(pod("p", "one", phase=phase))
    badge = replica_status(state, replica_pod, job_ended=job_ended, ended=ended)
    assert _shown(badge) == shown
    assert f'data-tone="{tone}"' in badge


def test_a_finished_jobs_page_shows_no_replica_running_without_its_pod() -> None:
    finished = _detail()
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job(
        "one", state="Succeeded", replicas={"Worker": {"Running": "0", "Succeeded": "1"}}))
    (one,) = model.jobs()
    picture = Picture(None, "no picture", ends=frozenset({"job/s/Succeeded",
                                                          "replica/s/Succeeded"}))
    parts = job_page.render_job_parts(
        JobDetail(job=one, picture=picture, pods=finished.pods[:0]), NOW)
    assert ">Running, stopped at job end (pod deleted)</span>" in parts["replicas"]
    assert 'data-state="Succeeded" data-tone="succeeded">Succeeded</span>' in parts["replicas"]
    assert ">Running</span>" not in parts["replicas"]


def test_a_job_page_shows_summary_replicas_conditions_events_and_logs_escaped() -> None:
    markup_ = job_page.job_page(_detail(), user=EVIL, now=NOW, stream="/jobs/s/stream")

    _assert_inert(markup_)
    parts = job_page.render_job_parts(_detail(), NOW)
    assert list(parts) == ["summary", "machine", "replicas", "conditions", "events", "logs"]
    assert '<span id="restarts">1</span>' in parts["summary"]
    assert ('<tr data-replica="Worker-0"><td>Worker-0</td><td><span class="state" '
            'data-state="Running" data-tone="running">Running</span></td><td class="number">0'
            "</td><td>one-worker-0</td><td>Running</td><td>running</td></tr>"
            ) in parts["replicas"]
    assert '<tr data-replica="Worker-1">' in parts["replicas"]  # no pod yet: still a row
    assert "Running (pod deleted)" in parts["replicas"]
    assert "PyTorchJobRunning" in parts["conditions"]
    assert "&lt;script&gt;alert(&quot;x&quot;)" in parts["events"]
    assert "60s ago" in parts["events"]
    assert '<pre class="lines" tabindex="0">&lt;script&gt;' in parts["logs"]
    assert ('<a class="download" href="/jobs/team/pytorchjobs.kubeflow.org/one/logs/'
            'one-worker-0?download=1">download</a>') in parts["logs"]
    assert "no machine yet" in parts["machine"]
    for part in parts.values():
        _assert_inert(part)


def test_what_the_user_may_not_list_is_said_not_shown() -> None:
    parts = job_page.render_job_parts(_detail(events=[], pods=[], logs={},
                                           hidden=("events", "pods")), NOW)

    assert "You may not list events in this namespace." in parts["events"]
    assert "You may not list pods in this namespace." in parts["logs"]
    assert "one-worker-0" not in parts["replicas"]


def test_the_login_form_keeps_where_to_go_escaped_and_shows_no_data() -> None:
    markup = pages.login_page(next_path='/"><script>x</script>', message=EVIL)

    _assert_inert(markup)
    assert 'name="next" value="/&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in markup
    assert 'type="password" name="token"' in markup
    assert "data-stream" not in markup
