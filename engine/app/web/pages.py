"""The web view's HTML: every page, and the parts of a page that live updates replace.

A page is whole without JavaScript (curl sees everything); each part that changes is one
element with an id, and `render_*_parts` return exactly that element's inner HTML, so
the first paint and every update come from the same function. Every text that comes
from the cluster goes through `_e` (HTML escaping, quotes included).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from urllib.parse import quote

from engine.app.web.picture import Picture, current_states, marked_svg
from engine.app.web.state import Event, Job, Pod, Replica

Parts = dict[str, str]
"""Element id -> its inner HTML."""

STYLE_URL = "/static/view.css"
SCRIPT_URL = "/static/view.js"


@dataclass(frozen=True)
class LogTail:
    """The last lines of a pod's log, or why they cannot be shown."""

    text: str = ""
    note: str = ""


@dataclass(frozen=True)
class JobDetail:
    """Everything a job's page shows, gathered for one user."""

    job: Job
    picture: Picture
    pods: Sequence[Pod] = ()
    events: Sequence[Event] = ()
    logs: Mapping[str, LogTail] = field(default_factory=dict)
    """Pod name -> its log tail."""
    hidden: tuple[str, ...] = ()
    """What the user may not see on this page (`events`, `pods`), said instead of shown."""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def job_path(job: Job) -> str:
    """The job's page: `/jobs/NAMESPACE/PLURAL.GROUP/NAME`."""
    return "/jobs/" + "/".join(quote(part, safe="") for part in (
        job.namespace, job.resource_name, job.name))


def age(since: datetime | None, now: datetime) -> str:
    """How long ago, as kubectl writes it: `42s`, `5m10s`, `3h`, `2d4h`."""
    if since is None:
        return "<unknown>"
    seconds = max(0, int((now - since).total_seconds()))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def layout(title: str, body: str, *, user: str | None = None, stream: str | None = None) -> str:
    """A whole page; `stream` is the URL of its live updates (none: a static page)."""
    signed_in = (
        f'<span class="user">signed in as <b>{_e(user)}</b></span>'
        '<form method="post" action="/logout"><button>Log out</button></form>'
        if user is not None else ""
    )
    live = (
        '<span id="live" class="live">connecting...</span>'
        '<noscript><span class="live">live updates need JavaScript: reload to see changes'
        "</span></noscript>"
        if stream is not None else ""
    )
    stream_attr = f' data-stream="{_e(stream)}"' if stream is not None else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} - jobmachine</title>"
        f'<link rel="stylesheet" href="{STYLE_URL}">'
        f'<script src="{SCRIPT_URL}" defer></script></head>'
        f"<body{stream_attr}>"
        f'<header><a class="home" href="/">jobmachine</a>{live}{signed_in}</header>'
        f"<main>{body}</main></body></html>\n"
    )


def login_page(*, next_path: str, message: str = "") -> str:
    """The form that asks for a bearer token; `message` says why it is shown."""
    note = f'<p class="note">{_e(message)}</p>' if message else ""
    body = (
        "<h1>Log in</h1>"
        "<p>The web view shows what the API server shows you: log in with a bearer token it "
        "accepts (the token in the kubeconfig <code>jobmachine up</code> writes, or a user's "
        "from <code>--token-auth-file</code>).</p>"
        f"{note}"
        '<form method="post" action="/login" class="login">'
        f'<input type="hidden" name="next" value="{_e(next_path)}">'
        '<label>Token <input type="password" name="token" autocomplete="off" autofocus '
        "required></label> <button>Log in</button></form>"
    )
    return layout("Log in", body)


def message_page(title: str, text: str, *, user: str | None = None) -> str:
    """A page that only says something (403, 404, 503)."""
    return layout(title, f'<h1>{_e(title)}</h1><p class="note">{_e(text)}</p>'
                         '<p><a href="/">All jobs</a></p>', user=user)


