"""What `jobmachine demo` prints: the timeline of state changes, the final table and the events.

Pure formatting of values the demo already read from the API, kept apart from
the demo's orchestration so that each reads on its own; every function returns
text (no I/O), so the layout can be checked without a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.controller.reconcile.reconcile import RecordedTransition

_START = "(new)"


@dataclass(frozen=True)
class JobRow:
    """One line of the final table."""

    name: str
    expected: str
    phase: str
    restarts: int
    duration_s: float | None

    @property
    def as_expected(self) -> bool:
        return self.phase == self.expected


def timeline_line(offset_s: float, job: str, change: RecordedTransition, *, width: int) -> str:
    """One recorded state change: when the demo saw it, whose it is, from -> to, and why."""
    who = change.replica or "job"
    change_text = f"{change.source or _START} -> {change.target}"
    return f"{offset_s:6.1f}s  {job:<{width}}  {who:<10}  {change_text:<26}  {change.reason}"


def summary_table(rows: Sequence[JobRow]) -> str:
    """The final phases: job, expected, phase, restarts, duration and whether it was expected."""
    header = ("job", "expected", "phase", "restarts", "duration", "")
    body = [
        (
            row.name,
            row.expected,
            row.phase,
            str(row.restarts),
            "-" if row.duration_s is None else f"{row.duration_s:.1f}s",
            "ok" if row.as_expected else "NOT AS EXPECTED",
        )
        for row in rows
    ]
    return _columns([header, *body])


def events_block(job: str, events: Iterable[Mapping[str, Any]]) -> str:
    """The job's events, oldest first, as `kubectl describe` lists them."""
    ordered = sorted(events, key=_event_order)
    if not ordered:
        return f"events of {job}: none\n"
    rows = [("type", "reason", "count", "message")]
    rows += [
        (
            str(event.get("type", "")),
            str(event.get("reason", "")),
            f"x{event.get('count') or 1}",
            str(event.get("message", "")),
        )
        for event in ordered
    ]
    lines = _columns(rows).splitlines()
    return f"events of {job}:\n" + "".join(f"  {line}\n" for line in lines)


def verdict(rows: Sequence[JobRow]) -> str:
    """One sentence: did every job end as expected, and if not, which did not."""
    wrong = [row for row in rows if not row.as_expected]
    if not wrong:
        return f"all {len(rows)} jobs ended as expected.\n"
    names = ", ".join(f"{row.name} (expected {row.expected}, got {row.phase})" for row in wrong)
    return f"{len(wrong)} of {len(rows)} jobs did not end as expected: {names}.\n"


def _event_order(event: Mapping[str, Any]) -> tuple[str, int]:
    """By first occurrence; within one second by the nanosecond clock in the event's name
    (`<object>.<hex>`, as client-go names them)."""
    first = str(event.get("firstTimestamp") or event.get("eventTime") or "")
    suffix = str((event.get("metadata") or {}).get("name", "")).rpartition(".")[2]
    try:
        nanos = int(suffix, 16)
    except ValueError:
        nanos = 0
    return first, nanos


def _columns(rows: Sequence[Sequence[str]]) -> str:
    """Rows as left-aligned columns two spaces apart (the last column unpadded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        .rstrip()
        for row in rows
    ]
    return "\n".join(lines) + "\n"
