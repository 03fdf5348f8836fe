"""reconcile(job key) -> outcome: the steps of the architecture page, and nothing but calls.

Read the job from the cache; finish a deletion; make sure of our finalizer;
claim children; observe; decide; write status first; act; post one event per
state change; say when to look again. Every module called here owns its step.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from loguru import logger

from engine.api.replicated import read_path
from engine.controller.machines.registry import Assignment, MachineRegistry, Unassigned
from engine.controller.reconcile.actions import (
    ActionRun,
    execute,
    release_tracking,
    remove_finalizer,
)
from engine.controller.reconcile.batches import senders
from engine.controller.reconcile.children import (
    CLEANUP_FINALIZER,
    JOB_NAME_LABEL,
    TRACKING_FINALIZER,
    JobKey,
    ReplicaId,
    attempt_of,
)
from engine.controller.reconcile.claims import AdoptionGuard, Claimed, ClaimedBefore, claim
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import (
    JobSpecView,
    ValidationVerdicts,
    managed_by_us,
    read_job_spec,
)
from engine.controller.reconcile.manifests import main_container_name
from engine.controller.reconcile.native_status import (
    NATIVE_STATUS,
    engine_view,
    is_native,
    native_status,
    write_native,
)
from engine.controller.reconcile.notices import (
    Notice,
    UnconfirmedNotices,
    notices_for,
    quiet_changes,
)
from engine.controller.reconcile.objects import ObjectRun, object_name, ours, sync_objects
from engine.controller.reconcile.observe import (
    CHILD_MISSING,
    PodFacts,
    availability,
    carries_labels,
    job_observations,
    node_is_ready,
    observe_child,
    observe_replica_pod,
)
from engine.controller.reconcile.placement import place
from engine.controller.reconcile.quiet_decisions import DecisionInputs, QuietDecisions
from engine.controller.reconcile.record import MachineRecord, RecordError, read_record
from engine.controller.reconcile.refused import (
    TEMPLATE_ERROR_REASON,
    kept_refusal,
    lifted_status,
    native_refused_status,
    refused_event,
    refused_status,
    replica_failure_status,
)
from engine.controller.reconcile.replica_memo import ReplicaMemo
from engine.controller.reconcile.status import build_status, ungoverned_status, write_status
from engine.controller.reconcile.timeouts import next_look, state_timed_out
from engine.controller.reconcile.variables import (
    Surroundings,
    gang_scheduler_of,
)
from engine.controller.reporting.evaluation_errors import EvaluationErrors
from engine.controller.reporting.events import EventRecorder
from engine.controller.reporting.metrics import Metrics
from engine.controller.rollouts.revisions import ROLLOUT_STATUS_FIELDS
from engine.controller.rollouts.run import RolloutRun, sync_rollout
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.controller.runtime.freshness import ReleasedFinalizers, WrittenVersions
from engine.controller.runtime.references import ReferenceWatches
from engine.controller.runtime.scheduler import WakeScheduler, utc_now
from engine.controller.runtime.workers import Done, Outcome, RequeueAfter, Retry, Terminal
from engine.controller.schedules.plan import SCHEDULE_STATUS_FIELDS
from engine.controller.schedules.run import ScheduleRun, sync_schedule
from engine.definition import CompiledDefinition, StepError, reference_targets
from engine.definition.cel import RememberedValues, remembering_values
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, Conflict, Forbidden, Invalid, NotFound
from engine.kube.refusals import Refusal, RefusalKind, classify
from engine.kube.resources import PODS, SERVICES, Resource
from engine.kube.timestamps import format_time, parse_time
from engine.settings import EngineSettings

Obj = Mapping[str, Any]
_CACHE_CATCH_UP_S = 1.0
"""A backstop: the watch event of our own write queues the job again sooner."""
_DELETION_ACTIONS = frozenset({"deletePod", "deleteService", "cleanupPods", "event"})


class _PassValues(RememberedValues):
    """Remembered values of a worker thread, fewer than the model checker keeps: about
    half a kilobyte each (the bytes of what the expression read), so at most about 5 MB
    a worker; all are forgotten when full."""

    LIMIT = 10_000


@dataclass(frozen=True)
class Caches:
    """The watch caches a reconcile reads: jobs per kind, pods, services, nodes, and the
    child objects of every kind a machine declares (by apiVersion and kind)."""

    jobs: dict[str, Cache]
    pods: Cache
    services: Cache
    nodes: Cache
    objects: dict[tuple[str, str], tuple[Resource, Cache]] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedTransition:
    """A state change of a job or one of its replicas, once the status write recording it
    has succeeded: what `demo` prints and tests follow (status keeps only the last few)."""

    kind: str
    namespace: str
    name: str
    uid: str
    time: str
    level: str
    """`job` or `replica`."""
    replica: str | None
    source: str | None
    """None for the creation of a machine."""
    target: str
    reason: str


TransitionListener = Callable[[Sequence[RecordedTransition]], None]
"""Told of each reconcile's state changes, in a worker thread: it must return at once."""


