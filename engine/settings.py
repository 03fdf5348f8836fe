"""Every knob of the engine, in one documented, immutable place.

Defaults follow the upstream controllers (client-go's rate limiter and leader election, the batch
Job controller's expectations and pod back-off). Nothing here reads the environment unless
`EngineSettings.from_env` is called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

ENV_PREFIX = "JOBMACHINE_"


class EngineSettings(BaseModel):
    """The engine's tunables; build one in the CLI and pass it down explicitly."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    workers: int = Field(default=4, ge=1)
    """Reconciles running at once (`--workers`); one job is never reconciled by two at once."""

    queue_backoff_base_s: float = Field(default=0.005, gt=0)
    """First delay before retrying a key whose reconcile failed; doubles per failure."""

    queue_backoff_cap_s: float = Field(default=1000.0, gt=0)
    """Longest delay between retries of a failing key (client-go's default controller limit)."""

    resync_period_s: float = Field(default=300.0, gt=0)
    """Every job is queued again this often, even without watch events (a safety net)."""

    expectations_ttl_s: float = Field(default=300.0, gt=0)
    """Unmet create/delete expectations are ignored after this long (a lost watch event)."""

    client_qps: float = Field(default=50.0, gt=0)
    """Sustained requests per second to the API server (client-side rate limit)."""

    client_burst: int = Field(default=100, ge=1)
    """Requests allowed in a burst above `client_qps`."""

    event_qps: float = Field(default=50.0, gt=0)
    """Sustained Events per second; a budget apart from `client_qps`, so events never delay
    pods or status writes."""

    event_burst: int = Field(default=100, ge=1)
    """Events allowed in a burst above `event_qps`."""

    lease_name: str = Field(default="jobmachine-leader", min_length=1)
    """Name of the coordination.k8s.io Lease used for leader election."""

    shard_lease_prefix: str = Field(default="jobmachine", min_length=1, max_length=40,
                                    pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Sharded engines name their Leases PREFIX-shard-I and PREFIX-member-HASH."""

    lease_duration_s: float = Field(default=15.0, gt=0)
    """How long a candidate waits after the last renewal before taking the lease over (the
    leader lease and every shard lease)."""

    renew_deadline_s: float = Field(default=10.0, gt=0)
    """The leader stops all work if it could not renew within this long (field notes, story 9)."""

    retry_period_s: float = Field(default=2.0, gt=0)
    """Interval between attempts to acquire or renew the lease."""

    event_aggregation_window_s: float = Field(default=600.0, gt=0)
    """Identical events for one object within this window are aggregated into one (a count)."""

    shutdown_grace_s: float = Field(default=25.0, gt=0)
    """How long stopping may take: reconciles in flight finish, then the events they queued
    are posted (inside a pod's default terminationGracePeriodSeconds of 30 s)."""

    status_last_transitions: int = Field(default=0, ge=0)
    """Most recent state changes a job's status shows (`lastTransitions`); 0 (the default)
    shows none, as the job's Events and conditions say it and the whole path is counted per
    transition in `status.record`."""

    replica_backoff_base_s: float = Field(default=10.0, gt=0)
    """Delay before re-creating a failed replica's pod; doubles per restart."""

    replica_backoff_cap_s: float = Field(default=600.0, gt=0)
    """Longest delay before re-creating a failed replica's pod."""

    system_namespace: str = Field(default="jobmachine-system", min_length=1, max_length=63)
    """The engine's own namespace: it keeps the revisions of every machine there (created if
    missing). In a cluster, the namespace the engine runs in."""

    revision_grace_s: float = Field(default=60.0, ge=0)
    """A machine revision no job runs with and no machine has in force is deleted after this
    long (a job may be recording it at that moment)."""

    gang_scheduler_name: Literal["volcano", "scheduler-plugins"] = "volcano"
    """The PodGroup API gang-scheduled jobs use (`--gang-scheduler-name`), as training-operator's
    flag of that name: Volcano's (scheduling.volcano.sh) or scheduler-plugins'
    (scheduling.x-k8s.io)."""

    gang_scheduling: bool = False
    """Gang schedule every job (`--gang-scheduling`), not only those whose run policy has a
    schedulingPolicy."""

    log_format: Literal["text", "json"] = "text"
    """`text` for people, `json` (one flat object per line) for log collectors."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """The least severe log lines written; DEBUG adds detail for troubleshooting (the
    engine's lists, watches and writes)."""

    stand_in_for_built_ins: bool = False
    """Run jobs of built-in kinds (batch/v1 Job) that leave `managedBy` unset, as the
    cluster's own controller would. Off in a cluster, where kube-controller-manager's job
    controller runs those and the engine takes only Jobs whose `spec.managedBy` is
    jobmachine.dev/job-controller; on under `jobmachine up`, whose embedded cluster has
    no such controller."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.queue_backoff_base_s > self.queue_backoff_cap_s:
            raise ValueError("queue_backoff_base_s must not exceed queue_backoff_cap_s")
        if self.replica_backoff_base_s > self.replica_backoff_cap_s:
            raise ValueError("replica_backoff_base_s must not exceed replica_backoff_cap_s")
        if not self.lease_duration_s > self.renew_deadline_s > self.retry_period_s:
            raise ValueError(
                "leader election needs lease_duration_s > renew_deadline_s > retry_period_s"
            )
        return self

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Self:
        """Settings from `JOBMACHINE_<FIELD>` variables (e.g. `JOBMACHINE_WORKERS=8`).

        `environ` defaults to the process environment; `overrides` (e.g. parsed flags) win over
        it. Variables with the prefix that name no field are ignored (other parts of jobmachine
        may use the prefix).
        """
        env = os.environ if environ is None else environ
        values: dict[str, object] = {
            name: env[ENV_PREFIX + name.upper()]
            for name in cls.model_fields
            if ENV_PREFIX + name.upper() in env
        }
        values.update(overrides)
        return cls.model_validate(values)
