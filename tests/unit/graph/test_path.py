"""One job's recorded path: counted from its history, drawn bold with counts, the rest grey."""

from __future__ import annotations

import pytest

from engine.graph.dot import to_dot
from engine.graph.mermaid import to_mermaid
from engine.graph.path import Highlight, highlight_from_history
from tests.unit.graph.conftest import parse_dot

# worker 0 fails once (exit 137, restarted), then succeeds; the job succeeds
HISTORY = [
    {"level": "job", "from": None, "to": "Created", "reason": "Created"},
    {"level": "replica", "from": None, "to": "Pending"},
    {"level": "replica", "from": "Pending", "to": "Running", "reason": "Running"},
    {"level": "replica", "from": "Running", "to": "Restarting", "reason": "Retry"},
    {"level": "replica", "from": "Restarting", "to": "Pending", "reason": "Pending"},
    {"level": "replica", "from": "Pending", "to": "Running", "reason": "Running"},
    {"level": "job", "from": "Created", "to": "Running", "reason": "Running"},
    {"level": "replica", "from": "Running", "to": "Succeeded", "reason": "Succeeded"},
    {"level": "job", "from": "Running", "to": "Done", "reason": "Done"},
]
ON_PATH = "#d97706"


def test_history_counts_visits_and_edges():
    highlight = highlight_from_history(HISTORY)
    assert highlight.visited[("replica", "Running")] == 2
    assert highlight.visited[("replica", "Pending")] == 2
    # a missing reason is the target's name
    assert highlight.fired[("replica", None, "Pending", "Pending")] == 1
    assert highlight.fired[("replica", "Pending", "Running", "Running")] == 2
    assert ("replica", "Running", "Failed", "Failed") not in highlight.fired


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"level": "pod", "from": "A", "to": "B"}, "level must be job or replica"),
        ({"level": "job", "from": "A"}, "`to` must name a state"),
        ({"level": "job", "from": 3, "to": "B"}, "`from` must name a state"),
    ],
)
def test_malformed_entries_are_rejected_by_number(entry, problem):
    with pytest.raises(ValueError, match=rf"history entry 1: {problem}"):
        highlight_from_history([HISTORY[0], entry])


def test_visited_states_and_fired_edges_are_coloured_with_counts(sample):
    graph = parse_dot(to_dot(sample, level="all", highlight=highlight_from_history(HISTORY)))
    running = graph.nodes["replica/s/Running"]
    assert running["color"] == ON_PATH and running["label"].endswith("entered 2x")
    failed = graph.nodes["replica/s/Failed"]
    assert failed["color"] != ON_PATH and failed["fontcolor"] == "#a8a8a8"
    edges = {(t, h): a for t, h, a in graph.edges}
    assert edges[("replica/s/Pending", "replica/s/Running")]["label"] == "2x on podRunning"
    assert edges[("replica/s/Pending", "replica/s/Running")]["color"] == ON_PATH
    assert edges[("replica/start", "replica/s/Pending")]["label"] == "1x"
    # the junction of [Pending, Running]: Running left by it twice (Retry, then Succeeded)
    assert edges[("replica/s/Running", "replica/junction/2")]["color"] == ON_PATH
    assert edges[("replica/s/Running", "replica/junction/2")]["label"] == "2x"
    assert edges[("replica/s/Pending", "replica/junction/2")]["color"] != ON_PATH
    assert edges[("replica/junction/2", "replica/s/Restarting")]["label"] == "1x Retry"
    assert edges[("replica/s/Restarting", "replica/s/Pending")]["label"] == "1x on podMissing"
    assert edges[("replica/junction/2", "replica/s/Failed")]["color"] != ON_PATH


def test_the_path_stands_out(sample):
    """States it never entered show their name only; arrows it did not take keep their words,
    in grey; an arrow it took names only the transitions it took."""
    lost = [
        *HISTORY[:3],
        {"level": "replica", "from": "Running", "to": "Failed", "reason": "PodLost"},
    ]
    graph = parse_dot(to_dot(sample, level="all", highlight=highlight_from_history(lost)))
    assert graph.nodes["replica/s/Restarting"]["label"] == "Restarting"
    assert graph.nodes["job/s/Running"]["label"] == "Running"
    assert graph.nodes["job/s/Created"]["label"] == "Created\\ncondition: Created\\nentered 1x"
    edges = {(t, h): a for t, h, a in graph.edges}
    restart = edges[("replica/junction/2", "replica/s/Restarting")]
    assert restart["label"] == "Retry" and restart["fontcolor"] == "#a8a8a8"
    # podFailed and podLost share the arrow into Failed; only podLost was taken
    assert edges[("replica/junction/2", "replica/s/Failed")]["label"] == "1x PodLost"
    assert edges[("replica/junction/2", "replica/s/Failed")]["color"] == ON_PATH


def test_a_step_is_credited_to_the_first_transition_that_could_make_it(sample):
    # Running -> Done matches the [Created, Running] transition; Broken comes via the wildcard
    highlight = highlight_from_history(
        [
            {"level": "job", "from": "Created", "to": "Running"},
            {"level": "job", "from": "Running", "to": "Broken", "reason": "DeadlineExceeded"},
        ]
    )
    graph = parse_dot(to_dot(sample, level="job", highlight=highlight))
    edges = {(t, h): a for t, h, a in graph.edges}
    assert edges[("job/any", "job/s/Broken")]["label"] == "1x DeadlineExceeded"
    assert edges[("job/any", "job/s/Broken")]["color"] == ON_PATH


def test_no_history_greys_everything_but_keeps_the_picture(sample):
    graph = parse_dot(to_dot(sample, level="job", highlight=Highlight()))
    assert all(a["color"] == "#c8c8c8" for _, _, a in graph.edges)
    assert graph.nodes["job/s/Created"]["fillcolor"] == "#f6f6f6"


def test_mermaid_shows_the_path_with_classes_and_counts(sample):
    text = to_mermaid(sample, level="replica", highlight=highlight_from_history(HISTORY))
    lines = [line.strip() for line in text.splitlines()]
    assert "replica_0 --> replica_1 : 2x on podRunning" in lines
    assert "replica_1 : entered 2x" in lines
    onpath = next(line for line in lines if line.startswith("class ") and line.endswith(" onpath"))
    assert "replica_1" in onpath.split()[1].split(",")
    assert any(line.startswith("class ") and line.endswith(" offpath") for line in lines)
