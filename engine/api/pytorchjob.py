"""`kubeflow.org/v1` PyTorchJob: a Master and Workers running torch.distributed.

Field names and meanings are Kubeflow's v1 API, so manifests written for
Kubeflow's training operator run unchanged; the engine's PyTorchJob machine
(machines/pytorchjob.yaml) says what happens to them.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from engine.api.base import SpecModel
from engine.api.objects import API_VERSION_DOC, KIND_DOC, JobObject
from engine.api.policies import FAILURE_RULES_DOC, FailureRule
from engine.api.replicas import ReplicaSpec, check_containers
from engine.api.runpolicy import RunPolicy

PyTorchReplicaType = Literal["Master", "Worker"]
MAIN_CONTAINER = "pytorch"

_ONE_MASTER = "Master must have exactly 1 replica"
_ONE_NPROC = "elasticPolicy.nProcPerNode is deprecated: set only spec.nprocPerNode"


class RendezvousConf(SpecModel):
    """One extra rendezvous setting (`key=value` of torchrun's --rdzv-conf)."""

    key: str | None = Field(default=None, description="The setting's name.")
    value: str | None = Field(default=None, description="The setting's value.")


class ElasticPolicy(SpecModel):
    """Elastic training with torchrun: replica bounds, rendezvous and restarts."""

    min_replicas: int | None = Field(
        default=None, ge=0, description="Fewest Workers the job may scale down to."
    )
    max_replicas: int | None = Field(
        default=None, ge=0, description="Most Workers the job may scale up to."
    )
    rdzv_backend: str | None = Field(
        default=None, description="Rendezvous backend: c10d, etcd or etcd-v2."
    )
    rdzv_port: int | None = Field(
        default=None, ge=1, le=65535, description="Port of the rendezvous endpoint."
    )
    rdzv_host: str | None = Field(default=None, description="Host of the rendezvous endpoint.")
    rdzv_id: str | None = Field(default=None, description="Rendezvous id shared by the Workers.")
    rdzv_conf: list[RendezvousConf] | None = Field(
        default=None, description="Extra rendezvous settings."
    )
    standalone: bool | None = Field(
        default=None,
        description="Start a local c10d rendezvous (single node, several workers).",
    )
    n_proc_per_node: int | None = Field(
        default=None,
        ge=1,
        description="Deprecated (as in Kubeflow since v1.7): use spec.nprocPerNode.",
    )
    max_restarts: int | None = Field(
        default=None, ge=0, description="Restarts torchrun allows the worker group."
    )
    metrics: list[dict[str, Any]] | None = Field(
        default=None,
        description=(
            "autoscaling/v2 MetricSpecs for a HorizontalPodAutoscaler of the Workers; "
            "the desired count is the highest any metric asks for."
        ),
    )


class PyTorchJobSpec(SpecModel):
    """The desired state of a PyTorchJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!(has(self.nprocPerNode) && has(self.elasticPolicy) && "
                    "has(self.elasticPolicy.nProcPerNode))",
                    "message": _ONE_NPROC,
                }
            ]
        }
    )

    run_policy: RunPolicy = Field(
        default_factory=RunPolicy,
        description="Clean-up, time limits, retries, scheduling and suspension.",
    )
    elastic_policy: ElasticPolicy | None = Field(
        default=None, description="Elastic training settings; unset for a fixed-size job."
    )
    failure_rules: list[FailureRule] = Field(default_factory=list, description=FAILURE_RULES_DOC)
    pytorch_replica_specs: dict[PyTorchReplicaType, ReplicaSpec] = Field(
        description=(
            "Replica type (Master, Worker) -> its pods. The Master (at most one) has rank 0; "
            "Worker i has rank i+1. Each template needs a container named pytorch."
        ),
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "!has(self.Master) || self.Master.replicas == 1", "message": _ONE_MASTER}
            ]
        },
    )
    nproc_per_node: str | None = Field(
        default=None,
        description="Processes per node: auto, cpu, gpu or a number (torchrun --nproc-per-node).",
    )

    @model_validator(mode="after")
    def _valid_replicas(self) -> Self:
        for replica_type, spec in self.pytorch_replica_specs.items():
            check_containers("pytorchReplicaSpecs", replica_type, spec, MAIN_CONTAINER)
        master = self.pytorch_replica_specs.get("Master")
        if master is not None and master.replicas != 1:
            raise ValueError(_ONE_MASTER)
        return self

    @model_validator(mode="after")
    def _one_nproc(self) -> Self:
        if (
            self.nproc_per_node is not None
            and self.elastic_policy is not None
            and (self.elastic_policy.n_proc_per_node is not None)
        ):
            raise ValueError(_ONE_NPROC)
        return self


class PyTorchJob(JobObject):
    """A PyTorch training job (Kubeflow's kubeflow.org/v1 PyTorchJob)."""

    api_version: Literal["kubeflow.org/v1"] = Field(
        default="kubeflow.org/v1", description=API_VERSION_DOC
    )
    kind: Literal["PyTorchJob"] = Field(default="PyTorchJob", description=KIND_DOC)
    spec: PyTorchJobSpec = Field(description="The desired state of the PyTorchJob.")
