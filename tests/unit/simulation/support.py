"""Scenarios for the simulation tests: written to a file, loaded as `jobmachine simulate`
loads them, with the shipped machines."""

from __future__ import annotations

import textwrap
from pathlib import Path

from engine.simulation.loading import LoadedScenario, load_scenario
from engine.simulation.result import Simulation, format_offset
from engine.simulation.run import DEFAULT_UNTIL_S, simulate
from tests.kinds import MACHINES

MACHINE_JOB = """\
job:
  apiVersion: jobmachine.dev/v1alpha1
  kind: MachineJob
  metadata: {{name: etl}}
  spec:
    runPolicy: {run_policy}
    replicaSpecs:
      Worker:
        replicas: {workers}
        restartPolicy: {policy}
        template: {{spec: {{containers: [{{name: main, image: example/etl}}]}}}}
"""


def machine_job(*, workers: int = 1, policy: str = "ExitCode", run_policy: str = "{}") -> str:
    """The `job:` block of a scenario: a MachineJob of `workers` Workers."""
    return MACHINE_JOB.format(workers=workers, policy=policy, run_policy=run_policy)


def write(tmp_path: Path, *parts: str, name: str = "scenario.yaml") -> Path:
    """A scenario file of the parts, each dedented on its own (a job block, then the rest)."""
    path = tmp_path / name
    path.write_text("".join(textwrap.dedent(part) for part in parts), encoding="utf-8")
    return path


def load(tmp_path: Path, *parts: str) -> LoadedScenario:
    return load_scenario(write(tmp_path, *parts), machines=MACHINES)


def run(tmp_path: Path, *parts: str, until_s: float = DEFAULT_UNTIL_S) -> Simulation:
    return simulate(load(tmp_path, *parts), until_s=until_s)


def lines(simulation: Simulation, *kinds: str) -> list[str]:
    """`offset subject kind: text` of the entries of the given kinds (all when none)."""
    return [f"{format_offset(e.at)} {e.subject} {e.kind}: {e.text}"
            for e in simulation.entries if not kinds or e.kind in kinds]
