"""`expect`: each difference between what a scenario states and how its job ended is an
error at the stated value, and a met expectation is silent."""

from __future__ import annotations

from pathlib import Path

from engine.simulation.expect import unmet
from engine.simulation.run import simulate
from tests.unit.simulation.support import load, machine_job

TIMELINE = """\
timeline:
  - {at: 5s, replica: Worker-0, exits: 137}
  - {at: 1m, replica: Worker-0, exits: 0}
"""


def differences(tmp_path: Path, expect: str) -> list[str]:
    scenario = load(tmp_path, machine_job(), TIMELINE, expect)
    found = unmet(scenario, simulate(scenario).outcome)
    return [str(d).replace(f"{tmp_path}/", "") for d in found]


def test_a_met_expectation_has_no_differences(tmp_path: Path) -> None:
    assert differences(tmp_path, """\
        expect:
          phase: Succeeded
          state: Succeeded
          restarts: 1
          reason: AllReplicasSucceeded
          podsCreated: 2
          conditions: {Succeeded: true, Running: false, Failed: null}
          replicas: {Worker-0: Succeeded}
        """) == []


def test_each_difference_is_an_error_at_the_expected_value(tmp_path: Path) -> None:
    assert differences(tmp_path, """\
        expect:
          phase: Failed
          restarts: 0
          podsCreated: 2
          conditions: {Succeeded: false, Failed: true, Suspended: null}
          replicas: {Worker-0: Failed, Worker-1: Running}
        """) == [
        "scenario.yaml:16:10: error: expected phase Failed, got Succeeded",
        "scenario.yaml:17:13: error: expected restarts 0, got 1",
        "scenario.yaml:19:27: error: expected condition Succeeded False, got True",
        "scenario.yaml:19:42: error: expected condition Failed True, got absent",
        "scenario.yaml:20:24: error: expected replica Worker-0 in Failed, got Succeeded",
        "scenario.yaml:20:42: error: expected replica Worker-1 in Running, got absent",
    ]
