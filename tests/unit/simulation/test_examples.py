"""Every scenario of examples/simulations/ plays and ends as its `expect` says, and the
README lists every one."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.simulation.play import play
from tests.kinds import MACHINES, REPO

EXAMPLES = REPO / "examples" / "simulations"
SCENARIOS = sorted(EXAMPLES.glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(SCENARIOS) >= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_the_example_meets_its_expect(path: Path) -> None:
    played = play(path, machines=MACHINES)
    assert played.scenario.scenario.expects, f"{path.name} states no end (expect:)"
    assert [str(d) for d in played.unmet] == []
    assert played.simulation.stopped != "until"


def test_the_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in SCENARIOS if f"({p.name})" not in readme] == []