def render_jobs_parts(jobs: Sequence[Job], now: datetime) -> Parts:
    """The list of jobs, one table per namespace."""
    if not jobs:
        return {"jobs": '<p class="empty">No jobs you may list.</p>'}
    sections = []
    for namespace, in_namespace in groupby(jobs, key=lambda job: job.namespace):
        rows = "".join(
            f"<tr><td><a href=\"{_e(job_path(job))}\">{_e(job.name)}</a></td>"
            f"<td>{_e(job.kind)}</td><td>{_state(job.state)}</td>"
            f"<td class=\"number\">{job.restarts}</td><td>{_e(age(job.created, now))}</td></tr>"
            for job in in_namespace
        )
        sections.append(
            f'<section class="namespace"><h2>namespace {_e(namespace)}</h2>'
            "<table><thead><tr><th>Name</th><th>Kind</th><th>State</th><th>Restarts</th>"
            f"<th>Age</th></tr></thead><tbody>{rows}</tbody></table></section>"
        )
    return {"jobs": "".join(sections)}


def jobs_page(jobs: Sequence[Job], *, user: str, now: datetime, stream: str) -> str:
    """The page listing every job the user may list."""
    parts = render_jobs_parts(jobs, now)
    return layout("Jobs", f'<h1>Jobs</h1><div id="jobs">{parts["jobs"]}</div>', user=user,
                  stream=stream)


def render_job_parts(detail: JobDetail, now: datetime) -> Parts:
    """The parts of a job's page."""
    return {
        "summary": _summary(detail.job, now),
        "machine": _machine(detail.job, detail.picture),
        "replicas": _replicas(detail.job.replicas, detail.pods, "pods" in detail.hidden),
        "conditions": _conditions(detail.job),
        "events": _events(detail.events, now, "events" in detail.hidden),
        "logs": _logs(detail.pods, detail.logs, "pods" in detail.hidden),
    }


_FACTS = (("summary", "Summary"), ("replicas", "Replicas"), ("conditions", "Conditions"),
          ("events", "Events"), ("logs", "Logs"))


def job_page(detail: JobDetail, *, user: str, now: datetime, stream: str) -> str:
    """A job's page: the facts (summary, replicas, conditions, events, logs) beside its
    machine."""
    job, parts = detail.job, render_job_parts(detail, now)
    facts = "".join(
        f'<section><h2>{heading}</h2><div id="{name}">{parts[name]}</div></section>'
        for name, heading in _FACTS
    )
    machine = (f'<section class="machine"><h2>Machine</h2><div id="machine">'
               f"{parts['machine']}</div></section>")
    title = f"{job.kind} {job.namespace}/{job.name}"
    body = f'<h1>{_e(title)}</h1><div class="job"><div class="facts">{facts}</div>{machine}</div>'

    return layout(title, body, user=user, stream=stream)


def _state(state: str) -> str:
    shown = state or "(not started)"
    return f'<span class="state" data-state="{_e(state)}">{_e(shown)}</span>'


def _summary(job: Job, now: datetime) -> str:
    rows = [("Kind", _e(f"{job.kind} ({job.resource.api_version})")),
            ("Namespace", _e(job.namespace)), ("State", _state(job.state)),
            ("Restarts", f'<span id="restarts">{job.restarts}</span>'),
            ("Age", _e(age(job.created, now))),
            ("Machine revision", _e(job.revision or "(none yet)"))]
    if job.last_failure:
        rows.append(("Last failure", _e(job.last_failure)))
    if job.record_error:
        rows.append(("Record", f'<span class="warning">{_e(job.record_error)}</span>'))
    return '<table class="summary">' + "".join(
        f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows) + "</table>"


def _machine(job: Job, picture: Picture) -> str:
    if picture.svg is None:
        return f'<p class="note">{_e(picture.reason)}</p>'
    current = current_states(job)
    legend = "".join(
        f"<li><b>{_e(who)}</b>: {_e(title.partition('/s/')[2])}</li>"
        for title, who in current.items()
    )
    return (f'<ul class="legend">{legend}</ul>'
            f'<div class="picture">{marked_svg(picture.svg, current)}</div>')


