"""`jobmachine check` of a rollout (engine/modelcheck/rollouts.py): the shipped Deployment
machine keeps every rule, and a seeded fault, in a machine's rollout CEL or in the
planner, breaks the rule it should, reported at the rollout section with a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.controller.rollouts import plan
from engine.modelcheck.check import CheckReport, check_paths
from engine.modelcheck.report import report_lines
from engine.modelcheck.rollouts import RolloutShape
from engine.modelcheck.shapes import Bounds
from tests.kinds import MACHINES

DEPLOYMENT = MACHINES / "deployment.yaml"
SURGE_VALUE = "? job.spec.strategy.rollingUpdate.maxSurge : '25%'"


def seeded(tmp_path: Path, old: str, new: str) -> Path:
    """The shipped Deployment machine with one fault written into its rollout."""
    text = DEPLOYMENT.read_text()
    assert old in text
    path = tmp_path / "deployment.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def checked(path: Path) -> CheckReport:
    return check_paths([path], Bounds())


def broken(report: CheckReport) -> set[str]:
    [machine] = report.machines
    assert machine.rollout is not None
    return {v.rule for v in machine.rollout.violations}


def test_the_shipped_deployment_keeps_every_rule_for_every_shape() -> None:
    report = checked(DEPLOYMENT)
    [machine] = report.machines
    assert machine.rollout is not None
    assert machine.rollout.shapes == 32
    assert machine.rollout.situations > 32
    assert machine.rollout.violations == []
    assert report.ok


@pytest.mark.parametrize(("shape", "most", "least"), [
    (RolloutShape(3, "RollingUpdate"), 4, 3),  # the defaults, 25% each: 1 up, 0 down
    (RolloutShape(3, "RollingUpdate", "50%", "50%"), 5, 2),
    (RolloutShape(4, "RollingUpdate", 0, 0), 4, 3),  # 0/0: one may be unavailable
    (RolloutShape(1, "RollingUpdate", 2, 1), 3, 0),
    (RolloutShape(2, "Recreate"), 2, 0),
])
def test_the_bounds_are_worked_out_from_what_the_job_says(
    shape: RolloutShape, most: int, least: int
) -> None:
    assert shape.bounds() == (most, least)


def test_a_machine_that_passes_max_unavailable_as_max_surge_breaks_a_bound(
    tmp_path: Path,
) -> None:
    path = seeded(tmp_path, SURGE_VALUE,
                  "? job.spec.strategy.rollingUpdate.maxUnavailable : '25%'")
    report = checked(path)
    assert not report.ok
    assert {"rollout-surge", "rollout-unavailable"} <= broken(report)
    rollout = report.machines[0].rollout
    assert rollout is not None
    lines = list(report_lines(report))
    assert lines[0] == (f"{path}: Deployment (machine deployment): 32 rollout shapes, "
                        f"{rollout.situations:,} situations: "
                        f"{len(rollout.violations)} rule(s) broken")
    errors = [line for line in lines if ": error: " in line]
    assert errors and all(line.startswith(f"{path}:26:3: error: rollout-") for line in errors)
    assert any(line.startswith("  shortest trace (") for line in lines)
    assert any("1. the template changes: old wants" in line for line in lines)


def test_a_machine_that_always_rolls_breaks_recreate(tmp_path: Path) -> None:
    path = seeded(tmp_path, "? job.spec.strategy.type : 'RollingUpdate'", "? 'RollingUpdate' : "
                  "'RollingUpdate'")
    assert "recreate-overlap" in broken(checked(path))


def test_a_planner_that_surges_one_too_many_breaks_the_surge_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = plan.max_surge

    def one_more(*given: Any) -> int:
        return real(*given) + 1

    monkeypatch.setattr(plan, "max_surge", one_more)
    assert broken(checked(DEPLOYMENT)) == {"rollout-surge"}


def test_a_planner_that_lets_one_more_go_unavailable_breaks_the_availability_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = plan.max_unavailable

    def one_more(*given: Any) -> int:
        return real(*given) + 1

    monkeypatch.setattr(plan, "max_unavailable", one_more)
    assert "rollout-unavailable" in broken(checked(DEPLOYMENT))


def test_a_planner_that_never_scales_old_revisions_down_reaches_a_dead_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plan._Sync, "_shrink_old", lambda self: False)
    assert "rollout-dead-end" in broken(checked(DEPLOYMENT))
