"""A job's page: its summary, its machine, its replicas, their logs, conditions and events.

A page is whole without JavaScript (curl sees everything); each part that changes is one
element with an id, and `render_job_parts` returns exactly that element's inner HTML, so
the first paint and every update come from the same function. The page's script merges
the `logs` part instead of replacing it, so that a log box keeps what it showed, its
scroll position and its search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import quote

from engine.api.replica_words import replica_words
from engine.app.web.markup import (
    age,
    escape,
    job_path,
    layout,
    live_age,
    scrolling,
    state_badge,
)
from engine.app.web.picture import Picture, current_states, marked_svg
from engine.app.web.state import Event, Job, Pod, Replica

Parts = dict[str, str]
"""Element id -> its inner HTML."""


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


def log_path(job: Job, pod: str) -> str:
    """Where the whole log of one of the job's pods is read (`?previous=1`: the attempt
    before the container's restart, `?download=1`: as a file)."""
    return f"{job_path(job)}/logs/{quote(pod, safe='')}"


def render_job_parts(detail: JobDetail, now: datetime) -> Parts:
    """The parts of a job's page."""
    ended = f"job/s/{detail.job.state}" in detail.picture.ends
    return {
        "summary": _summary(detail.job, now),
        "machine": _machine(detail.job, detail.picture),
        "replicas": _replicas(detail.job.replicas, detail.pods, "pods" in detail.hidden,
                              job_ended=ended, ends=detail.picture.ends),
        "conditions": _conditions(detail.job),
        "events": _events(detail.events, now, "events" in detail.hidden),
        "logs": _logs(detail.job, detail.pods, detail.logs, "pods" in detail.hidden),
    }


_SECTIONS = (("replicas", "Replicas"), ("logs", "Logs"), ("conditions", "Conditions"),
             ("events", "Events"))
_PICTURE_TOOLS = (
    '<div class="tools" role="toolbar" aria-label="picture">'
    '<button type="button" data-zoom="out" title="zoom out">&minus;</button>'
    '<button type="button" data-zoom="in" title="zoom in">+</button>'
    '<button type="button" data-zoom="fit" title="the whole picture">fit</button>'
    '<button type="button" data-zoom="read" title="text at reading size">100%</button>'
    '<span class="hint">drag to pan, Ctrl + wheel to zoom, hover an arrow for its '
    "transitions</span></div>")


def job_page(detail: JobDetail, *, user: str, now: datetime, stream: str) -> str:
    """A job's page: summary, then its machine across the page's width, then the facts."""
    job, parts = detail.job, render_job_parts(detail, now)
    facts = "".join(
        f'<section class="{name}"><h2>{heading}</h2><div id="{name}">{parts[name]}</div>'
        "</section>"
        for name, heading in _SECTIONS
    )
    machine = (f'<section class="machine"><h2>Machine</h2>{_PICTURE_TOOLS}'
               f'<div id="machine">{parts["machine"]}</div></section>')
    title = f"{job.kind} {job.namespace}/{job.name}"
    body = (f"<h1>{escape(title)}</h1>"
            f'<div id="summary" class="summary">{parts["summary"]}</div>{machine}{facts}')
    return layout(title, body, user=user, stream=stream)


def replica_status(state: str, pod: Pod | None, *, job_ended: bool, ended: bool) -> str:
    """A replica's state badge, as it is true now (engine.api.replica_words says it, as the
    job's status and the SDK do): `Running, stopped at job end (pod deleted)`."""
    words = replica_words(state, None if pod is None else pod.phase, job_ended=job_ended,
                          ended=ended)
    if words.text == state:
        return state_badge(state)
    # A machine stopped at the job's end is badged Stopped; a pod's contradiction keeps the state.
    return state_badge(words.tone if job_ended else state, shown=words.text, tone_of=words.tone)


def _summary(job: Job, now: datetime) -> str:
    rows = [("State", state_badge(job.state)),
            ("Restarts", f'<span id="restarts">{job.restarts}</span>'),
            ("Age", live_age(job.created, now)),
            ("Kind", escape(f"{job.kind} ({job.resource.api_version})")),
            ("Namespace", escape(job.namespace)),
            ("Machine revision", escape(job.revision or "(none yet)"))]
    if job.last_failure:
        rows.append(("Last failure", escape(job.last_failure)))
    if job.record_error:
        rows.append(("Record", f'<span class="warning">{escape(job.record_error)}</span>'))
    return "<dl>" + "".join(
        f"<div><dt>{name}</dt><dd>{value}</dd></div>" for name, value in rows) + "</dl>"


def _machine(job: Job, picture: Picture) -> str:
    if picture.svg is None:
        return f'<p class="note">{escape(picture.reason)}</p>'
    current = current_states(job)
    where = "".join(
        f"<li><b>{escape(who)}</b>: {escape(title.partition('/s/')[2])}</li>"
        for title, who in current.items()
    )
    return (f'<ul class="where" aria-label="where the job and its replicas are now">{where}'
            '</ul>'
            f'<div class="picture">{marked_svg(picture.svg, current)}</div>')