def _replicas(replicas: Sequence[Replica], pods: Sequence[Pod], pods_hidden: bool) -> str:
    by_replica = {(pod.replica_type, pod.replica_index): pod for pod in pods}
    rows = []
    for replica in replicas:
        pod = by_replica.pop((replica.type, str(replica.index)), None)
        rows.append(_replica_row(replica.name, _state(replica.state), replica.restarts, pod))
    rows.extend(_replica_row(f"{pod.replica_type}-{pod.replica_index}", "", None, pod)
                for pod in by_replica.values())
    if not rows:
        return '<p class="empty">No replicas yet.</p>'
    note = ('<p class="note">You may not list pods in this namespace: pod columns are '
            "empty.</p>" if pods_hidden else "")
    return (f"{note}<table><thead><tr><th>Replica</th><th>State</th><th>Restarts</th>"
            "<th>Pod</th><th>Phase</th><th>Container</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _replica_row(name: str, state: str, restarts: int | None, pod: Pod | None) -> str:
    pod_cells = (f"<td>{_e(pod.name)}</td><td>{_e(pod.phase)}</td>"
                 f"<td>{_e(pod.container_state)}</td>" if pod is not None
                 else "<td></td><td></td><td></td>")
    counted = "" if restarts is None else str(restarts)
    return (f'<tr data-replica="{_e(name)}"><td>{_e(name)}</td><td>{state}</td>'
            f'<td class="number">{counted}</td>{pod_cells}</tr>')


def _conditions(job: Job) -> str:
    if not job.conditions:
        return '<p class="empty">No conditions yet.</p>'
    rows = "".join(
        f"<tr><td>{_e(c.type)}</td><td>{_e(c.status)}</td><td>{_e(c.reason)}</td>"
        f"<td>{_e(c.message)}</td><td>{_e(c.last_transition)}</td></tr>"
        for c in job.conditions
    )
    return ("<table><thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th>"
            f"<th>Last transition</th></tr></thead><tbody>{rows}</tbody></table>")


def _events(events: Iterable[Event], now: datetime, hidden: bool) -> str:
    if hidden:
        return '<p class="note">You may not list events in this namespace.</p>'
    rows = "".join(
        f'<tr class="{_e(event.type.lower())}"><td>{_e(event.type)}</td><td>{_e(event.reason)}'
        f"</td><td>{_e(_seen(event.last_seen, now))}</td><td class=\"number\">{event.count}"
        f"</td><td>{_e(event.message)}</td></tr>"
        for event in events
    )
    if not rows:
        return '<p class="empty">No events.</p>'
    return ("<table><thead><tr><th>Type</th><th>Reason</th><th>Last seen</th><th>Count</th>"
            f"<th>Message</th></tr></thead><tbody>{rows}</tbody></table>")


def _seen(when: str, now: datetime) -> str:
    try:
        return age(datetime.fromisoformat(when.replace("Z", "+00:00")), now) + " ago"
    except ValueError:
        return when


def _logs(pods: Sequence[Pod], logs: Mapping[str, LogTail], hidden: bool) -> str:
    if hidden:
        return '<p class="note">You may not list pods in this namespace.</p>'
    blocks = []
    for pod in pods:
        tail = logs.get(pod.name, LogTail(note="not read"))
        shown = (f"<pre>{_e(tail.text)}</pre>" if tail.text
                 else f'<p class="note">{_e(tail.note or "(empty)")}</p>')
        blocks.append(f'<div class="log" data-pod="{_e(pod.name)}"><h3>'
                      f"{_e(pod.replica_type)}-{_e(pod.replica_index)} <small>pod "
                      f"{_e(pod.name)}, container {_e(pod.container)}</small></h3>{shown}</div>")
    return "".join(blocks) or '<p class="empty">No pods.</p>'