@dataclass(frozen=True)
class _Observed:
    spec: JobSpecView
    replica_objects: Claimed
    """Each replica's pod, or its spec.child object."""
    services: Claimed
    record: MachineRecord
    """The engine's record, read once from the job's status."""
    facts: Mapping[ReplicaId, PodFacts]
    old_attempt: frozenset[ReplicaId]
    """Replicas whose pod is of an older restart attempt: not observed, only deleted."""
    surroundings: Surroundings
    unseen_pods: int
    """Pods created and not yet in the cache: they exist all the same and clean-up may have
    to delete them, so the job is not settled before the watch shows them."""
    satisfied: Mapping[str, bool] = field(default_factory=dict)
    """Each replica type's expectations, met or not, as they were before the cache was read."""


class Reconciler:
    """Reconciles one job per call; safe to call from several workers (never for one key)."""

    def __init__(
        self,
        *,
        client: KubeClient,
        caches: Caches,
        machines: MachineRegistry,
        expectations: Expectations,
        recorder: EventRecorder,
        scheduler: WakeScheduler[JobKey],
        settings: EngineSettings,
        written: WrittenVersions,
        clock: Callable[[], datetime] = utc_now,
        metrics: Metrics | None = None,
        references: ReferenceWatches | None = None,
    ) -> None:
        """`references` finds the objects machines name in governs.references (without it
        every reference reads as absent)."""
        self._references = references
        self._metrics = metrics
        self._client = client
        self._caches = caches
        self._machines = machines
        self._expectations = expectations
        self._recorder = recorder
        self._scheduler = scheduler
        self._settings = settings
        self._written = written
        self._released = ReleasedFinalizers()
        self._unconfirmed = UnconfirmedNotices()
        self._verdicts = ValidationVerdicts()
        self._template_failed: set[str] = set()
        self._evaluation_errors = EvaluationErrors(recorder)
        self._memos: dict[str, ReplicaMemo] = {}
        """Per job (by key id): its replica steps remembered from its last passes."""
        self._quiet = QuietDecisions()
        """Per job: its last decision while it changed nothing, taken again on the same."""
        self._values = threading.local()
        """Per worker thread: the values of expressions by what they read (`_remembered`)."""
        self._clock = clock
        self._transition_listeners: list[TransitionListener] = []

    def __call__(self, key: JobKey) -> Outcome:
        """The work-queue handler: conflicts and stale reads retry with back-off (an object
        deleted under a reconcile, the job itself included, is a stale read too: the next
        look sees it gone)."""
        try:
            with remembering_values(self._remembered()):
                outcome = self.reconcile(key)
        except (Conflict, NotFound) as exc:
            return Retry(exc)
        except Invalid as exc:  # a webhook's or a ValidatingAdmissionPolicy's denial is 422
            return self._refused(key, exc) if classify(exc).names_check else Retry(exc)
        except Forbidden as exc:
            return self._refused(key, exc)
        except (StepError, RecordError) as exc:
            cache = self._caches.jobs.get(key.kind)
            job = cache.get(key.namespace, key.name) if cache is not None else None
            if job is not None:
                self._recorder.record(job, type="Warning", reason="MachineError",
                                      message=str(exc))
            return Terminal(exc)
        self._refusal_lifted(key)
        return outcome

    def _remembered(self) -> RememberedValues:
        """This worker thread's remembered values (an evaluator context serves one thread).

        A guard, a message or a pod's value reads a few fields of the job, the replica
        counts and the run policy, and most passes, of one job and of jobs of one shape,
        evaluate it over equal ones: answered by content (`RememberedValues`: the bytes of
        what it reads), it is not converted into the evaluator nor run again. Errors are
        evaluated each time."""
        values: RememberedValues | None = getattr(self._values, "remembered", None)
        if values is None:
            values = self._values.remembered = _PassValues()
        return values

    def _refused(self, key: JobKey, exc: ApiError) -> Outcome:
        """The API server refused the engine; what helps depends on who refused.

        RBAC: the engine lacks a permission; say which on the job and in the log. An
        admission check (Pod Security, quota, limits, a webhook, a policy): the job's
        objects break a rule of the cluster; say which, as upstream controllers do, with
        no advice about permissions. Both retry with back-off, so granting the permission
        or mending the job or the rule is enough and nothing waits silently. A namespace
        being deleted refuses every create: the job goes with it, so nothing is said or
        retried (the Job controller ignores this error too).
        """
        refusal = classify(exc)
        log = logger.bind(job=f"{key.namespace}/{key.name}")
        if refusal.kind is RefusalKind.NAMESPACE_TERMINATING:
            log.debug(f"not acting in a namespace being deleted: {exc.message}")
            return Done()
        cache = self._caches.jobs.get(key.kind)
        job = cache.get(key.namespace, key.name) if cache is not None else None
        if refusal.rbac:
            message = (f"the API server refused the engine: {exc.message}; grant the engine's "
                       f"service account this permission (see deploy/base/rbac.yaml)")
            log.error(message)
            if job is not None:
                self._recorder.record(job, type="Warning", reason="Forbidden", message=message)
            return Retry(exc)
        log.warning(f"{refusal.policy_label} refused the engine: {exc.message}")
        if job is not None:
            self._report_refusal(key, job, refusal)
        return Retry(exc)

    def _report_refusal(self, key: JobKey, job: Obj, refusal: Refusal) -> None:
        """The Warning event of an admission refusal; on a kind with the engine's status, also
        the ReplicaFailure condition (its own write, conditional on the cached job's
        resourceVersion: a stale cache just leaves it to the next retry), and on a built-in
        kind whose machine names a `refusedCondition`, that condition as upstream writes it
        (on the job read afresh: the refused pass has just written its status)."""
        assignment = self._machines.assign(key.kind, engine_view(job))
        native = isinstance(assignment, Assignment) and is_native(assignment.definition)
        reason, message = refused_event(refusal, built_in=native)
        self._recorder.record(job, type="Warning", reason=reason, message=message)
        if isinstance(assignment, Unassigned):
            return
        now = format_time(self._clock())
        if native:
            condition = assignment.definition.definition.governs.refused_condition
            if condition is None:
                return
            # The pass that was refused wrote the status first: the cache is a step behind.
            with contextlib.suppress(NotFound):
                job = self._client.get(self._resource(key), key.name, key.namespace)
            status = job.get("status") or {}
            updated = native_refused_status(status, refusal, condition=condition, now=now)
        else:
            status = job.get("status") or {}
            updated = refused_status(status, refusal, now=now)
        if updated != status:
            self._write_refusal_condition(key, job, updated)

    def _report_template_errors(self, key: JobKey, run: ActionRun, *, native: bool) -> None:
        """Pods the machine's values could not be built for: the ReplicaFailure condition
        (reason PodTemplateError, the first such replica's message) until a pass builds
        them all (on a kind with the engine's status; a Native one has the events only)."""
        if not run.template_errors:
            self._template_failed.discard(key.id)
            return
        self._template_failed.add(key.id)
        if native:
            return
        status = run.job.get("status") or {}
        updated = replica_failure_status(status, reason=TEMPLATE_ERROR_REASON,
                                         message=run.template_errors[0].message,
                                         now=format_time(self._clock()))
        if updated != status:
            self._write_refusal_condition(key, run.job, updated)

    def _refusal_lifted(self, key: JobKey) -> None:
        """A reconcile went through: drop a ReplicaFailure condition a refusal left (one
        whose pods still cannot be built keeps it)."""
        if key.id in self._template_failed:
            return
        cache = self._caches.jobs.get(key.kind)
        job = cache.get(key.namespace, key.name) if cache is not None else None
        lifted = lifted_status(job.get("status") or {}) if job is not None else None
        if job is not None and lifted is not None:
            self._write_refusal_condition(key, job, lifted)

    def _write_refusal_condition(self, key: JobKey, job: Obj, status: Obj) -> None:
        try:
            written = write_status(self._client, self._resource(key), job, status)
        except ApiError as exc:
            logger.bind(job=str(key)).debug(f"ReplicaFailure condition not written: {exc}")
            return
        self._written.wrote(key.id, written["metadata"]["resourceVersion"])

    def reconcile(self, key: JobKey) -> Outcome:
        """One pass over one job; see the module docstring."""
        cache = self._caches.jobs.get(key.kind)
        job: Obj | None = cache.get(key.namespace, key.name) if cache is not None else None
        if job is None:
            self._written.forget(key.id)
            self._unconfirmed.forget(key.id)
            self._template_failed.discard(key.id)
            self._memos.pop(key.id, None)
            self._quiet.forget(key.id)
            self._evaluation_errors.forget(key.id)
            self._expectations.forget(key.id)
            self._scheduler.cancel_all(key)
            self._release_orphaned_pods(key)
            if self._references is not None:
                self._references.forget(key)
            return Done()
        if not self._written.caught_up(key.id, job["metadata"]["resourceVersion"]):
            return RequeueAfter(_CACHE_CATCH_UP_S)
        if not self._machines.ready:
            return RequeueAfter(_CACHE_CATCH_UP_S)
        viewed = engine_view(job)
        assignment = self._machines.assign(
            key.kind, viewed, started=lambda pinned: self._started(key, viewed, pinned))
        if isinstance(assignment, Unassigned):
            return self._without_machine(key, job, assignment)
        self._say_if_moved(viewed, assignment)
        definition = assignment.definition
        if not managed_by_us(job, definition, stand_in=self._settings.stand_in_for_built_ins):
            return Done()
        # The annotation is parsed once; a Native job without it yet has no engine status.
        job = viewed if NATIVE_STATUS in viewed or not is_native(definition) else (
            engine_view(job, definition))
        self._post(job, self._unconfirmed.landed(key.id, job.get("status") or {}))
        if job["metadata"].get("deletionTimestamp"):
            return self._finish_deletion(key, job, assignment)
        now = self._clock()
        observed = self._observe(key, job, definition)
        decision = self._decide(key, job, assignment, observed, now)
        if not _ended(definition, decision):  # an ended job needs no clean-up at deletion
            job = self._ensure_finalizer(key, job, definition)
        notices = notices_for(decision.fired, observed.facts)
        job = self._write_status(key, job, assignment, spec=observed.spec, decision=decision,
                                 now=now, notices=notices)
        self._tell_listeners(job, decision, now)
        self._count_changes(job, definition, decision, now)
        # Recorded state changes get their Events whatever acting on them meets.
        self._post(job, notices)
        for quiet in quiet_changes(decision, notices):
            self._recorder.tell(job, type=quiet.type, reason=quiet.reason,
                                message=quiet.message)
        run = self._act(key, job, definition, observed=observed, decision=decision, now=now)
        self._report_template_errors(key, run, native=is_native(definition))
        return self._next_look(key, job, definition, spec=observed.spec, decision=decision,
                               run=run, now=now)

    def add_transition_listener(self, listener: TransitionListener) -> None:
        """Have `listener` told of every recorded state change from now on."""
        self._transition_listeners.append(listener)

    def _count_changes(self, job: Obj, definition: CompiledDefinition, decision: Decision,
                       now: datetime) -> None:
        """The metrics of what this reconcile recorded (its status write succeeded)."""
        if self._metrics is None or not (decision.fired or decision.restarts):
            return
        finished = None
        for fired in decision.fired:
            target = fired.transition.target
            if fired.replica is None and definition.job.states[target].terminal:
                created = parse_time(job["metadata"]["creationTimestamp"])
                finished = (target, (now - created).total_seconds())
        self._metrics.observe_changes(
            job["kind"],
            [("job" if f.replica is None else "replica", f.transition.source,
              f.transition.target) for f in decision.fired],
            decision.restarts, finished,
        )

    def _tell_listeners(self, job: Obj, decision: Decision, now: datetime) -> None:
        if not self._transition_listeners or not decision.fired:
            return
        metadata = job["metadata"]
        changes = [
            RecordedTransition(
                kind=job["kind"], namespace=metadata["namespace"], name=metadata["name"],
                uid=metadata["uid"], time=format_time(now),
                level="job" if fired.replica is None else "replica",
                replica=None if fired.replica is None else str(fired.replica),
                source=fired.transition.source, target=fired.transition.target,
                reason=fired.transition.reason,
            )
            for fired in decision.fired
        ]
        for listener in self._transition_listeners:
            try:
                listener(changes)
            except Exception:
                logger.exception("a transition listener failed")

    def _replica_objects(self, definition: CompiledDefinition) -> tuple[Resource, Cache]:
        """Where the replicas' own objects are: the pods, or spec.child's kind's watch (a
        kind not watched yet is a stale read: the job is looked at again)."""
        child = definition.child
        if child is None:
            return PODS, self._caches.pods
        found = self._caches.objects.get((child.api_version, child.kind))
        if found is None:
            raise NotFound(404, "NotFound", f"the engine does not watch {child.kind} "
                           f"({child.api_version}) yet, the children of {definition.name}", {})
        return found

    def _observe(self, key: JobKey, job: Obj, definition: CompiledDefinition) -> _Observed:
        spec = read_job_spec(job, definition, verdicts=self._verdicts)
        guard = AdoptionGuard(self._client, self._resource(key), job)
        types = [t.name for t in spec.replica_types]
        satisfied = {t: self._expectations.satisfied(ExpectationKey(key.id, t)) for t in types}
        resource, cache = self._replica_objects(definition)
        governs = definition.definition.governs
        selector = None if governs.selector is None else read_path(job, governs.selector)
        memo = self._memos.setdefault(key.id, ReplicaMemo())
        owned = claim(self._client, resource, cache, job, replica_types=types, guard=guard,
                      selector=None if governs.selector is None else selector or {},
                      before=memo.claimed.setdefault(resource.plural, ClaimedBefore()))
        if definition.definition.spec.pod.naming == "Generated" and resource == PODS:
            for replica_type in spec.replica_types:
                owned = place(self._client, owned, job, replica_type=replica_type.name,
                              replicas=replica_type.replicas, now=self._clock())
        services = claim(self._client, SERVICES, self._caches.services, job,
                         replica_types=types, guard=guard,
                         before=memo.claimed.setdefault(SERVICES.plural, ClaimedBefore()))
        record = read_record(job.get("status") or {})
        facts = {}
        old_attempt = set()
        min_ready = int(read_path(job, governs.min_ready_seconds) or 0) if (
            governs.min_ready_seconds) else 0
        now = self._clock()
        # What every pod's observation is made of besides the pod and its node's readiness;
        # while it is unchanged, so is the observation of an unchanged pod (not with
        # minReadySeconds: availability changes with the clock).
        same = memo.pods_observed_in(None if min_ready else (
            spec.failure_rules, spec.judge_deleted_when_ended,
            definition.definition.spec.pod.container,
            [(t.name, t.template) for t in spec.replica_types]))
        nodes: dict[str, bool] = {}
        for replica, obj in owned.by_replica.items():
            if attempt_of(obj) != record.restart_attempt:
                old_attempt.add(replica)
                continue
            if resource != PODS:
                facts[replica] = self._observe_one(job, definition, spec, replica, obj)
                continue
            node = (obj.get("spec") or {}).get("nodeName")
            if node and node not in nodes:
                nodes[node] = self._node_ready(node)
            ready = not node or nodes[node]
            kept = memo.observation_of(replica, obj, ready) if same else None
            if kept is not None:
                facts[replica] = kept
                continue
            of_type = spec.replica_type(replica.type)
            template = of_type.template if of_type else {}
            # Everything the pod's observation is made of: the same, the same observation.
            inputs = (obj, spec.failure_rules, main_container_name(definition, template),
                      ready, spec.judge_deleted_when_ended,
                      availability(obj, min_ready, now), carries_labels(obj, template))
            observed = memo.observation(replica, inputs)
            if observed is None:
                observed = replace(self._observe_one(job, definition, spec, replica, obj),
                                   available_in=inputs[5], labelled=inputs[6])
                memo.observed(replica, inputs, observed)
            facts[replica] = observed
        if definition.child is not None:  # a replica without its object reads childMissing
            for replica_type in spec.replica_types:
                for index in range(replica_type.replicas):
                    facts.setdefault(ReplicaId(replica_type.name, index), CHILD_MISSING)
        return _Observed(spec, owned, services, record, facts, frozenset(old_attempt),
                         self._surroundings(key, job, definition, spec),
                         self._expectations.creations_unseen(key.id), satisfied)

    def _observe_one(self, job: Obj, definition: CompiledDefinition, spec: JobSpecView,
                     replica: ReplicaId, obj: Obj) -> PodFacts:
        """One replica's observation, from its pod or its spec.child object."""
        if definition.child is not None:
            facts = observe_child(obj, job=job, definition=definition)
            if facts.error:
                logger.bind(job=f"{job['metadata']['namespace']}/{job['metadata']['name']}",
                            replica=str(replica)).warning(
                    f"machine {definition.name}: {facts.error}; taken as childPending")
            return facts
        replica_type = spec.replica_type(replica.type)
        template = replica_type.template if replica_type else {}
        return observe_replica_pod(
            obj, replica_type=replica.type, failure_rules=spec.failure_rules,
            main_container=main_container_name(definition, template),
            node_ready=self._node_ready,
            judge_deleted_when_ended=spec.judge_deleted_when_ended,
        )

    def _surroundings(self, key: JobKey, job: Obj, definition: CompiledDefinition,
                      spec: JobSpecView) -> Surroundings:
        objects: dict[str, Mapping[str, Any]] = {}
        for child in definition.objects:
            found = self._caches.objects.get((child.api_version, child.kind))
            seen = None if found is None else found[1].get(
                job["metadata"]["namespace"], object_name(job, child.suffix, child.naming))
            objects[child.name] = seen if seen is not None and ours(job, seen) else {}
        return Surroundings(
            gang_scheduler=gang_scheduler_of(
                spec.run_policy, scheduler_name=self._settings.gang_scheduler_name,
                for_every_job=self._settings.gang_scheduling),
            objects=objects,
            references=self._resolve_references(key, job, definition),
        )

    def _resolve_references(self, key: JobKey, job: Obj, definition: CompiledDefinition
                            ) -> dict[str, Obj]:
        """The objects the machine's governs.references name for this job ({} each while
        absent); they are watched from now on, so the job looks again when one changes."""
        targets = reference_targets(definition, job)
        if self._references is None:
            return {name: {} for name in targets}
        return self._references.resolve(key, targets)

    def _decide(
        self, key: JobKey, job: Obj, assignment: Assignment, observed: _Observed,
        now: datetime,
    ) -> Decision:
        definition = assignment.definition
        status = job.get("status") or {}
        record = observed.record
        _check_states_exist(definition, record)
        observations = job_observations(
            job, observed.spec, start_time=status.get("startTime"), now=now,
            terminating_pods=observed.unseen_pods + sum(
                1 for replica, p in observed.replica_objects.by_replica.items()
                if p["metadata"].get("deletionTimestamp") or replica in observed.old_attempt
            ),
        )
        if state_timed_out(definition, job, spec=observed.spec, record=record,
                           facts=observed.facts, surroundings=observed.surroundings, now=now):
            observations |= {"timedOut"}
        inputs = DecisionInputs(definition, job, observed.facts, observations,
                                observed.surroundings)
        decision = self._quiet.recall(key.id, inputs)
        if decision is None:
            decision = decide(
                definition, job, observed.spec, record, observed.facts,
                job_observations=observations, now=format_time(now),
                transitions_kept=self._settings.status_last_transitions,
                surroundings=observed.surroundings,
                memo=self._memos.setdefault(key.id, ReplicaMemo()),
            )
            self._quiet.note(key.id, inputs, decision, record)
        self._evaluation_errors.report(key, job, definition=definition,
                                       revision=assignment.revision, errors=decision.errors)
        return decision

    def _write_status(
        self, key: JobKey, job: Obj, assignment: Assignment, *, spec: JobSpecView,
        decision: Decision, now: datetime, notices: Sequence[Notice],
    ) -> Obj:
        """Write the decision's status; when it fails, `notices` wait for a later reconcile to
        tell whether it landed all the same (its answer lost)."""
        definition = assignment.definition
        status = build_status(job, assignment, spec, decision, now=format_time(now))
        native = (native_status(definition, status, decision.variables)
                  if is_native(definition) else None)
        if native is not None and definition.schedule is not None:
            stored = job.get(NATIVE_STATUS) or {}  # the schedule writes these itself
            native.update({k: stored[k] for k in SCHEDULE_STATUS_FIELDS if k in stored})
        if native is not None and definition.rollout is not None:
            stored = job.get(NATIVE_STATUS) or {}  # the rollout writes these itself
            native.update({k: stored[k] for k in ROLLOUT_STATUS_FIELDS if k in stored})
        kept = kept_refusal(job.get(NATIVE_STATUS) or {},
                            definition.definition.governs.refused_condition)
        if native is not None and kept is not None:  # until a pass goes through
            native["conditions"] = [*native.get("conditions", []), kept]
        if status == (job.get("status") or {}) and (
                native is None or native == job.get(NATIVE_STATUS)):
            return job
        try:
            if native is None:
                written = write_status(self._client, self._resource(key), job, status)
            else:
                written = engine_view(write_native(
                    self._client, self._resource(key), job, status, native), definition)
        except ApiError:
            # A lost answer can come back as anything: a broken connection, or the 409 of
            # the transport's own retry of a write that had landed.
            self._unconfirmed.remember(key.id, status.get("record"), notices)
            raise
        self._unconfirmed.forget(key.id)
        self._written.wrote(key.id, written["metadata"]["resourceVersion"])
        return written

    def _post(self, job: Obj, notices: Sequence[Notice]) -> None:
        for notice in notices:
            self._recorder.record(job, type=notice.type, reason=notice.reason,
                                  message=notice.message, replica=notice.replica)

    def _act(
        self, key: JobKey, job: Obj, definition: CompiledDefinition, *, observed: _Observed,
        decision: Decision, now: datetime,
    ) -> ActionRun:
        run = ActionRun(
            client=self._client, expectations=self._expectations, recorder=self._recorder,
            settings=self._settings, key=key, job=job, definition=definition,
            spec=observed.spec, decision=decision, replica_objects=observed.replica_objects,
            services=observed.services, facts=observed.facts, now=now,
            old_attempt=observed.old_attempt, released=self._released,
            satisfied=observed.satisfied, pool=senders(),
        )
        if not decision.holds_replicas and not job["metadata"].get("deletionTimestamp"):
            run.objects_wait_s = self._sync_objects(key, job, definition, run)
        execute(run)
        release_tracking(run)
        if definition.schedule is not None and not job["metadata"].get("deletionTimestamp"):
            run.schedule_wake = self._sync_schedule(key, job, definition, decision, now)
        if definition.rollout is not None and not job["metadata"].get("deletionTimestamp"):
            self._sync_rollout(key, job, definition, decision, now)
        return run

    def _sync_rollout(self, key: JobKey, job: Obj, definition: CompiledDefinition,
                      decision: Decision, now: datetime) -> None:
        """One sync of the job's rollout; its wake-up (a progress deadline) is its own."""
        assert definition.rollout is not None
        kind = self._machines.resource(definition.rollout.kind)
        cache = self._caches.jobs.get(definition.rollout.kind)
        outcome = sync_rollout(RolloutRun(
            client=self._client, recorder=self._recorder, key=key, job=job,
            resource=self._resource(key), rollout=definition.rollout,
            variables=decision.variables,
            children=None if kind is None or cache is None else (kind, cache), now=now,
            pods=self._caches.pods,
        ))
        if outcome.written is not None:
            self._written.wrote(key.id, outcome.written["metadata"]["resourceVersion"])
        if outcome.wake_at is not None:
            self._scheduler.wake_at(key, outcome.wake_at, "rollout")
        else:
            self._scheduler.cancel(key, "rollout")

    def _sync_schedule(self, key: JobKey, job: Obj, definition: CompiledDefinition,
                       decision: Decision, now: datetime) -> datetime | None:
        assert definition.schedule is not None
        child = definition.schedule
        kind = self._machines.resource(child.kind)
        cache = self._caches.jobs.get(child.kind)
        outcome = sync_schedule(ScheduleRun(
            client=self._client, recorder=self._recorder, key=key, job=job,
            resource=self._resource(key), schedule=child, variables=decision.variables,
            children=None if kind is None or cache is None else (kind, cache), now=now,
            suspended=decision.holds_replicas,
        ))
        if outcome.written is not None:
            self._written.wrote(key.id, outcome.written["metadata"]["resourceVersion"])
        return outcome.wake_at

    def _sync_objects(
        self, key: JobKey, job: Obj, definition: CompiledDefinition, run: ActionRun
    ) -> float:
        objects = dict(self._caches.objects)
        return sync_objects(ObjectRun(
            client=self._client, recorder=self._recorder, key=key, job=job,
            definition=definition,
            variables={**run.decision.variables, **run.template_variables()},
            resources={k: resource for k, (resource, _) in objects.items()},
            caches={k: cache for k, (_, cache) in objects.items()},
        ))

    def _next_look(
        self, key: JobKey, job: Obj, definition: CompiledDefinition, *, spec: JobSpecView,
        decision: Decision, run: ActionRun, now: datetime,
    ) -> Outcome:
        state = decision.record.state
        compiled = definition.job.states[state] if state else None
        status = job.get("status") or {}
        if compiled is not None and compiled.terminal:
            return self._after_finish(key, job, spec, status, now)
        # A Ready pod that becomes available later (minReadySeconds) changes the counts then.
        becoming = [f.available_in for f in run.facts.values() if f.available_in]
        look = next_look(definition, spec, status, decision, wait_s=[*run.wait_s, *becoming],
                         now=now)
        for purpose, when in look.wake_ups.items():
            self._scheduler.wake_at(key, when, purpose)
        if run.schedule_wake is not None:
            self._scheduler.wake_at(key, run.schedule_wake, "schedule")
        else:
            self._scheduler.cancel(key, "schedule")
        if "replica-timeout" not in look.wake_ups:
            self._scheduler.cancel(key, "replica-timeout")
        return RequeueAfter(min(look.delays)) if look.delays else Done()

    def _after_finish(
        self, key: JobKey, job: Obj, spec: JobSpecView, status: Obj, now: datetime
    ) -> Outcome:
        """A finished job lets go of its finalizer and waits for watch events, or for its
        TTL to delete it."""
        self._drop_finalizer(key, job)
        self._scheduler.cancel(key, "deadline")
        ttl = spec.run_policy.get("ttlSecondsAfterFinished")
        finished = status.get("completionTime")
        if ttl is None or finished is None:
            return Done()
        expires = parse_time(finished) + timedelta(seconds=int(ttl))
        if now < expires:
            self._scheduler.wake_at(key, expires, "ttl")
            return Done()
        logger.bind(job=str(key)).info(f"deleting: ttlSecondsAfterFinished ({ttl}s) has passed")
        with contextlib.suppress(NotFound):
            self._client.delete(
                self._resource(key), key.name, key.namespace,
                uid=job["metadata"]["uid"], propagation_policy="Background",
            )
        return Done()

    def _ensure_finalizer(self, key: JobKey, job: Obj, definition: CompiledDefinition) -> Obj:
        finalizers = list(job["metadata"].get("finalizers") or [])
        if CLEANUP_FINALIZER in finalizers:
            return job
        patched = self._set_finalizers(key, job, [*finalizers, CLEANUP_FINALIZER])
        return engine_view(patched, definition)

    def _drop_finalizer(self, key: JobKey, job: Obj) -> None:
        """Remove our finalizer from a job that has ended: its end ran the clean-up (the
        clean-pod policy), so deleting it is the garbage collector's work alone, as for a
        Kubernetes Job, and works without the engine (a pod still holding a tracking
        finalizer is released when the engine sees the job gone)."""
        finalizers = list(job["metadata"].get("finalizers") or [])
        if CLEANUP_FINALIZER not in finalizers:
            return
        with contextlib.suppress(NotFound, Invalid):  # gone, or changed: its event comes
            self._set_finalizers(key, job, [f for f in finalizers if f != CLEANUP_FINALIZER])

    def _set_finalizers(self, key: JobKey, job: Obj, finalizers: list[str]) -> Obj:
        """The job's finalizers replaced, if it is still the version read (a JSON patch that
        tests the resourceVersion); the patched job, whose version this reconcile wrote."""
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": job["metadata"]["resourceVersion"]},
            {"op": "add", "path": "/metadata/finalizers", "value": finalizers},
        ]
        patched = self._client.patch(
            self._resource(key), key.name, patch, namespace=key.namespace, patch_type="json"
        )
        self._written.wrote(key.id, patched["metadata"]["resourceVersion"])
        return patched

    def _finish_deletion(self, key: JobKey, job: Obj, assignment: Assignment) -> Outcome:
        """Run the machine's clean-up, release every pod, then let the job go."""
        definition = assignment.definition
        now = self._clock()
        observed = self._observe(key, job, definition)
        decision = self._decide(key, job, assignment, observed, now)
        cleanup = tuple(a for a in decision.actions if a.action.name in _DELETION_ACTIONS)
        decision = replace(decision, actions=cleanup, holds_replicas=True)
        if CLEANUP_FINALIZER not in (job["metadata"].get("finalizers") or []):
            self._release_orphaned_pods(key)
            return Done()
        notices = notices_for(decision.fired, observed.facts)
        job = self._write_status(key, job, assignment, spec=observed.spec, decision=decision,
                                 now=now, notices=notices)
        self._post(job, notices)
        self._act(key, job, definition, observed=observed, decision=decision, now=now)
        remove_finalizer(self._client, job, CLEANUP_FINALIZER, resource=self._resource(key))
        self._expectations.forget(key.id)
        self._scheduler.cancel_all(key)
        logger.bind(job=str(key)).info("deletion clean-up done; finalizer removed")
        return Done()

    def _without_machine(self, key: JobKey, job: Obj, unassigned: Unassigned) -> Outcome:
        """A job no machine revision can run: say why on the job and leave its pods alone.

        A job being deleted is let go (our finalizer removed, its pods released to the
        garbage collector), since no machine is there to run its clean-up.
        """
        log = logger.bind(job=str(key), kind=key.kind)
        if job["metadata"].get("deletionTimestamp"):
            self._release_orphaned_pods(key)
            remove_finalizer(self._client, job, CLEANUP_FINALIZER, resource=self._resource(key))
            log.info(f"deleted without its machine's clean-up: {unassigned.message}")
            return Done()
        status = ungoverned_status(job, unassigned, now=format_time(self._clock()))
        if status != (job.get("status") or {}):
            written = write_status(self._client, self._resource(key), job, status)
            self._written.wrote(key.id, written["metadata"]["resourceVersion"])
            self._recorder.record(job, type="Warning", reason=unassigned.reason,
                                  message=unassigned.message)
            log.warning(unassigned.message)
        return Done()

    def _resource(self, key: JobKey) -> Resource:
        resource = self._machines.resource(key.kind)
        if resource is None:
            raise NotFound(404, "NotFound", f"the engine no longer watches {key.kind}", {})
        return resource

    def _started(self, key: JobKey, job: Obj, pinned: CompiledDefinition) -> bool:
        """Whether the job has got anywhere with the revision it is pinned to: a pod (or child)
        exists, or its record has a replica out of the initial state, a restart or a new
        attempt. One that has not may move to the revision in force (a fixed machine)."""
        try:
            _, objects = self._replica_objects(pinned)
        except NotFound:
            return True  # not known yet: taken as started, so nothing moves on a guess
        if any(True for _ in objects.by_label(key.namespace, JOB_NAME_LABEL, key.name)):
            return True
        record = read_record(job.get("status") or {})
        initial = pinned.replica.initial
        return bool(record.restarts or record.restart_attempt or record.replica_restarts
                    or any(state != initial for state in record.replica_states.values()))

    def _say_if_moved(self, job: Obj, assignment: Assignment) -> None:
        """A Normal event when a job that had not started moves to the revision in force."""
        if assignment.moved_from is None:
            return
        machine, revision = assignment.moved_from
        message = (f"the job has created no pod with revision {revision} of machine {machine}: "
                   f"it runs with revision {assignment.revision} of machine "
                   f"{assignment.machine}, the one in force")
        logger.bind(job=f"{job['metadata'].get('namespace')}/{job['metadata']['name']}"
                    ).info(message)
        self._recorder.record(job, type="Normal", reason="MachineRevisionChanged",
                              message=message)

    def _release_orphaned_pods(self, key: JobKey) -> None:
        """Pods of a job that went away without our clean-up must not keep our finalizer."""
        for pod in self._caches.pods.by_label(key.namespace, JOB_NAME_LABEL, key.name):
            references = pod["metadata"].get("ownerReferences") or []
            ours = any(r.get("controller") and r.get("kind") == key.kind for r in references)
            if ours and TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or []):
                remove_finalizer(self._client, pod, TRACKING_FINALIZER, released=self._released)

    def _node_ready(self, name: str) -> bool:
        if len(self._caches.nodes) == 0:
            return True
        return node_is_ready(self._caches.nodes.get(None, name))


def _check_states_exist(definition: CompiledDefinition, record: MachineRecord) -> None:
    """A recorded state the definition no longer has (it was edited) is a clear error."""
    unknown = {record.state} - set(definition.job.states) - {None}
    unknown |= set(record.replica_states.values()) - set(definition.replica.states)
    if unknown:
        raise StepError(
            f"the job's status records states {sorted(map(str, unknown))} that machine "
            f"{definition.name} does not have (was it changed while the job ran?)"
        )


def _ended(definition: CompiledDefinition, decision: Decision) -> bool:
    """Whether the job machine is in a terminal state after this decision."""
    state = decision.record.state
    return state is not None and definition.job.states[state].terminal is not None
