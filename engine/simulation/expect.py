"""A scenario's `expect` against how its simulation ended: one error per difference.

Each difference is a diagnostic at the expected value in the scenario file, so an
editor jumps to the line that no longer holds, as it does for `jobmachine validate`.
"""

from __future__ import annotations

from typing import Any

from engine.definition.errors import Diagnostic, error
from engine.simulation.loading import LoadedScenario
from engine.simulation.result import Outcome

_FIELDS = (("phase", "phase"), ("state", "state"), ("restarts", "restarts"),
           ("reason", "reason"), ("pods_created", "podsCreated"),
           ("pods_at_once", "podsAtOnce"))
"""(attribute, name in the file) of the single-valued expectations."""


def unmet(scenario: LoadedScenario, outcome: Outcome) -> list[Diagnostic]:
    """Every expectation of the scenario that the outcome does not meet."""
    expect = scenario.scenario.expect
    found: list[Diagnostic] = []

    def differs(path: tuple[str, ...], what: str, expected: Any, got: Any) -> None:
        where = scenario.positions.value(("expect", *path))
        found.append(error(where, f"expected {what} {_text(expected)}, got {_text(got)}"))

    for attribute, name in _FIELDS:
        expected, got = getattr(expect, attribute), getattr(outcome, attribute)
        if expected is not None and expected != got:
            differs((name,), name, expected, got)
    for type_, status in (expect.conditions or {}).items():
        got_status = outcome.conditions.get(type_)
        if got_status != status:
            differs(("conditions", type_), f"condition {type_}", status, got_status)
    for replica, state in (expect.replicas or {}).items():
        got_state = outcome.replicas.get(replica)
        if got_state != state:
            differs(("replicas", replica), f"replica {replica} in", state, got_state)
    return found


def _text(value: Any) -> str:
    return "absent" if value is None else str(value)
