"""The job list: counts by state, filters by state, kind and namespace, and a sort.

The filters are the page's query (`?state=Failed&kind=PyTorchJob&namespace=team&sort=age`),
read by the server for the page and for its live stream alike, so a filtered list stays
filtered as it updates, and works with JavaScript off (the form has a button then).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlencode

from engine.app.web.markup import escape, job_path, layout, live_age, scrolling, state_badge, tone
from engine.app.web.state import Job

Parts = dict[str, str]
"""Element id -> its inner HTML."""

Sort = Literal["newest", "oldest", "state", "name"]
SORTS: dict[Sort, str] = {"newest": "newest first", "oldest": "oldest first",
                          "state": "by state (failed first)", "name": "by namespace and name"}
_TONE_ORDER = {"failed": 0, "running": 1, "waiting": 2, "none": 3, "succeeded": 4}
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class ListView:
    """Which jobs the list shows and in which order ("" filters nothing)."""

    state: str = ""
    kind: str = ""
    namespace: str = ""
    sort: Sort = "newest"

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ListView:
        """The view a page's query asks for (unknown sorts are the default)."""
        sort = query.get("sort", "")
        return cls(state=query.get("state", ""), kind=query.get("kind", ""),
                   namespace=query.get("namespace", ""),
                   sort=next((known for known in SORTS if known == sort), "newest"))

    def query(self, **changes: str) -> str:
        """`?...` for this view with some fields changed; "" for the default view."""
        fields = {"state": self.state, "kind": self.kind, "namespace": self.namespace,
                  "sort": self.sort, **changes}
        kept = {key: value for key, value in fields.items()
                if value and not (key == "sort" and value == "newest")}
        return "?" + urlencode(kept) if kept else "?"

    def shown(self, jobs: Sequence[Job]) -> list[Job]:
        """The jobs that pass the filters, in the chosen order."""
        kept = [job for job in jobs if (not self.state or job.state == self.state)
                and (not self.kind or job.kind == self.kind)
                and (not self.namespace or job.namespace == self.namespace)]
        by_name = sorted(kept, key=lambda job: (job.namespace, job.name, job.kind))
        if self.sort == "name":
            return by_name
        if self.sort == "state":
            return sorted(by_name, key=lambda job: (_TONE_ORDER[tone(job.state)], job.state))
        return sorted(by_name, key=lambda job: job.created or _OLDEST,
                      reverse=self.sort == "newest")


def render_jobs_parts(jobs: Sequence[Job], now: datetime, view: ListView = ListView()) -> Parts:
    """The counts by state and the table of the jobs the view shows."""
    return {"counts": _counts(jobs, view), "jobs": _table(view.shown(jobs), now, bool(jobs))}


def jobs_page(jobs: Sequence[Job], *, user: str, now: datetime, stream: str,
              view: ListView = ListView()) -> str:
    """The page listing every job the user may list."""
    parts = render_jobs_parts(jobs, now, view)
    body = ('<h1>Jobs</h1>'
            f'<nav id="counts" class="counts" aria-label="jobs by state">{parts["counts"]}</nav>'
            f"{_filters(jobs, view)}"
            f'<div id="jobs">{parts["jobs"]}</div>')
    return layout("Jobs", body, user=user, stream=stream)


def _counts(jobs: Sequence[Job], view: ListView) -> str:
    """`All 9  Running 3  Failed 1 ...`: each a link that filters the list by that state."""
    counted = Counter(job.state for job in jobs)
    order = sorted(counted, key=lambda state: (_TONE_ORDER[tone(state)], state))
    chips = [f'<a class="count{" chosen" if not view.state else ""}" '
             f'href="{escape(view.query(state=""))}">All <b>{len(jobs)}</b></a>']
    chips += [
        f'<a class="count{" chosen" if view.state == state else ""}" data-tone="{tone(state)}" '
        f'href="{escape(view.query(state=state))}">{escape(state or "(not started)")} '
        f"<b>{number}</b></a>"
        for state, number in ((state, counted[state]) for state in order)
    ]
    return "".join(chips)


def _filters(jobs: Sequence[Job], view: ListView) -> str:
    """The form that filters and sorts (it submits itself on a change where scripts run)."""
    choices = {
        "state": ("any state", sorted({job.state for job in jobs} | ({view.state} - {""}))),
        "kind": ("any kind", sorted({job.kind for job in jobs} | ({view.kind} - {""}))),
        "namespace": ("any namespace",
                      sorted({job.namespace for job in jobs} | ({view.namespace} - {""}))),
    }
    chosen = {"state": view.state, "kind": view.kind, "namespace": view.namespace}
    selects = "".join(
        f'<label>{name} <select name="{name}"><option value="">{escape(anything)}</option>'
        + "".join(f'<option{" selected" if value == chosen[name] else ""}>{escape(value)}'
                  "</option>" for value in values)
        + "</select></label>"
        for name, (anything, values) in choices.items()
    )
    sorts = "".join(f'<option value="{key}"{" selected" if key == view.sort else ""}>'
                    f"{escape(text)}</option>" for key, text in SORTS.items())
    return (f'<form class="filters" method="get" action="/">{selects}'
            f'<label>sort <select name="sort">{sorts}</select></label>'
            '<noscript><button>Show</button></noscript></form>')


def _table(shown: Sequence[Job], now: datetime, any_jobs: bool) -> str:
    if not shown:
        text = "No job matches these filters." if any_jobs else "No jobs you may list."
        return f'<p class="empty">{text}</p>'
    rows = "".join(
        f'<tr data-tone="{tone(job.state)}"><td><a href="{escape(job_path(job))}">'
        f"{escape(job.name)}</a></td><td>{escape(job.namespace)}</td><td>{escape(job.kind)}"
        f"</td><td>{state_badge(job.state)}</td><td class=\"number\">{job.restarts}</td>"
        f"<td>{live_age(job.created, now)}</td></tr>"
        for job in shown
    )
    return scrolling(
        '<table class="jobs"><thead><tr><th>Name</th><th>Namespace</th><th>Kind</th>'
        f"<th>State</th><th>Restarts</th><th>Age</th></tr></thead><tbody>{rows}</tbody></table>")
