"""Mermaid output: a well-formed stateDiagram-v2 with the same states, arrows and words as DOT,
laid out as DOT lays it out: the happy path first, failure ends grouped, junctions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.definition.loader import load_file
from engine.graph.mermaid import escape, to_mermaid
from engine.graph.parts import happy_path
from tests.unit.graph.conftest import REPO, SAMPLE, definition_from

MACHINES = sorted((REPO / "machines").glob("*.yaml"))

_LINE = re.compile(
    r"^(stateDiagram-v2"
    r"|state \"[^\"]*\" as \w+( \{)?"
    r"|state \w+ <<choice>>"
    r"|direction LR"
    r"|\}"
    r"|\w+ : [^\n]+"
    r"|(\[\*\]|\w+) --> (\[\*\]|\w+)( : [^\n]+)?"
    r"|classDef \w+ [\w#:,.\- ]+"
    r"|class [\w,]+ \w+)$"
)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_every_line_is_a_statement_mermaid_knows(sample):
    text = to_mermaid(sample, level="all")
    assert text.startswith("stateDiagram-v2\n")
    bad = [line for line in _lines(text) if not _LINE.match(line)]
    assert bad == []
    assert text.count("{") == text.count("}") == 2  # one composite state per machine


def _ids(lines: list[str]) -> dict[str, str]:
    return {line.split('"')[1]: line.split(" as ")[1].rstrip(" {")
            for line in lines if line.startswith('state "')}


def test_states_start_end_and_arrows(sample):
    lines = _lines(to_mermaid(sample, level="replica"))
    assert 'state "Pending" as replica_0' in lines
    assert "[*] --> replica_0" in lines
    ids = _ids(lines)
    assert f"{ids['Succeeded']} --> [*]" in lines and f"{ids['Failed']} --> [*]" in lines
    assert f"{ids['Pending']} --> {ids['Pending']} : on podMissing" in lines


def test_arrows_from_the_same_states_meet_at_one_junction(sample):
    lines = _lines(to_mermaid(sample, level="replica"))
    ids = _ids(lines)
    # Pending and Running lead to Succeeded, Restarting and Failed: 2 + 3 lines, not 2 x 3
    assert lines.count("state replica_j2 <<choice>>") == 1
    into = [line for line in lines if line.endswith("--> replica_j2")]
    assert into == [f"{ids['Pending']} --> replica_j2", f"{ids['Running']} --> replica_j2"]
    assert [line for line in lines if line.startswith("replica_j2 -->")] == [
        f"replica_j2 --> {ids['Succeeded']} : on podSucceeded",
        f"replica_j2 --> {ids['Restarting']} : Retry",
        f"replica_j2 --> {ids['Failed']} : on podFailed, PodLost",  # same targets: one arrow
    ]


def test_the_happy_path_comes_first_states_and_arrows_in_its_order(sample):
    lines = _lines(to_mermaid(sample, level="job"))
    states = [line.split('"')[1] for line in lines if line.startswith('state "')]
    assert states[:3] == ["Created", "Running", "Done"]
    ids = _ids(lines)
    arrows = [line for line in lines if " --> " in line and "[*]" not in line]
    assert arrows[0].startswith(f"{ids['Created']} --> {ids['Running']} : ")
    assert arrows[1:4] == [f"{ids['Created']} --> job_j2", f"{ids['Running']} --> job_j2",
                           f"job_j2 --> {ids['Done']} : [replicas.all(t,<br>replicas[t]."
                           "succeeded #gt; 0)]"]


def test_failure_ends_are_one_group_side_by_side():
    text = SAMPLE.replace("Failed: {terminal: failure}",
                          "Failed: {terminal: failure}\n      Lost: {terminal: failure}").replace(
        "{from: [Running, Pending], to: Failed, \"on\": podLost, reason: PodLost}",
        "{from: [Running, Pending], to: Lost, \"on\": podLost, reason: PodLost}")
    lines = _lines(to_mermaid(definition_from(text), level="replica"))
    start = lines.index('state "failure ends" as replica_failures {')
    group = lines[start:lines.index("}", start) + 1]
    ids = _ids(lines)
    assert group == ['state "failure ends" as replica_failures {', "direction LR",
                     f'state "Failed" as {ids["Failed"]}', f'state "Lost" as {ids["Lost"]}', "}"]
    # the group says they are ends; only the success end leads to [*]
    assert [line for line in lines if line.endswith("--> [*]")] == [f"{ids['Succeeded']} --> [*]"]
    # with one failure end there is no group
    assert not any("failure ends" in line for line in _lines(to_mermaid(definition_from(SAMPLE))))


def test_long_labels_keep_the_dot_pictures_lines(sample):
    lines = _lines(to_mermaid(sample, level="job"))
    assert ("job_0 --> job_1 : [replicas.all(t,<br>replicas[t].running ==<br>"
            "replicas[t].desired) &&<br>restarts #lt; 100]") in lines


def test_state_kinds_get_their_classes(sample):
    lines = _lines(to_mermaid(sample, level="job"))
    assert "class job_0 initial" in lines
    classes = {line.split()[2]: line.split()[1] for line in lines if line.startswith("class ")}
    success, failure = classes["success"], classes["failure"]
    assert success != failure
    assert {"classDef initial", "classDef success", "classDef failure"} <= {
        " ".join(line.split()[:2]) for line in lines
    }


def test_wildcard_and_descriptions(sample):
    lines = _lines(to_mermaid(sample, level="job"))
    assert 'state "any non-terminal state" as job_4' in lines
    assert "job_4 --> job_3 : DeadlineExceeded" in lines
    assert "job_1 : condition#58; Running" in lines


def test_syntax_characters_in_labels_become_entities():
    assert escape('a#b;c"d<e>{f}:') == "a#35;b#59;c#quot;d#lt;e#gt;#123;f#125;#58;"
    # a transition with neither reason nor observation is labelled with its guard
    guard = '"replicas.all(t, replicas[t].running == replicas[t].desired) && restarts < 100"'
    text = SAMPLE.replace(guard, '"\'x;y\' != \\"{}\\""')
    mermaid = to_mermaid(definition_from(text), level="job")
    assert "job_0 --> job_1 : ['x#59;y' != #quot;#123;#125;#quot;]" in mermaid


def test_same_bytes_every_time(sample):
    assert to_mermaid(sample) == to_mermaid(definition_from(SAMPLE))


@pytest.mark.parametrize("machine", MACHINES, ids=lambda path: path.name)
@pytest.mark.parametrize("level", ["job", "replica"])
def test_a_shipped_machine_is_mermaid_with_its_happy_path_first(machine: Path, level: str):
    (loaded,) = load_file(machine)
    lines = _lines(to_mermaid(loaded.definition, level=level))
    assert [line for line in lines if not _LINE.match(line)] == []
    # Mermaid reads a `:` ending a label as syntax: every colon in a label is an entity
    assert [line for line in lines if line.count(":") > 1 and not line.startswith("classDef")] == []
    spec = loaded.definition.spec.job if level == "job" else loaded.definition.spec.replica
    happy = list(happy_path(spec))
    declared = [line.split('"')[1] for line in lines if line.startswith('state "')]
    assert declared[:len(happy)] == happy
