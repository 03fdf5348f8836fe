"""Page rendering: what the pages say, and that nothing from the cluster becomes markup."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest

from engine.app.web import pages
from engine.app.web.pages import JobDetail, LogTail
from engine.app.web.picture import Picture
from engine.app.web.state import LiveJobs
from tests.unit.app.web.support import PYTORCHJOBS, deliver, event, job, pod

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


def _assert_inert(markup: str) -> None:
    """Only our own script tag, no event handler attribute, no image."""
    tags = Tags(markup).tags
    assert [attrs.get("src") for tag, attrs in tags if tag == "script"] in (
        [pages.SCRIPT_URL], [])
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
    assert pages.age(NOW - ago, NOW) == shown


def test_the_list_groups_jobs_by_namespace_with_kind_state_restarts_and_age() -> None:
    model = LiveJobs()
    feed = model.job_feed(PYTORCHJOBS)
    deliver(feed, "ADDED", job("b", namespace="team-b", state="Succeeded", restarts=2))
    deliver(feed, "ADDED", job("a", namespace="team-a", uid="u2"))

    markup = pages.jobs_page(model.jobs(), user="alice", now=NOW, stream="/stream")

    assert markup.index("namespace team-a") < markup.index("namespace team-b")
    assert ('<a href="/jobs/team-b/pytorchjobs.kubeflow.org/b">b</a></td><td>PyTorchJob</td>'
            '<td><span class="state" data-state="Succeeded">Succeeded</span></td>'
            '<td class="number">2</td><td>5m</td>') in markup
    assert 'data-stream="/stream"' in markup
    assert "signed in as <b>alice</b>" in markup


def test_a_name_from_the_cluster_cannot_break_out_of_its_link() -> None:
    model = LiveJobs()
    deliver(model.job_feed(PYTORCHJOBS), "ADDED", job('x"><b>', namespace="n/../s"))

    markup = pages.render_jobs_parts(model.jobs(), NOW)["jobs"]

    assert 'href="/jobs/n%2F..%2Fs/pytorchjobs.kubeflow.org/x%22%3E%3Cb%3E"' in markup
    assert "x&quot;&gt;&lt;b&gt;</a>" in markup


def test_a_job_page_shows_summary_replicas_conditions_events_and_logs_escaped() -> None:
    markup = pages.job_page(_detail(), user=EVIL, now=NOW, stream="/jobs/s/stream")

    _assert_inert(markup)
    parts = pages.render_job_parts(_detail(), NOW)
    assert list(parts) == ["summary", "machine", "replicas", "conditions", "events", "logs"]
    assert '<span id="restarts">1</span>' in parts["summary"]
    assert ('<tr data-replica="Worker-0"><td>Worker-0</td><td><span class="state" '
            'data-state="Running">Running</span></td><td class="number">0</td>'
            "<td>one-worker-0</td><td>Running</td><td>running</td></tr>") in parts["replicas"]
    assert '<tr data-replica="Worker-1">' in parts["replicas"]  # no pod yet: still a row
    assert "PyTorchJobRunning" in parts["conditions"]
    assert "&lt;script&gt;alert(&quot;x&quot;)" in parts["events"]
    assert "60s ago" in parts["events"]
    assert "<pre>&lt;script&gt;" in parts["logs"]
    assert "no machine yet" in parts["machine"]
    for part in parts.values():
        _assert_inert(part)


def test_what_the_user_may_not_list_is_said_not_shown() -> None:
    parts = pages.render_job_parts(_detail(events=[], pods=[], logs={},
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
