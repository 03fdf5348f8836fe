"""The short chaos run of `.ci/run`: seeded, in both node modes, judged by the invariants.

Jobs of every shipped kind and outcome run while the engine is killed with SIGKILL and
restarted, the API server answers a share of requests with faults, its watch history
is compacted and the node is lost. The run must break no invariant
(engine/testing/chaos/invariants.py). It also checks that the disruptions happened,
so a quiet run cannot pass for a chaotic one. docs/reliability.md has the long runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.testing.chaos import ChaosConfig, ChaosReport, run_chaos
from engine.testing.chaos.workload import KINDS

pytestmark = [pytest.mark.slow, pytest.mark.exclusive]


def _judged(report: ChaosReport) -> None:
    assert report.violations == [], report.summary()
    assert report.engine_kills >= 1, report.summary()
    assert report.node_losses >= 1, report.summary()
    assert sum(report.faults.get("injected", {}).values()) > 0, report.summary()
    assert report.harness_errors == [], report.summary()
    assert report.engine_tracebacks == 0, report.summary()


def test_simulate_mode_survives_kills_faults_and_a_lost_node(tmp_path: Path) -> None:
    report = run_chaos(ChaosConfig(jobs=60, seed=20261126, node_mode="simulate",
                                   engine_kills=(5.0, 9.0), node_losses=(6.0, 10.0),
                                   faults=(3.0, 6.0), settle_s=90.0), tmp_path)
    _judged(report)
    assert set(report.kinds) == {shape.kind for shape in KINDS}, report.summary()
    assert len(report.scenarios) >= 8, report.summary()


def test_process_mode_never_runs_two_processes_for_one_index(tmp_path: Path) -> None:
    report = run_chaos(ChaosConfig(jobs=24, seed=7, node_mode="process", in_flight=12,
                                   engine_kills=(5.0, 9.0), node_losses=(10.0, 15.0),
                                   faults=(3.0, 6.0), settle_s=90.0), tmp_path)
    _judged(report)
    attempts = list((tmp_path / "replicas" / "attempts").iterdir())
    assert attempts, "no replica process ran"
