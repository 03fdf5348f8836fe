"""A played scenario as people read it, one line per happening, or as one JSON document.

Lines are aligned columns (time offset, subject, kind, text), so a timeline reads
top-down like the field notes of an incident; JSON carries the same entries and the
job's final status for tools.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from engine.simulation.play import Played
from engine.simulation.result import Simulation, Stop, format_offset

_STOPS: dict[Stop, str] = {
    "quiet": "nothing more happens",
    "until": "the time limit (--until)",
    "deleted": "the job is deleted",
}


def text_report(played: Played) -> str:
    """The timeline, the end, and whether `expect` was met (the differences are the
    caller's to print, as diagnostics)."""
    simulation = played.simulation
    rows: list[tuple[str, str, str, str]] = [
        (format_offset(e.at), e.subject, e.kind, e.text) for e in simulation.entries]
    rows.append((format_offset(simulation.end), "", "end", _end(simulation)))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = [f"{at:>{widths[0]}}  {subject:<{widths[1]}}  {kind:<{widths[2]}}  {text}".rstrip()
             for at, subject, kind, text in rows]
    if played.scenario.scenario.expects:
        lines.append("expect: met" if not played.unmet else
                     f"expect: not met ({_count(len(played.unmet), 'difference')})")
    return "\n".join(lines)


def _end(simulation: Simulation) -> str:
    outcome = simulation.outcome
    return (f"{_STOPS[simulation.stopped]}: phase {outcome.phase}, state {outcome.state}, "
            f"restarts {outcome.restarts}, {_count(outcome.pods_created, 'pod')} created, "
            f"at most {outcome.pods_at_once} at once")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def json_report(played: Played) -> str:
    """The same as one JSON document: timeline entries, the end, the engine's status and
    the kind's own (a Native layout's: a JobSet's as its API shows it), `expect`."""
    simulation = played.simulation
    outcome = asdict(simulation.outcome)
    outcome["podsCreated"] = outcome.pop("pods_created")
    outcome["podsAtOnce"] = outcome.pop("pods_at_once")
    document: dict[str, Any] = {
        "scenario": played.scenario.path,
        "timeline": [{"offset": format_offset(e.at), **asdict(e)} for e in simulation.entries],
        "end": {"at": simulation.end, "offset": format_offset(simulation.end),
                "stopped": simulation.stopped, **outcome},
        "status": simulation.status,
        "kindStatus": simulation.kind_status,
        "expect": None if not played.scenario.scenario.expects else {
            "met": not played.unmet, "unmet": [str(d) for d in played.unmet]},
    }
    return json.dumps(document, indent=2)
