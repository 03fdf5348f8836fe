"""`kubeflow.org/v1` TFJob: TensorFlow's Chief, parameter servers, Workers and Evaluator.

Field names and meanings are Kubeflow's v1 API; the engine's TFJob machine says
what happens to the replicas.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from engine.api.base import SpecModel
from engine.api.objects import API_VERSION_DOC, KIND_DOC, JobObject
from engine.api.policies import FAILURE_RULES_DOC, FailureRule
from engine.api.replicas import ReplicaSpec, check_containers
from engine.api.runpolicy import RunPolicy

TFReplicaType = Literal["Chief", "PS", "Worker", "Evaluator", "Master"]
MAIN_CONTAINER = "tensorflow"

_ONE_CHIEF = "at most one Chief or Master replica (they are the same role)"


class TFJobSpec(SpecModel):
    """The desired state of a TFJob."""

    run_policy: RunPolicy = Field(
        default_factory=RunPolicy,
        description="Clean-up, time limits, retries, scheduling and suspension.",
    )
    failure_rules: list[FailureRule] = Field(default_factory=list, description=FAILURE_RULES_DOC)
    success_policy: Literal["", "AllWorkers"] | None = Field(
        default=None,
        description=(
            'When the job succeeds: "" (the Chief, or Worker 0 without one, succeeded) or '
            "AllWorkers (every Worker succeeded)."
        ),
    )
    tf_replica_specs: dict[TFReplicaType, ReplicaSpec] = Field(
        description=(
            "Replica type (Chief, PS, Worker, Evaluator, Master) -> its pods; Master is the "
            "older name of Chief. Each template needs a container named tensorflow."
        ),
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.Chief) ? self.Chief.replicas : 0) + "
                    "(has(self.Master) ? self.Master.replicas : 0) <= 1",
                    "message": _ONE_CHIEF,
                }
            ]
        },
    )
    enable_dynamic_worker: bool = Field(
        default=False,
        description="Workers may come and go while the job runs (TF_CONFIG lists no Workers).",
    )

    @model_validator(mode="after")
    def _valid_replicas(self) -> Self:
        for replica_type, spec in self.tf_replica_specs.items():
            check_containers("tfReplicaSpecs", replica_type, spec, MAIN_CONTAINER)
        chiefs = [self.tf_replica_specs.get(name) for name in ("Chief", "Master")]
        if sum(spec.replicas for spec in chiefs if spec is not None) > 1:
            raise ValueError(_ONE_CHIEF)
        return self


class TFJob(JobObject):
    """A TensorFlow training job (Kubeflow's kubeflow.org/v1 TFJob)."""

    api_version: Literal["kubeflow.org/v1"] = Field(
        default="kubeflow.org/v1", description=API_VERSION_DOC
    )
    kind: Literal["TFJob"] = Field(default="TFJob", description=KIND_DOC)
    spec: TFJobSpec = Field(description="The desired state of the TFJob.")
