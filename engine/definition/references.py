"""Which objects a job names through its machine's governs.references, worked out from the job.

Pure: the machine's expressions say, for one job, the apiVersion, kind, name and scope of
each object it reads (a TrainJob's runtime); the engine finds and watches them
(controller/runtime/references.py) and hands them to CEL as `references.<name>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.definition.cel import Activation, CelEvaluationError
from engine.definition.compiled import CompiledDefinition
from engine.definition.vocabulary import job_value

SCOPES = ("Namespaced", "Cluster")
"""What a reference's `scope` may give: the object is in the job's namespace, or in none."""


@dataclass(frozen=True)
class ReferenceTarget:
    """One object a job names: where the engine looks for it."""

    api_version: str
    kind: str
    namespace: str | None
    """The job's namespace, or None for a cluster-scoped object."""
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name} ({self.api_version})"


def reference_targets(
    definition: CompiledDefinition, job: Mapping[str, Any]
) -> dict[str, ReferenceTarget | str]:
    """Each reference of the machine, for `job`: its target, or why it has none (an
    expression that cannot be computed or gives an empty or wrong value)."""
    if not definition.references:
        return {}
    activation = Activation({"job": job_value(job)})
    found: dict[str, ReferenceTarget | str] = {}
    for name, expressions in definition.references.items():
        values: dict[str, str] = {}
        problem = ""
        for key, expression in expressions.items():
            try:
                value = expression.evaluate(activation)
            except CelEvaluationError as exc:
                problem = f"references.{name}.{key}: {exc}"
                break
            if not isinstance(value, str) or not value:
                problem = f"references.{name}.{key} gave {value!r}, not a non-empty string"
                break
            values[key] = value
        if not problem and values["scope"] not in SCOPES:
            problem = (f"references.{name}.scope gave {values['scope']!r}, not "
                       f"{' or '.join(SCOPES)}")
        found[name] = problem or ReferenceTarget(
            values["apiVersion"], values["kind"],
            None if values["scope"] == "Cluster" else job["metadata"].get("namespace"),
            values["name"])
    return found
