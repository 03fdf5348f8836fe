"""One scenario file, played: loaded, simulated, and judged against its `expect`.

What `jobmachine simulate` does before it prints anything, and what the tests of
the examples call, so both judge a scenario the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.definition.errors import Diagnostic
from engine.simulation.expect import unmet
from engine.simulation.loading import LoadedScenario, load_scenario
from engine.simulation.result import Simulation
from engine.simulation.run import DEFAULT_UNTIL_S, simulate


@dataclass(frozen=True)
class Played:
    """A scenario, its simulation, and the expectations it did not meet (none: it passed)."""

    scenario: LoadedScenario
    simulation: Simulation
    unmet: tuple[Diagnostic, ...]


def play(path: str | Path, *, machines: Path, until_s: float = DEFAULT_UNTIL_S) -> Played:
    """Raises `ScenarioError` for a scenario that cannot be played, `NeverSettlesError` for
    a machine that keeps changing the job at one instant."""
    scenario = load_scenario(path, machines=machines)
    simulation = simulate(scenario, until_s=until_s)
    return Played(scenario, simulation, tuple(unmet(scenario, simulation.outcome)))
