"""Example jobs, and invalid variants of them that the models and the CRDs must both reject."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).parent / "manifests"
EXAMPLES = {
    "PyTorchJob": "pytorch-simple.yaml",
    "TFJob": "tf-dist-mnist.yaml",
    "MachineJob": "machinejob.yaml",
}


def example(kind: str) -> dict[str, Any]:
    """A fresh copy of the example manifest of `kind`."""
    loaded: dict[str, Any] = yaml.safe_load((MANIFESTS / EXAMPLES[kind]).read_text())
    return loaded


def changed(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `doc` with the dotted `path` set to `value` (intermediate maps created)."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return out


@dataclass(frozen=True)
class Invalid:
    """A manifest that must be rejected, and words the rejection must contain."""

    id: str
    kind: str
    path: str
    value: Any
    message: str
    server_too: bool = True  # False: the template is free-form, only the model can tell
    also: tuple[tuple[str, Any], ...] = ()  # further (path, value) changes
    engine_message: str | None = None  # the engine's words, where they are not the server's

    def document(self) -> dict[str, Any]:
        doc = changed(example(self.kind), self.path, self.value)
        for path, value in self.also:
            doc = changed(doc, path, value)
        return doc


_PT = "spec.pytorchReplicaSpecs"
_TF = "spec.tfReplicaSpecs"
_RULES = "spec.failureRules"
_POD = {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}
_TF_POD = {"spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}

INVALID = [
    Invalid("negative-replicas", "PyTorchJob", f"{_PT}.Worker.replicas", -1, "greater than"),
    Invalid(
        "unknown-restart-policy",
        "PyTorchJob",
        f"{_PT}.Worker.restartPolicy",
        "Sometimes",
        "Sometimes",
    ),
    Invalid("unknown-pytorch-type", "PyTorchJob", f"{_PT}.Chief", {"template": _POD}, "Chief"),
    Invalid("two-masters", "PyTorchJob", f"{_PT}.Master.replicas", 2, "exactly 1 replica"),
    Invalid(
        "nproc-twice",
        "PyTorchJob",
        "spec.elasticPolicy",
        {"nProcPerNode": 2},
        "nProcPerNode is deprecated",
        also=(("spec.nprocPerNode", "2"),),
    ),
    Invalid("bad-clean-pod-policy", "PyTorchJob", "spec.runPolicy.cleanPodPolicy", "Some", "Some"),
    Invalid("negative-backoff", "TFJob", "spec.runPolicy.backoffLimit", -1, "greater than"),
    Invalid("zero-deadline", "TFJob", "spec.runPolicy.activeDeadlineSeconds", 0, "greater than"),
    Invalid("long-managed-by", "TFJob", "spec.runPolicy.managedBy", "x" * 64, "63"),
    Invalid("job-name", "TFJob", "metadata.name", "Dist_MNIST", "DNS-1035"),
    Invalid("unknown-tf-type", "TFJob", f"{_TF}.Launcher", {"template": _POD}, "Launcher"),
    Invalid(
        "chief-and-master",
        "TFJob",
        f"{_TF}.Chief",
        {"template": _TF_POD},
        "at most one Chief or Master",
        also=((f"{_TF}.Master", {"template": _TF_POD}),),
    ),
    Invalid("tf-success-policy", "TFJob", "spec.successPolicy", "AnyWorker", "AnyWorker",
            engine_message='successPolicy must be "" or AllWorkers'),
    Invalid("no-replica-types", "MachineJob", "spec.replicaSpecs", {}, "at least 1"),
    Invalid("replica-type-name", "MachineJob", "spec.replicaSpecs.bad-name", {}, "match"),
    Invalid(
        "unknown-action", "MachineJob", _RULES, [{"action": "Retry", "onReasons": ["x"]}], "Retry"
    ),
    Invalid(
        "two-matches",
        "MachineJob",
        _RULES,
        [{"action": "FailJob", "onReasons": ["x"], "onPodConditions": [{"type": "Ready"}]}],
        "exactly one of",
    ),
    Invalid("no-match", "MachineJob", _RULES, [{"action": "FailJob"}], "exactly one of"),
    Invalid(
        "exit-code-zero-in",
        "MachineJob",
        _RULES,
        [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 1]}}],
        "exit code 0",
    ),
    Invalid(
        "exit-code-256",
        "MachineJob",
        _RULES,
        [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [256]}}],
        "less than or equal",
    ),
    Invalid(
        "exit-code-twice",
        "MachineJob",
        _RULES,
        [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3, 3]}}],
        "Duplicate value",
    ),
    Invalid(
        "rule-unknown-type",
        "MachineJob",
        _RULES,
        [{"action": "FailJob", "replicaTypes": ["Chief"], "onReasons": ["Evicted"]}],
        "replicaTypes must name replica types",
    ),
    Invalid(
        "success-unknown-type",
        "MachineJob",
        "spec.successPolicy",
        {"replicaTypes": ["Chief"]},
        "replicaTypes must name replica types",
    ),
    Invalid(
        "count-without-any",
        "MachineJob",
        "spec.successPolicy",
        {"mode": "All", "count": 2},
        "count applies only to mode Any",
    ),
    Invalid(
        "no-pytorch-container",
        "PyTorchJob",
        f"{_PT}.Worker.template",
        {"spec": {"containers": [{"name": "main", "image": "x"}]}},
        "named 'pytorch'",
        server_too=False,
    ),
    Invalid(
        "no-image",
        "TFJob",
        f"{_TF}.PS.template",
        {"spec": {"containers": [{"name": "tensorflow"}]}},
        "image",
        server_too=False,
    ),
    Invalid(
        "no-containers",
        "MachineJob",
        "spec.replicaSpecs.Worker.template",
        {},
        "no containers",
        server_too=False,
    ),
]
