"""Every example in examples/real trains for real under `jobmachine demo --real`.

One demo run (process mode, every example at once, as a user runs it) must end each
job Succeeded (the TrainJob Complete), and each replica's `result:` line must show that the
replicas met
and trained one model: the same result on every replica, checked by the example
itself ("(ok)") and here.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.app.demo import DemoOptions, run_demo
from tests.real.support import needs_real_extra, results, trainer_port_turn

pytestmark = [pytest.mark.real, pytest.mark.slow, needs_real_extra]


@dataclass(frozen=True)
class Trained:
    """What one example's replicas print: the trainers alike (`shared`), others exactly."""

    job: str
    trainers: tuple[str, ...]
    line: re.Pattern[str]
    others: dict[str, str] = field(default_factory=dict)
    end: str = "Succeeded"


EXAMPLES = [
    Trained("pytorch-real", ("pytorch-real-master-0", "pytorch-real-worker-0"), re.compile(
        r"pytorch rank [01] of 2: (?P<shared>rank sum 1, 60 steps, loss [\d.]+, "
        r"max weight error (?P<error>[\d.]+) \(ok\))$")),
    Trained("tf-real", ("tf-real-worker-0", "tf-real-worker-1"), re.compile(
        r"tfjob rank [01] of 2: (?P<shared>rank sum 1, 60 steps, loss [\d.]+, "
        r"max weight error (?P<error>[\d.]+) \(ok\))$")),
    Trained("paddle-real", ("paddle-real-worker-0", "paddle-real-worker-1"), re.compile(
        r"paddle rank [01] of 2: (?P<shared>rank sum 1, 60 steps, loss [\d.]+, "
        r"max weight error (?P<error>[\d.]+) \(ok\))$")),
    Trained("xgboost-real", ("xgboost-real-worker-0", "xgboost-real-worker-1"), re.compile(
        r"xgboost worker [01] of 2: (?P<shared>30 rounds on 3000 rows \(1500 here\), "
        r"test logloss [\d.]+, accuracy (?P<accuracy>[\d.]+), model [0-9a-f]{12} "
        r"the same on every worker \(ok\))$"),
        others={"xgboost-real-master-0": "xgboost tracker: 2 workers trained together and left"}),
    Trained("jax-real", ("jax-real-worker-0", "jax-real-worker-1"), re.compile(
        r"jax process [01] of 2: (?P<shared>process id sum 1, 2048 rows over 2 devices "
        r"\(1024 here\), 100 steps, loss [\d.]+, max weight error (?P<error>[\d.]+), "
        r"the same in every process \(ok\))$")),
    Trained("mpi-real", ("mpi-real-launcher-0",), re.compile(
        r"mpi launcher: (?P<shared>2 of 2 ranks in pods mpi-real-worker-0, mpi-real-worker-1, "
        r"pi 3\.1415926536, max weight error (?P<error>[\d.]+), model [0-9a-f]{12} the same "
        r"on every rank \(ok\))$")),
    Trained("real-trainjob", ("real-trainjob-node-0-job-0", "real-trainjob-node-0-job-1"),
            re.compile(
        r"trainjob rank [01] of 2 \(node [01] of 2, master "
        r"real-trainjob-node-0-0\.real-trainjob\): (?P<shared>rank sum 1, 200 steps, "
        r"loss [\d.]+, weight 2\.0\d\d, bias -1\.0\d\d, the same on every rank \(ok\))$"),
            end="Complete"),
]


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo's output; its TrainJob trains at the trainer's port, so in its turn, and
    the folders torchrun leaves in the pods' temporary folder go to pytest's."""
    out = io.StringIO()
    with trainer_port_turn(), pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(tmp_path_factory.mktemp("pods-tmp")))
        ok = run_demo(DemoOptions(output=tmp_path_factory.mktemp("real-demo"), real=True),
                      out=out)
    assert ok, out.getvalue()
    return out.getvalue()


def test_demo_real_runs_every_example_to_succeeded(demo_output: str) -> None:
    assert f"all {len(EXAMPLES)} jobs ended as expected" in demo_output, demo_output
    for example in EXAMPLES:
        assert re.search(rf"^{example.job} +{example.end} +{example.end} +0 ", demo_output,
                         re.M), demo_output


def test_demo_real_draws_each_job_path(demo_output: str) -> None:
    pictures = re.search(r"highlighted\): (.*)$", demo_output, re.M)
    assert pictures, demo_output
    drawn = {Path(path).name for path in pictures[1].split(", ")}
    assert drawn == {f"{example.job}.svg" for example in EXAMPLES}
    assert all(Path(path).stat().st_size > 0 for path in pictures[1].split(", "))


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.job for example in EXAMPLES])
def test_replicas_trained_one_model(demo_output: str, example: Trained) -> None:
    printed = results(demo_output)
    mine = {pod: lines for pod, lines in printed.items() if pod.startswith(f"{example.job}-")}
    assert set(mine) == {*example.trainers, *example.others}, demo_output
    assert all(len(lines) == 1 for lines in mine.values()), mine
    for pod, line in example.others.items():
        assert mine[pod] == [line]
    matches = [example.line.match(mine[pod][0]) for pod in example.trainers]
    assert all(matches), mine
    assert len({match["shared"] for match in matches if match}) == 1, mine
    first = matches[0]
    assert first is not None
    if "error" in example.line.groupindex:
        assert float(first["error"]) < 0.02
    if "accuracy" in example.line.groupindex:
        assert float(first["accuracy"]) >= 0.85
