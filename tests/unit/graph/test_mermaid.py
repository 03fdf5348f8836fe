"""Mermaid output: a well-formed stateDiagram-v2 with the same states, arrows and words as DOT."""

from __future__ import annotations

import re

from engine.graph.mermaid import escape, to_mermaid
from tests.unit.graph.conftest import SAMPLE, definition_from

_LINE = re.compile(
    r"^(stateDiagram-v2"
    r"|state \"[^\"]*\" as \w+( \{)?"
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


def test_states_start_end_and_arrows(sample):
    lines = _lines(to_mermaid(sample, level="replica"))
    assert 'state "Pending" as replica_0' in lines
    assert "[*] --> replica_0" in lines
    ids = {
        line.split(" as ")[0].split('"')[1]: line.split(" as ")[1]
        for line in lines
        if line.startswith("state ")
    }
    assert f"{ids['Succeeded']} --> [*]" in lines and f"{ids['Failed']} --> [*]" in lines
    assert f"{ids['Pending']} --> {ids['Pending']} : on podMissing" in lines
    # one arrow per source for a transition from several states
    into_restarting = [line for line in lines if line.endswith(f"--> {ids['Restarting']} : Retry")]
    assert len(into_restarting) == 2
    # transitions between the same states share one arrow (per source)
    into_failed = [line for line in lines if f"--> {ids['Failed']} :" in line]
    assert [line.split(" : ")[1] for line in into_failed] == ["on podFailed, PodLost"] * 2


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
    assert "job_1 : condition: Running" in lines


def test_syntax_characters_in_labels_become_entities():
    assert escape('a#b;c"d<e>{f}') == "a#35;b#59;c#quot;d#lt;e#gt;#123;f#125;"
    # a transition with neither reason nor observation is labelled with its guard
    guard = '"replicas.all(t, replicas[t].running == replicas[t].desired) && restarts < 100"'
    text = SAMPLE.replace(guard, '"\'x;y\' != \\"{}\\""')
    mermaid = to_mermaid(definition_from(text), level="job")
    assert "job_0 --> job_1 : ['x#59;y' != #quot;#123;#125;#quot;]" in mermaid


def test_same_bytes_every_time(sample):
    assert to_mermaid(sample) == to_mermaid(definition_from(SAMPLE))
