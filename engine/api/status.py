"""The status of every job kind: Kubeflow's JobStatus plus the engine's own record.

Kubeflow's fields (conditions, replicaStatuses, times) keep their names so
Kubeflow's SDK and dashboards read our jobs. Beside them: what users read of the
engine's record (phase, state, restarts, the last transitions), and the rest of
it as one compact text, so `kubectl describe` stays short; the status node
preserves unknown fields so that record can grow without a CRD change.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from engine.api.base import StatusModel
from engine.api.replicas import ReplicaStatus

ConditionStatus = Literal["True", "False", "Unknown"]


class JobCondition(StatusModel):
    """One condition of a job (Created, Running, Restarting, Suspended, Succeeded, Failed...)."""

    type: str = Field(description="The condition's type.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str | None = Field(
        default=None, description="CamelCase reason of the last change, e.g. PyTorchJobRunning."
    )
    message: str | None = Field(
        default=None, description="Human-readable detail of the last change."
    )
    last_update_time: datetime | None = Field(
        default=None, description="When the condition last changed in any way."
    )
    last_transition_time: datetime | None = Field(
        default=None, description="When the condition's status last changed."
    )


class JobStatus(StatusModel):
    """What the engine observed and decided; written only by the engine (status subresource)."""

    model_config = ConfigDict(extra="allow")

    conditions: list[JobCondition] = Field(
        default_factory=list,
        description="Conditions, the most recently changed last (Kubeflow reads the last one).",
    )
    replica_statuses: dict[str, ReplicaStatus] = Field(
        default_factory=dict, description="Pod counts per replica type."
    )
    start_time: datetime | None = Field(
        default=None, description="When the engine first acknowledged the job (RFC 3339, UTC)."
    )
    completion_time: datetime | None = Field(
        default=None, description="When the job finished (RFC 3339, UTC)."
    )
    last_reconcile_time: datetime | None = Field(
        default=None, description="When the engine last reconciled the job (RFC 3339, UTC)."
    )
    phase: str | None = Field(
        default=None, description="The phase word of the job machine's current state."
    )
    state: str | None = Field(default=None, description="The job machine's current state.")
    restarts: int | None = Field(
        default=None, ge=0, description="Replica restarts counted against runPolicy.backoffLimit."
    )
    restart_attempt: int | None = Field(
        default=None,
        ge=0,
        description=(
            "The job's restart attempt: 0 at first, one more for each restart of the whole job "
            "(a RestartJob failure rule). Pods carry it in the jobmachine.dev/restart-attempt "
            "label; pods of older attempts are deleted."
        ),
    )
    last_transitions: list[str] | None = Field(
        default=None,
        description=(
            "The most recent state changes, oldest first, one line each: "
            "`TIME WHO: FROM -> TO (REASON)`, WHO being `job` or a replica such as Worker-1."
        ),
    )
    record: str | None = Field(
        default=None,
        description=(
            "The engine's bookkeeping as compact JSON: every replica's state, restarts per "
            "index, timers, the transition counts and the bounded history that "
            "`jobmachine graph --job` draws. Written by the engine only; not an API."
        ),
    )