def _replicas(replicas: Sequence[Replica], pods: Sequence[Pod], pods_hidden: bool, *,
              job_ended: bool, ends: frozenset[str]) -> str:
    by_replica = {(pod.replica_type, pod.replica_index): pod for pod in pods}
    rows = []
    for replica in replicas:
        pod = by_replica.pop((replica.type, str(replica.index)), None)
        state = replica_status(replica.state, None if pods_hidden else pod,
                               job_ended=job_ended,
                               ended=f"replica/s/{replica.state}" in ends)
        rows.append(_replica_row(replica.name, state, replica.restarts, pod))
    rows.extend(_replica_row(f"{pod.replica_type}-{pod.replica_index}", "", None, pod)
                for pod in by_replica.values())
    if not rows:
        return '<p class="empty">No replicas yet.</p>'
    note = ('<p class="note">You may not list pods in this namespace: pod columns are '
            "empty.</p>" if pods_hidden else "")
    return note + scrolling(
        "<table><thead><tr><th>Replica</th><th>State</th><th>Restarts</th><th>Pod</th>"
        f"<th>Phase</th><th>Container</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _replica_row(name: str, state: str, restarts: int | None, pod: Pod | None) -> str:
    pod_cells = (f"<td>{escape(pod.name)}</td><td>{escape(pod.phase)}</td>"
                 f"<td>{escape(pod.container_state)}</td>" if pod is not None
                 else "<td></td><td></td><td></td>")
    counted = "" if restarts is None else str(restarts)
    return (f'<tr data-replica="{escape(name)}"><td>{escape(name)}</td><td>{state}</td>'
            f'<td class="number">{counted}</td>{pod_cells}</tr>')


def _conditions(job: Job) -> str:
    if not job.conditions:
        return '<p class="empty">No conditions yet.</p>'
    rows = "".join(
        f"<tr><td>{escape(c.type)}</td><td>{escape(c.status)}</td><td>{escape(c.reason)}</td>"
        f'<td class="text">{escape(c.message)}</td><td>{escape(c.last_transition)}</td></tr>'
        for c in job.conditions
    )
    return scrolling(
        "<table><thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th>"
        f"<th>Last transition</th></tr></thead><tbody>{rows}</tbody></table>")


def _events(events: Iterable[Event], now: datetime, hidden: bool) -> str:
    if hidden:
        return '<p class="note">You may not list events in this namespace.</p>'
    rows = "".join(
        f'<tr class="{escape(event.type.lower())}"><td>{escape(event.type)}</td>'
        f"<td>{escape(event.reason)}</td><td>{escape(_seen(event.last_seen, now))}</td>"
        f'<td class="number">{event.count}</td><td class="text">{escape(event.message)}</td>'
        "</tr>"
        for event in events
    )
    if not rows:
        return '<p class="empty">No events.</p>'
    return scrolling(
        "<table><thead><tr><th>Type</th><th>Reason</th><th>Last seen</th><th>Count</th>"
        f"<th>Message</th></tr></thead><tbody>{rows}</tbody></table>")


def _seen(when: str, now: datetime) -> str:
    try:
        return age(datetime.fromisoformat(when.replace("Z", "+00:00")), now) + " ago"
    except ValueError:
        return when


def _logs(job: Job, pods: Sequence[Pod], logs: Mapping[str, LogTail], hidden: bool) -> str:
    if hidden:
        return '<p class="note">You may not list pods in this namespace.</p>'
    return "".join(_log_box(job, pod, logs.get(pod.name, LogTail(note="not read")))
                   for pod in pods) or '<p class="empty">No pods.</p>'


def _log_box(job: Job, pod: Pod, tail: LogTail) -> str:
    """One replica's log: the tail, the attempts to choose from, search and download."""
    replica = f"{pod.replica_type}-{pod.replica_index}"
    where = escape(log_path(job, pod.name))
    attempts = '<option value="current">this attempt</option>'
    if pod.container_restarts:
        attempts += ('<option value="previous">the attempt before (restart '
                     f"{pod.container_restarts})</option>")
    shown = (f'<pre class="lines" tabindex="0">{escape(tail.text)}</pre>' if tail.text
             else f'<p class="note">{escape(tail.note or "(empty)")}</p>')
    return (
        f'<div class="log" data-pod="{escape(pod.name)}" data-uid="{escape(pod.uid)}" '
        f'data-replica="{escape(replica)}" data-src="{where}">'
        f'<div class="log-head"><h3>{escape(replica)} <small>pod {escape(pod.name)}, '
        f"container {escape(pod.container)}</small></h3>"
        f'<span class="log-tools"><select class="attempt" aria-label="attempt">{attempts}'
        '</select><input type="search" class="find" placeholder="search this log" '
        f'aria-label="search this log"><a class="download" href="{where}?download=1">'
        "download</a></span></div>"
        f"{shown}</div>"
    )
