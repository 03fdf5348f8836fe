"""The chaos run's verdict: what must hold of every job, whatever was done to the cluster.

Each check reads the observer's facts (and the plan of each job) and returns
violations; none of them trusts the engine's own account where the API server's
can be read instead:

- `terminal-state`: every job ends as its scenario says (a job that lost pods
  with its node may end either way: whether the engine saw such a pod fail or
  saw it deleted first decides, as on a real cluster);
- `restarts-exact`: `status.restarts` is the scripted count for an undisturbed
  job, and never goes down (no restart counted twice or forgotten across
  engine kills);
- `one-pod-per-index`: no two pods of one replica index existed at once;
- `no-pod-after-end`: no pod was created once its job was ending, ended or
  being deleted;
- `owned`: every pod and service is controlled by its job;
- `cleaned-up`: nothing of a deleted job is left;
- `event-per-state-change`: every state change the job's record counts (but
  those the machine marks silent) has its Event, unless the engine was killed
  with SIGKILL while the job ran: Events are posted after the status write
  that records the change, so those still queued die with the process (as
  with any Kubernetes controller); the run counts them instead;
- `one-process-per-index`: in process mode, no second live process ever
  served a replica index (the replica script's lock caught it).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.controller.reconcile.record import read_record
from engine.testing.chaos.observer import ChaosObserver, ChildLife, JobLife
from engine.testing.chaos.workload import JobPlan

SilentLookup = Callable[[Mapping[str, Any], str, str, str, str], bool]
"""(job, level, from, to, reason) -> whether the job's machine posts no Event for it."""


@dataclass(frozen=True)
class Violation:
    """One broken rule, for one subject (a job, a pod, a replica index)."""

    rule: str
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.subject}: {self.detail}"


def check_job(plan: JobPlan, life: JobLife | None, events: Mapping[str, int],
              silent: SilentLookup) -> list[Violation]:
    """The checks of one settled job: its end, its restarts and its `events` (counted by
    reason). Events a SIGKILLed engine had not posted yet are not held against it: they
    are counted by `lost_events` instead."""
    if life is None:
        return [Violation("terminal-state", plan.key, "never seen by the observer")]
    found = _end(plan, life)
    found += _restarts(plan, life)
    if not plan.engine_killed:
        found += [Violation("event-per-state-change", plan.key,
                            f"{reason}: {want} state changes, {got} events")
                  for reason, (want, got) in sorted(event_shortfalls(life, events,
                                                                     silent).items())]
    return found


def _end(plan: JobPlan, life: JobLife) -> list[Violation]:
    phase = life.phases_seen[-1] if life.phases_seen else None
    if plan.expected_end == "Deleted":
        problems = []
        if life.deleted is None:
            problems.append(f"expected to be deleted, still there in phase {phase}")
        if plan.finished_phase and plan.finished_phase not in life.phases_seen:
            problems.append(f"deleted before reaching {plan.finished_phase} "
                            f"(phases seen: {life.phases_seen})")
        return [Violation("terminal-state", plan.key, p) for p in problems]
    allowed = {"Succeeded", "Failed"} if plan.disrupted else {plan.expected_end}
    if phase not in allowed:
        return [Violation("terminal-state", plan.key,
                          f"ended {phase}, expected {' or '.join(sorted(allowed))} "
                          f"({plan.scenario.name}; phases seen: {life.phases_seen})")]
    return []


def _restarts(plan: JobPlan, life: JobLife) -> list[Violation]:
    found = []
    seen = life.restarts_seen
    if any(later < earlier for earlier, later in itertools.pairwise(seen)):
        found.append(Violation("restarts-exact", plan.key,
                               f"status.restarts went down: {seen}"))
    exact = not plan.disrupted and plan.expected_end != "Deleted"
    restarts = seen[-1] if seen else 0
    if exact and restarts != plan.expected_restarts:
        found.append(Violation("restarts-exact", plan.key,
                               f"status.restarts is {restarts}, the script makes "
                               f"{plan.expected_restarts} ({plan.scenario.name})"))
    return found


def event_shortfalls(life: JobLife, posted: Mapping[str, int],
                     silent: SilentLookup) -> dict[str, tuple[int, int]]:
    """Per reason, (state changes the job's record counts, events posted) where fewer
    events than state changes were posted."""
    record = read_record(life.last.get("status") or {})
    wanted: dict[str, int] = defaultdict(int)
    for (level, source, target, reason), count in record.transition_counts.items():
        if not source or source == target or silent(life.last, level, source, target, reason):
            continue
        wanted[reason] += count
    return {reason: (count, posted.get(reason, 0)) for reason, count in wanted.items()
            if posted.get(reason, 0) < count}


def check_pods(observer_pods: Iterable[ChildLife],
               jobs: Mapping[str, JobLife]) -> list[Violation]:
    """Pods of one replica index never overlap; none is born after its job's end."""
    found: list[Violation] = []
    per_index: dict[tuple[str, str], list[ChildLife]] = defaultdict(list)
    for pod in observer_pods:
        if pod.job_uid is None or pod.replica is None:
            continue
        per_index[(pod.job_uid, pod.replica)].append(pod)
        job = jobs.get(pod.job_uid)
        if job is not None and job.ending is not None and pod.created > job.ending:
            found.append(Violation(
                "no-pod-after-end", f"pod {pod.namespace}/{pod.name}",
                f"created at version {pod.created}, after its {job.kind} {job.name} "
                f"was ending at {job.ending}"))
    for (_, replica), pods in per_index.items():
        pods.sort(key=lambda p: p.created)
        for before, after in itertools.pairwise(pods):
            if before.end_unseen:  # deleted in a watch gap: when exactly is not known
                continue
            if before.deleted is None or after.created < before.deleted:
                found.append(Violation(
                    "one-pod-per-index", f"{after.namespace}/{replica}",
                    f"pod {after.uid} created at version {after.created} while "
                    f"{before.uid} existed (deleted at {before.deleted})"))
    return found


def check_children(children: Iterable[ChildLife], jobs: Mapping[str, JobLife],
                   kind: str) -> list[Violation]:
    """Every pod or service is controlled by its job, and none outlives a deleted job."""
    found: list[Violation] = []
    for child in children:
        if child.job_uid is None:
            continue
        subject = f"{kind} {child.namespace}/{child.name}"
        if child.owner_uid != child.job_uid:
            found.append(Violation("owned", subject,
                                   f"controller {child.owner_uid}, job {child.job_uid}"))
        job = jobs.get(child.job_uid)
        if job is not None and job.deleted is not None and child.deleted is None:
            found.append(Violation("cleaned-up", subject,
                                   f"left behind by deleted {job.kind} {job.name}"))
    return found


def check_processes(violations_dir: Path) -> list[Violation]:
    """What the process-mode replicas' locks caught."""
    if not violations_dir.is_dir():
        return []
    return [Violation("one-process-per-index", path.name.rsplit(".", 1)[0],
                      path.read_text().strip())
            for path in sorted(violations_dir.iterdir())]


def check_run(plans: Iterable[JobPlan], observer: ChaosObserver, silent: SilentLookup,
              violations_dir: Path) -> list[Violation]:
    """Every check over the whole run, once everything settled."""
    found: list[Violation] = []
    for plan in plans:
        found += check_job(plan, observer.job(plan.uid), observer.events_of(plan.uid), silent)
    found += check_pods(list(observer.pods.values()), observer.jobs)
    found += check_children(list(observer.pods.values()), observer.jobs, "pod")
    found += check_children(list(observer.services.values()), observer.jobs, "service")
    found += check_processes(violations_dir)
    return found
