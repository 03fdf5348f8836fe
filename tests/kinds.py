"""The shipped job kinds as the tests reach them: resources from crds/, machines from machines/.

Job kinds are data, so the engine has no list of them; tests name the kinds
they exercise, reading the same files `jobmachine up` installs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from engine.controller.machines.install import crd_resources
from engine.controller.machines.registry import Assignment
from engine.definition import CompiledDefinition, load_definitions
from engine.kube.resources import Resource

REPO = Path(__file__).resolve().parents[1]
CRDS = REPO / "crds"
KINDS_DIR = REPO / "kinds"
MACHINES = REPO / "machines"

NAMED_KINDS = frozenset({"TrainingRuntime", "ClusterTrainingRuntime"})
"""Kinds the shipped CRDs serve that are no job kind: objects jobs name (governs.references)."""
KINDS: dict[str, Resource] = {r.kind: r for r in crd_resources(CRDS)
                              if r.namespaced and r.kind not in NAMED_KINDS}
"""Kind -> resource of every shipped job kind."""
NAMED: dict[str, Resource] = {r.kind: r for r in crd_resources(CRDS) if r.kind in NAMED_KINDS}
"""Kind -> resource of the kinds jobs name (Kubeflow Trainer's runtimes)."""
PYTORCHJOBS = KINDS["PyTorchJob"]
TFJOBS = KINDS["TFJob"]
MACHINEJOBS = KINDS["MachineJob"]


@cache
def shipped_definitions() -> dict[str, CompiledDefinition]:
    """Kind -> the shipped machine that governs it, compiled (once per test session)."""
    return {d.governs.kind: d for d in load_definitions([MACHINES])}


def assignment(definition: CompiledDefinition, revision: str = "test-revision") -> Assignment:
    """The engine's answer for a job that runs with `definition` (as one revision of it)."""
    return Assignment(definition.name, revision, definition)
