"""`jobmachine simulate` as a user runs it: a subprocess on a shipped example writes the
timeline and the path picture; a scenario whose expect fails exits 1, a wrong one 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kinds import REPO

EXAMPLE = REPO / "examples" / "simulations" / "exitcode-retry.yaml"


def simulate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", "simulate", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)


def test_an_example_prints_its_timeline_and_writes_its_path_picture(tmp_path: Path) -> None:
    picture = tmp_path / "path.svg"
    done = simulate(EXAMPLE, "-o", picture)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert "5s Worker-0 fact exits 137" in lines
    assert "6s Worker-0 pod created" in lines  # at once once the old pod is gone, as Kubeflow
    assert lines[-2:] == ["1m0s end nothing more happens: phase Succeeded, state Succeeded, "
                          "restarts 1, 2 pods created, at most 1 at once", "expect: met"]
    assert "INFO" not in done.stderr  # the engine's own logs stay out of the way
    svg = picture.read_text(encoding="utf-8")
    assert "<svg" in svg
    assert "Restarting" in svg


def test_an_unmet_expect_exits_1_with_the_difference(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(f"job: {REPO}/examples/pytorch-restarts.yaml\n"
                        "expect: {phase: Succeeded}\n", encoding="utf-8")
    done = simulate(scenario, "--format", "json", "--until", "1h")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{scenario}:2:17: error: expected phase Succeeded, got Running"]
    assert json.loads(done.stdout)["expect"]["met"] is False


def test_a_wrong_scenario_or_flag_exits_2(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("job: {}\ntimeline: [{at: soon}]\n", encoding="utf-8")
    done = simulate(scenario)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"{scenario}:2:17: error: 'soon' is not a duration: write 500ms, 5s, 10m, 1h30m or "
        "whole seconds"]
    assert simulate(EXAMPLE, "--until", "soon").returncode == 2
