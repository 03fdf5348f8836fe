"""The real `jobmachine check` command: the shipped machines pass, a seeded dead end fails with
its FILE:LINE:COL and trace, and the trace is drawn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOUND = REPO / "tests" / "unit" / "modelcheck" / "machines" / "sound.yaml"


def jobmachine(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True,
                          text=True, timeout=600, cwd=REPO, check=False)


def test_every_shipped_machine_passes() -> None:
    done = jobmachine("check", "machines")
    assert done.returncode == 0, done.stdout + done.stderr
    summaries = [line for line in done.stdout.splitlines() if "job shapes" in line]
    kinds = {line.split(": ")[1].split(" ")[0] for line in summaries}
    assert kinds == {"PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob",
                     "MachineJob", "Job", "ReplicaSet", "ReplicationController", "JobSet",
                     "TrainJob"}
    assert all(line.endswith("every rule holds") for line in summaries), done.stdout
    assert "warning:" not in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_dead_end_exits_1_with_its_position_trace_and_picture(tmp_path: Path) -> None:
    machine = tmp_path / "dead-end.yaml"
    machine.write_text(SOUND.read_text().replace(
        "when: \"replicas.Worker.succeeded == replicas.Worker.desired\"", "when: \"false\""))
    picture = tmp_path / "trace.svg"
    done = jobmachine("check", str(machine), "--format", "svg", "-o", str(picture))
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(n for n, text in enumerate(machine.read_text().splitlines(), 1)
                if "Running: {condition" in text)
    assert f"{machine}:{line}:7: error: dead-end: from job state Running" in done.stdout
    assert "shortest trace" in done.stdout
    assert picture.read_bytes().startswith(b"<?xml") or b"<svg" in picture.read_bytes()[:400]


def test_a_machine_with_errors_exits_1_with_the_validation_errors(tmp_path: Path) -> None:
    machine = tmp_path / "broken.yaml"
    machine.write_text(SOUND.read_text().replace("to: Succeeded,", "to: Nowhere,"))
    done = jobmachine("check", str(machine))
    assert done.returncode == 1
    assert f"{machine}:" in done.stdout and "Nowhere" in done.stdout
