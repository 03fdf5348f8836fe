"""What every page of the web view shares: the frame around a page, escaping, ages, links,
and the state badge.

Every text that comes from the cluster goes through `escape` (HTML escaping, quotes
included). A state's colour comes from its tone (`tone`), so a kind's own state names
(`SucceededAsChief`, `Complete`) are coloured as what they mean.
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Literal
from urllib.parse import quote

from engine.app.web.state import Job

STYLE_URL = "/static/view.css"
SCRIPT_URL = "/static/view.js"
ICON_URL = "/favicon.svg"

Tone = Literal["failed", "running", "succeeded", "waiting", "none"]

_WAITING = ("Pending", "Created", "Restart", "Suspend", "Succeeding", "Failing", "IndexFailing",
            "Scheduling", "Stopped")


def escape(value: object) -> str:
    """`value` as HTML text, safe inside an attribute too."""
    return html.escape(str(value), quote=True)


def job_path(job: Job) -> str:
    """The job's page: `/jobs/NAMESPACE/PLURAL.GROUP/NAME`."""
    return "/jobs/" + "/".join(quote(part, safe="") for part in (
        job.namespace, job.resource_name, job.name))


def age(since: datetime | None, now: datetime) -> str:
    """How long ago, as kubectl writes it: `42s`, `5m10s`, `3h`, `2d4h` (the page's script
    counts on in the same words)."""
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


def live_age(since: datetime | None, now: datetime) -> str:
    """An age the page's script keeps counting between updates."""
    if since is None:
        return escape(age(since, now))
    return (f'<time class="age" datetime="{escape(since.isoformat())}">'
            f"{escape(age(since, now))}</time>")


def tone(state: str) -> Tone:
    """What a state means at a glance: failed, running, succeeded, on its way, or unknown."""
    if ("Fail" in state and "Failing" not in state) or state.endswith("TimedOut"):
        return "failed"
    if state.startswith(_WAITING):
        return "waiting"
    if state.startswith(("Succeeded", "Complete")):
        return "succeeded"
    if state in ("Running", "Active"):
        return "running"
    return "none"


def state_badge(state: str, *, shown: str | None = None, tone_of: str | None = None) -> str:
    """A state as a coloured badge: `shown` (else the state) in the colour of `tone_of`'s
    tone (else the state's)."""
    text = shown if shown is not None else (state or "(not started)")
    return (f'<span class="state" data-state="{escape(state)}" '
            f'data-tone="{tone(tone_of if tone_of is not None else state)}">{escape(text)}</span>')


def layout(title: str, body: str, *, user: str | None = None, stream: str | None = None) -> str:
    """A whole page; `stream` is the URL of its live updates (none: a static page)."""
    signed_in = (
        f'<span class="user">signed in as <b>{escape(user)}</b></span>'
        '<form method="post" action="/logout"><button>Log out</button></form>'
        if user is not None else ""
    )
    live = (
        '<span id="live" class="live">connecting...</span>'
        '<noscript><span class="live">live updates need JavaScript: reload to see changes'
        "</span></noscript>"
        if stream is not None else ""
    )
    stream_attr = f' data-stream="{escape(stream)}"' if stream is not None else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} - jobmachine</title>"
        f'<link rel="icon" href="{ICON_URL}" type="image/svg+xml">'
        f'<link rel="stylesheet" href="{STYLE_URL}">'
        f'<script src="{SCRIPT_URL}" defer></script></head>'
        f"<body{stream_attr}>"
        f'<header><a class="home" href="/">jobmachine</a>{live}{signed_in}</header>'
        f"<main>{body}</main></body></html>\n"
    )


def scrolling(table: str) -> str:
    """A table in a box that scrolls sideways by itself (its edge shades while there is
    more to see), so a wide table never widens the page."""
    return f'<div class="scroll">{table}</div>'
