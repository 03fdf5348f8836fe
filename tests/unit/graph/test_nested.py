"""A job's path drawn with its children's: a cluster per child with its own machine and path,
linked from the parent's state in which it was made, nested as deep as the children go."""

from __future__ import annotations

import pytest

from engine.definition.loader import load_file
from engine.definition.schema import MachineDefinition
from engine.graph.dot import to_dot
from engine.graph.nested import JobPath, nested_to_dot
from engine.graph.path import highlight_from_history
from engine.graph.render import RenderError, render_definition, render_job_tree
from tests.unit.graph.conftest import REPO, parse_dot


def machine(name: str) -> MachineDefinition:
    (loaded,) = load_file(REPO / "machines" / f"{name}.yaml")
    return loaded.definition


def went(*steps: tuple[str, str | None, str, str]) -> list[dict[str, str | None]]:
    """History entries: (level, from, to, reason)."""
    return [{"level": level, "from": source, "to": target, "reason": reason}
            for level, source, target, reason in steps]


JOB_DONE = highlight_from_history(went(
    ("job", None, "Active", "Active"),
    ("job", "Active", "Succeeding", "CompletionsReached"),
    ("job", "Succeeding", "Complete", "Completed"),
    ("replica", None, "Pending", "Pending"),
    ("replica", "Pending", "Running", "Running"),
    ("replica", "Running", "Succeeded", "Succeeded")))
SET_DONE = highlight_from_history(went(
    ("job", None, "Running", "Running"),
    ("job", "Running", "Completed", "AllJobsCompleted")))


def jobset_path(*jobs: str) -> JobPath:
    children = tuple(JobPath(f"Job default/pair-{made_by}", machine("batch-job"), JOB_DONE,
                             created_in="Running", made_by=made_by) for made_by in jobs)
    return JobPath("JobSet default/pair", machine("jobset"), SET_DONE, children=children)


def test_each_child_is_a_cluster_of_its_own_machine_linked_from_the_state_it_was_made_in(
) -> None:
    dot = nested_to_dot(jobset_path("workers-0", "driver-0"))

    assert '  graph [compound="true", fontsize="11", ' in dot
    assert '  subgraph "cluster_child0:" {' in dot
    assert ('    graph [color="#6b7280", fontsize="13", label="Job default/pair-workers-0 '
            '(machine batch-job)", labeljust="l", labelloc="t", style="dashed"]') in dot
    assert ('  "job/s/Running" -> "child0:job/start" [arrowhead="vee", color="#6b7280", '
            'fontcolor="#4b5563", fontsize="10", label="workers-0 makes it", '
            'lhead="cluster_child0:", style="dashed"]') in dot
    assert '"child1:job/start" [arrowhead="vee"' in dot
    graph = parse_dot(dot)  # Graphviz reads it: every id distinct, each cluster its own
    assert graph.clusters == [
        "cluster_job", "cluster_replica", "cluster_child0:", "cluster_child0:job",
        "cluster_child0:replica", "cluster_child1:", "cluster_child1:job",
        "cluster_child1:replica"]
    # The child's own path is highlighted on its own machine; the parent's on its own.
    assert graph.nodes["child0:job/s/Complete"]["penwidth"] == "2.5"
    assert graph.nodes["child0:job/s/Failed"]["penwidth"] == "1"
    assert graph.nodes["job/s/Completed"]["penwidth"] == "2.5"
    assert graph.nodes["job/s/Failed"]["penwidth"] == "1"


def test_the_parent_is_drawn_as_graph_job_draws_it_alone() -> None:
    """Nested pictures add clusters and links; the parent's own statements are unchanged."""
    alone = to_dot(machine("jobset"), highlight=SET_DONE).splitlines()[:-1]  # without "}"
    nested = nested_to_dot(jobset_path("workers-0")).splitlines()
    assert [line for line in alone if "graph [" not in line] == \
        [line for line in nested[:len(alone)] if "graph [" not in line]


def test_grandchildren_nest_under_their_parent_with_ids_of_their_path() -> None:
    jobset = jobset_path("node-0")
    trainjob = JobPath("TrainJob default/train", machine("trainjob"), None, children=(
        JobPath("JobSet default/train", jobset.definition, SET_DONE, created_in="Running",
                made_by="trainer-0", children=jobset.children),))

    dot = nested_to_dot(trainjob, level="job")

    assert ('  "child0:job/s/Running" -> "child0:child0:job/start" [arrowhead="vee", '
            'color="#6b7280", fontcolor="#4b5563", fontsize="10", label="node-0 makes it", '
            'lhead="cluster_child0:child0:", style="dashed"]') in dot
    graph = parse_dot(dot)
    assert graph.clusters == ["cluster_child0:", "cluster_child0:child0:"]
    assert graph.nodes["child0:child0:job/s/Complete"]["penwidth"] == "2.5"


def test_a_child_made_in_a_state_not_known_is_linked_from_the_parents_start() -> None:
    jobset = jobset_path("workers-0")
    child = jobset.children[0]
    unknown = JobPath(jobset.title, jobset.definition, SET_DONE, children=(
        JobPath(child.title, child.definition, child.highlight, created_in=None,
                made_by="workers-0"),))
    assert '  "job/start" -> "child0:job/start" [arrowhead="vee"' in nested_to_dot(unknown)


def test_a_job_without_children_renders_as_before_and_mermaid_refuses_children() -> None:
    alone = JobPath("JobSet default/pair", machine("jobset"), SET_DONE)
    assert render_job_tree(alone, fmt="mermaid") == render_definition(
        alone.definition, fmt="mermaid", highlight=SET_DONE)
    with pytest.raises(RenderError, match="is a Graphviz picture: dot, svg or png, not mermaid"):
        render_job_tree(jobset_path("workers-0"), fmt="mermaid")
    assert render_job_tree(jobset_path("workers-0"), fmt="svg").startswith(b"<?xml")
