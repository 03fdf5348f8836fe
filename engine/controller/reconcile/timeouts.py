"""When to look at a job again: its deadline, its state's timeout (from the record's `since`),
replica timers, back-offs and requeue delays.

The reconcile asks whether `timedOut` holds now and when to look again; the
simulated world asks the same questions on its fake clock, so both are here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from loguru import logger

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.jobspec import JobSpecView
from engine.controller.reconcile.observe import PodFacts, deadline_of
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import Surroundings, common_variables, replica_summary
from engine.definition import CompiledDefinition, requeue_after, state_timeout
from engine.definition.cel import CelEvaluationError
from engine.definition.vocabulary import job_value
from engine.kube.timestamps import parse_time


def state_timeout_at(
    definition: CompiledDefinition, record: MachineRecord, variables: Mapping[str, Any]
) -> datetime | None:
    """When the job's stay in its state times out (from the record's `since`: survives restarts)."""
    if record.state is None or record.state_since is None:
        return None
    try:
        seconds = state_timeout(definition.job, record.state, variables)
    except CelEvaluationError as exc:
        logger.warning(f"timeout of job state {record.state}: {exc}")
        return None
    return None if seconds is None else parse_time(record.state_since) + timedelta(seconds=seconds)


def state_timed_out(
    definition: CompiledDefinition,
    job: Mapping[str, Any],
    *,
    spec: JobSpecView,
    record: MachineRecord,
    facts: Mapping[ReplicaId, PodFacts],
    surroundings: Surroundings,
    now: datetime,
) -> bool:
    """Whether the job has been in its state past the state's timeout (`timedOut` holds)."""
    if record.state is None or not definition.job.states[record.state].has_timeout:
        return False
    summary = replica_summary(spec, record, facts, definition.replica)
    variables = common_variables(job_value(job), spec, record, summary, surroundings)
    timeout_at = state_timeout_at(definition, record, variables)
    return timeout_at is not None and now >= timeout_at


@dataclass(frozen=True)
class NextLook:
    """When the engine must look at a job that has not ended again, unless told sooner."""

    wake_ups: Mapping[str, datetime]
    """By purpose (deadline, timeout, replica-timeout): moments still to come. One that
    has passed is not asked for: the pass that saw it already acted on it, and asking
    again would wake the job at once, in a loop, until it leaves its state."""
    delays: Sequence[float]
    """Seconds after which to look again: back-offs, blocked actions, the state's requeue."""


def next_look(
    definition: CompiledDefinition,
    spec: JobSpecView,
    status: Mapping[str, Any],
    decision: Decision,
    *,
    wait_s: Sequence[float],
    now: datetime,
) -> NextLook:
    """The wake-ups and delays of a job after a pass (the job's state is not terminal)."""
    wake_ups = {
        "deadline": deadline_of(spec, status.get("startTime")),
        "timeout": state_timeout_at(definition, decision.record, decision.variables),
    }
    future = {purpose: when for purpose, when in wake_ups.items()
              if when is not None and when > now}
    if decision.timer_due is not None:
        future["replica-timeout"] = decision.timer_due
    delays = list(wait_s)
    state = decision.record.state
    if state is not None:
        delay = requeue_after(definition.job, state, decision.variables)
        if delay is not None:
            delays.append(delay)
    return NextLook(future, delays)
