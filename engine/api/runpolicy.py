"""`runPolicy`: how long a job may run, how often it may restart, what is left behind.

The field names and meanings are Kubeflow's (`kubeflow.org/v1` RunPolicy), so a
PyTorchJob or TFJob written for Kubeflow's training operator means the same here;
MachineJob carries the same block.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.api.base import SpecModel

CleanPodPolicy = Literal["All", "Running", "None"]

MANAGED_BY_JOBMACHINE = "jobmachine.dev/job-controller"


class SchedulingPolicy(SpecModel):
    """Gang-scheduling hints for a batch scheduler (Volcano, scheduler-plugins), as in Kubeflow."""

    min_available: int | None = Field(
        default=None,
        ge=0,
        description="Pods that must be schedulable together before any of them starts.",
    )
    queue: str | None = Field(default=None, description="The scheduler queue the job's pods join.")
    min_resources: dict[str, int | str] | None = Field(
        default=None,
        description="Resources (name -> quantity) that must be free before the gang starts.",
    )
    priority_class: str | None = Field(
        default=None, description="The PriorityClass of the job's pod group."
    )
    schedule_timeout_seconds: int | None = Field(
        default=None,
        ge=0,
        description="How long the gang may wait to be scheduled before the scheduler gives up.",
    )


class RunPolicy(SpecModel):
    """Runtime policies of the job: clean-up, time limits, retries, scheduling, suspension."""

    clean_pod_policy: CleanPodPolicy | None = Field(
        default=None,
        description=(
            "Which pods to delete when the job finishes: All, Running (those still running), "
            "or None. Unset: the machine definition's default (None for the Kubeflow kinds)."
        ),
    )
    ttl_seconds_after_finished: int | None = Field(
        default=None,
        ge=0,
        description="Delete the job this many seconds after it finished; unset keeps it forever.",
    )
    active_deadline_seconds: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Seconds, counted from status.startTime, the job may be active before it is "
            "failed with reason DeadlineExceeded."
        ),
    )
    backoff_limit: int | None = Field(
        default=None,
        ge=0,
        description="Restarts allowed before the job fails with reason BackoffLimitExceeded.",
    )
    pending_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        description=(
            "A jobmachine extension: seconds a replica may stay Pending (pod not created, not "
            "scheduled or not started) before the job fails with reason PendingTimeout. The "
            "timer restarts with each new pod and on resume; unset: no limit."
        ),
    )
    recreation_backoff: bool | None = Field(
        default=None,
        description=(
            "A jobmachine extension: whether a replica whose pod failed waits the engine's "
            "re-creation back-off (10 s, doubling with each failure in a row, at most 10 min) "
            "before its pod is created again. false: the first failure in a row is created "
            "again at once, as Kubeflow's training operator does, and the back-off starts at "
            "the second (a crash loop does not spin). Unset: the machine's default: false for "
            "the Kubeflow kinds, true for MachineJob and batch Jobs."
        ),
    )
    scheduling_policy: SchedulingPolicy | None = Field(
        default=None, description="Gang-scheduling hints passed to a batch scheduler."
    )
    suspend: bool = Field(
        default=False,
        description=(
            "While true no pods run: active pods are deleted and none are created; setting it "
            "back to false starts the replicas again without counting restarts."
        ),
    )
    managed_by: str | None = Field(
        default=None,
        max_length=63,
        description=(
            "The controller that reconciles this job. jobmachine reconciles jobs that leave "
            f"it unset or set it to {MANAGED_BY_JOBMACHINE!r} (or, for the Kubeflow kinds, "
            "kubeflow.org/training-operator, the controller they are a drop-in for) and leaves "
            "every other job to the controller named (e.g. kueue.x-k8s.io/multikueue). Immutable."
        ),
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "managedBy is immutable"}
            ]
        },
    )
