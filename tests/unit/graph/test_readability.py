"""Pictures people read: each shipped machine, and a job's path through one, fits a screen's
width with labels of at least 10 pt and none cut short, its happy path runs in one straight
column, and a path picture names every reason the job went by."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from engine.definition.loader import load_file
from engine.graph.dot import to_dot
from engine.graph.parts import happy_path
from engine.graph.path import highlight_from_counts
from engine.graph.render import render_definition, render_file
from tests.unit.graph.conftest import REPO, parse_dot

# A screen 1700 px wide shows 1275 pt at 100 % (96 dpi): a picture no wider is never
# scaled down there, so its smallest label keeps its size (the web view pans the rest).
MAX_WIDTH_PT = 1275
# Both machines stacked run about 1850 pt tall (the Kubeflow job machine's Restarting
# for replica restarts and RestartingAll for RestartJob, labels wrapped whole, and the
# legend); side by side again would show here.
MAX_HEIGHT_PT = 1900
MIN_FONT_PT = 10.0
_SVG = "{http://www.w3.org/2000/svg}"
MACHINES = sorted((REPO / "machines").glob("*.yaml"))

# The demo's PyTorchJobs, as their status.transitionCounts record them.
RESTARTS = [  # worker 0 exits 137, is recreated, then succeeds
    ("job", None, "Created", "Created", 1),
    ("job", "Created", "Running", "PyTorchJobRunning", 1),
    ("job", "Running", "Restarting", "PyTorchJobRestarting", 1),
    ("job", "Restarting", "Running", "PyTorchJobRunning", 1),
    ("job", "Running", "Succeeding", "PyTorchJobSucceeded", 1),
    ("job", "Succeeding", "Succeeded", "PyTorchJobSucceeded", 1),
    ("replica", None, "Pending", "Pending", 1),
    ("replica", "Pending", "Running", "Restarted", 1),
    ("replica", "Pending", "Running", "Started", 1),
    ("replica", "Running", "Restarting", "PyTorchJobRestarting", 1),
    ("replica", "Restarting", "Pending", "Pending", 1),
    ("replica", "Running", "Succeeded", "ExitedWithCode", 1),
]
FAILS = [  # the master exits 1 under restart policy Never
    ("job", None, "Created", "Created", 1),
    ("job", "Created", "Running", "PyTorchJobRunning", 1),
    ("job", "Running", "Failing", "PyTorchJobFailed", 1),
    ("job", "Failing", "Failed", "PyTorchJobFailed", 1),
    ("replica", None, "Pending", "Pending", 2),
    ("replica", "Pending", "Running", "Started", 2),
    ("replica", "Running", "Failed", "ExitedWithCode", 1),
]


def size_pt(svg: bytes) -> tuple[float, float]:
    root = ET.fromstring(svg)
    return _pt(root.get("width")), _pt(root.get("height"))


def texts(svg: bytes) -> list[tuple[str, float]]:
    """Every piece of text drawn, with its font size in pt."""
    return [
        (text.text or "", float(text.get("font-size", "0")))
        for text in ET.fromstring(svg).iter(f"{_SVG}text")
    ]


def _pt(value: str | None) -> float:
    match = re.fullmatch(r"([\d.]+)pt", value or "")
    assert match, f"size {value!r} is not in pt"
    return float(match[1])


@pytest.mark.parametrize("machine", MACHINES, ids=lambda path: path.name)
@pytest.mark.parametrize("level", ["all", "job", "replica"])
def test_a_shipped_machine_fits_a_screen_width_with_readable_labels(
    machine: Path, level: str
) -> None:
    svg = render_file(machine, level=level, fmt="svg")
    width, height = size_pt(svg)
    assert width <= MAX_WIDTH_PT, f"{machine.name} is {width} pt wide"
    assert height <= MAX_HEIGHT_PT, f"{machine.name} is {height} pt tall"
    drawn = texts(svg)
    assert drawn and min(size for _, size in drawn) >= MIN_FONT_PT
    assert not [text for text, _ in drawn if "…" in text or "..." in text]


@pytest.mark.parametrize("machine", MACHINES, ids=lambda path: path.name)
@pytest.mark.parametrize("level", ["all", "job", "replica"])
def test_a_shipped_machines_happy_path_is_one_straight_column(machine: Path, level: str) -> None:
    (loaded,) = load_file(machine)
    graph = parse_dot(to_dot(loaded.definition, level=level))
    for drawn in ("job", "replica") if level == "all" else (level,):
        spec = loaded.definition.spec.job if drawn == "job" else loaded.definition.spec.replica
        ids = [f"{drawn}/s/{name}" for name in happy_path(spec)]
        xs = {round(float(graph.nodes[one]["pos"].split(",")[0])) for one in ids
              if one in graph.nodes}
        assert len(xs) <= 1, (drawn, happy_path(spec), xs)


def test_the_pytorchjob_replicas_happy_path_is_pending_running_succeeded() -> None:
    (loaded,) = load_file(REPO / "machines" / "pytorchjob.yaml")
    assert happy_path(loaded.definition.spec.replica) == ("Pending", "Running", "Succeeded")
    assert happy_path(loaded.definition.spec.job) == (
        "Created", "Running", "Succeeding", "Succeeded")


@pytest.mark.parametrize("path", [RESTARTS, FAILS], ids=["restarts", "fails"])
def test_a_job_path_picture_fits_and_names_every_reason_it_went_by(
    path: list[tuple[str, str | None, str, str, int]],
) -> None:
    (loaded,) = load_file(REPO / "machines" / "pytorchjob.yaml")
    counts: list[dict[str, Any]] = [
        {"level": level, "from": source, "to": target, "reason": reason, "count": count}
        for level, source, target, reason, count in path
    ]
    svg = render_definition(
        loaded.definition, level="all", fmt="svg", highlight=highlight_from_counts(counts)
    )
    width, height = size_pt(svg)
    assert width <= MAX_WIDTH_PT and height <= MAX_HEIGHT_PT
    drawn = texts(svg)
    assert min(size for _, size in drawn) >= MIN_FONT_PT
    lines = [text for text, _ in drawn]
    for level, source, target, reason, count in path:
        if source is not None and reason != target:  # its own reason, not the target by default
            assert any(f"{count}x {reason}" in line for line in lines), (level, source, reason)
    assert f"entered {2 if path is FAILS else 1}x" in lines
