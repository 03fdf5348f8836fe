"""`jobmachine.dev/v1alpha1` MachineJob: a job of any shape, driven by a named StateMachine.

Where PyTorchJob and TFJob fix their replica types and rules, a MachineJob names
its machine and carries the general forms: replica types of any name, a success
policy over some of them, and ordered failure rules.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter
from typing import Annotated, Literal, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from engine.api.base import SpecModel
from engine.api.objects import API_VERSION_DOC, KIND_DOC, JobObject
from engine.api.policies import FAILURE_RULES_DOC, FailureRule, SuccessPolicy
from engine.api.replicas import ReplicaSpec, check_containers
from engine.api.runpolicy import RunPolicy

ReplicaTypeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9]{0,30}$")]

_KNOWN_TYPES = "replicaTypes must name replica types of spec.replicaSpecs"
_KNOWN_DEPENDENCIES = (
    "dependsOn must name other replica types of spec.replicaSpecs (not the type itself)"
)


class Dependency(SpecModel):
    """A replica type whose pods must be up before this type's pods are created."""

    replica_type: ReplicaTypeName = Field(description="The replica type to wait for.")
    condition: Literal["Running", "Ready"] = Field(
        default="Running",
        description=(
            "Running: every replica of that type runs (or has succeeded); Ready: every replica "
            "of that type runs with its Ready condition True (readiness probes passed)."
        ),
    )


class MachineReplicaSpec(ReplicaSpec):
    """A MachineJob replica type: the common replica spec plus its start-up dependencies."""

    depends_on: list[Dependency] = Field(
        default_factory=list,
        description=(
            "Replica types that must be Running (or Ready) before pods of this type are "
            "created, as Volcano's dependsOn; a chain of them gives JobSet's InOrder start-up."
        ),
    )


class MachineJobSpec(SpecModel):
    """The desired state of a MachineJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.successPolicy) || !has(self.successPolicy.replicaTypes) || "
                    "self.successPolicy.replicaTypes.all(t, t in self.replicaSpecs)",
                    "message": f"successPolicy.{_KNOWN_TYPES}",
                    "fieldPath": ".successPolicy.replicaTypes",
                },
                {
                    "rule": "!has(self.failureRules) || self.failureRules.all(r, "
                    "!has(r.replicaTypes) || r.replicaTypes.all(t, t in self.replicaSpecs))",
                    "message": f"failureRules[*].{_KNOWN_TYPES}",
                    "fieldPath": ".failureRules",
                },
                {
                    "rule": "self.replicaSpecs.all(t, !has(self.replicaSpecs[t].dependsOn) || "
                    "self.replicaSpecs[t].dependsOn.all(d, d.replicaType != t && "
                    "d.replicaType in self.replicaSpecs))",
                    "message": f"replicaSpecs[*].{_KNOWN_DEPENDENCIES}",
                    "fieldPath": ".replicaSpecs",
                },
            ]
        }
    )

    machine: str = Field(
        default="job",
        min_length=1,
        max_length=253,
        description="The name of the StateMachine that drives this job.",
    )
    replica_specs: dict[ReplicaTypeName, MachineReplicaSpec] = Field(
        min_length=1,
        description=(
            "Replica type (letters and digits, e.g. Launcher, Worker) -> its pods. Each "
            "template needs at least one container, and every container an image."
        ),
    )
    run_policy: RunPolicy = Field(
        default_factory=RunPolicy,
        description="Clean-up, time limits, retries, scheduling and suspension.",
    )
    success_policy: SuccessPolicy | None = Field(
        default=None,
        description="When the job succeeds; unset: as the machine's own transitions say.",
    )
    failure_rules: list[FailureRule] = Field(default_factory=list, description=FAILURE_RULES_DOC)

    @model_validator(mode="after")
    def _valid_replicas(self) -> Self:
        for replica_type, spec in self.replica_specs.items():
            check_containers("replicaSpecs", replica_type, spec, None)
        named = list(self.success_policy.replica_types if self.success_policy else [])
        named += [t for rule in self.failure_rules for t in rule.replica_types]
        unknown = sorted(set(named) - set(self.replica_specs))
        if unknown:
            raise ValueError(f"{_KNOWN_TYPES}; unknown: {', '.join(unknown)}")
        self._check_dependencies()
        return self

    def _check_dependencies(self) -> None:
        """Dependencies name other types of this job and form no cycle (it would never start)."""
        waits = {t: [d.replica_type for d in s.depends_on] for t, s in self.replica_specs.items()}
        for replica_type, others in waits.items():
            wrong = sorted({o for o in others if o == replica_type or o not in waits})
            if wrong:
                raise ValueError(
                    f"replicaSpecs.{replica_type}.{_KNOWN_DEPENDENCIES}; wrong: {', '.join(wrong)}"
                )
        try:
            tuple(TopologicalSorter(waits).static_order())
        except CycleError as exc:
            cycle = " -> ".join(reversed(exc.args[1]))
            raise ValueError(f"replicaSpecs: dependsOn forms a cycle: {cycle}") from exc


class MachineJob(JobObject):
    """A job whose lifecycle is the StateMachine it names (spec.machine)."""

    api_version: Literal["jobmachine.dev/v1alpha1"] = Field(
        default="jobmachine.dev/v1alpha1", description=API_VERSION_DOC
    )
    kind: Literal["MachineJob"] = Field(default="MachineJob", description=KIND_DOC)
    spec: MachineJobSpec = Field(description="The desired state of the MachineJob.")
