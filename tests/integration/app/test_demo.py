"""`jobmachine demo` end to end: the shipped examples on a throw-away cluster, in both node modes.

The demo's own verdict is checked, and so is what it printed (the final table)
and what it wrote (one picture per job, with the path the job took highlighted).
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from engine.app.demo import DemoError, DemoOptions, load_examples, run_demo
from engine.app.up import NodeMode
from engine.shipped import shipped_dir
from tests.integration.app.support import highlighted_states
from tests.kinds import KINDS

EXPECTED_PHASES = {
    "pytorch-succeeds": "Succeeded",
    "pytorch-restarts": "Succeeded",
    "pytorch-fails": "Failed",
}


def _final_table(text: str) -> dict[str, list[str]]:
    """job -> [expected, phase, restarts, duration, verdict] from the printed table."""
    lines = text.splitlines()
    header = ["job", "expected", "phase"]
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == header)
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1:]:
        cells = line.split(maxsplit=5)
        if len(cells) < 5 or cells[0] not in EXPECTED_PHASES:
            break
        rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("node_mode", ["simulate", "process"])
def test_demo_runs_every_example_as_it_expects(tmp_path: Path, node_mode: NodeMode) -> None:
    out = io.StringIO()
    pictures = tmp_path / "demo-output"

    ok = run_demo(DemoOptions(output=pictures, node_mode=node_mode), out=out)

    text = out.getvalue()
    assert ok, text
    table = _final_table(text)
    assert {name: row[1] for name, row in table.items()} == EXPECTED_PHASES, text
    assert table["pytorch-restarts"][2] == "1", text
    assert table["pytorch-succeeds"][2] == "0", text
    assert "all 3 jobs ended as expected" in text
    assert re.search(r"pytorch-restarts +Worker-0 +Running -> Restarting +PyTorchJobRestarting",
                     text), text
    assert re.search(r"pytorch-restarts +job +Running -> Restarting +PyTorchJobRestarting",
                     text), text
    assert "Pod: default.pytorch-restarts-worker-0 exited with code 137" in text
    assert "job pytorch-restarts is restarting because Worker replica(s) failed." in text

    visited = {name: highlighted_states((pictures / f"{name}.svg").read_bytes())
               for name in EXPECTED_PHASES}
    assert {"job/s/Succeeded", "replica/s/Restarting"} <= visited["pytorch-restarts"]
    assert "replica/s/Restarting" not in visited["pytorch-succeeds"]
    assert {"job/s/Failed", "replica/s/Failed"} <= visited["pytorch-fails"]
    assert "job/s/Succeeded" not in visited["pytorch-fails"]


@pytest.mark.slow
def test_demo_says_so_when_a_job_ends_otherwise(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    examples.mkdir()
    wrong = (shipped_dir("examples") / "pytorch-fails.yaml").read_text()
    (examples / "pytorch-fails.yaml").write_text(
        wrong.replace("demo.jobmachine.dev/expect: Failed", "demo.jobmachine.dev/expect: Succeeded")
    )
    shutil.copy(shipped_dir("examples") / "pytorch-succeeds.yaml", examples)
    out = io.StringIO()

    ok = run_demo(DemoOptions(output=tmp_path / "out", node_mode="simulate", examples=examples),
                  out=out)

    text = out.getvalue()
    assert not ok, text
    assert "1 of 2 jobs did not end as expected: pytorch-fails (expected Succeeded, got Failed)" \
        in text
    assert _final_table(text)["pytorch-succeeds"][-1] == "ok"


def test_the_shipped_examples_say_what_they_expect() -> None:
    examples = load_examples(shipped_dir("examples"), KINDS)

    assert {e.name: e.expect for e in examples} == EXPECTED_PHASES
    assert {(e.namespace, e.manifest["kind"]) for e in examples} == {("default", "PyTorchJob")}


def test_an_example_without_an_expectation_is_refused_by_name(tmp_path: Path) -> None:
    manifest = (shipped_dir("examples") / "pytorch-succeeds.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(
        manifest.replace("demo.jobmachine.dev/expect: Succeeded", "other: x")
    )

    with pytest.raises(DemoError, match=r"mine\.yaml: needs metadata\.name and the annotation "
                                        r"demo\.jobmachine\.dev/expect"):
        load_examples(tmp_path, KINDS)
