"""Carrying out what the machines decided, after the status write: pods, services, finalizers.

Every action is replayable: names are deterministic, deletes carry the uid
precondition and treat NotFound as done, and `AlreadyExists` is not an error
(field notes, story 1). Pod creates and deletes are guarded by expectations
(story 4) and a failed replica's pod is re-created only after its back-off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar, cast

from loguru import logger

from engine.controller.machines.registry import MACHINE_STATUS_FIELD
from engine.controller.reconcile.batches import BURST_REPLICAS, SlowStart, send_all
from engine.controller.reconcile.children import (
    TRACKING_FINALIZER,
    JobKey,
    ReplicaId,
    controller_uid,
)
from engine.controller.reconcile.claims import Claimed
from engine.controller.reconcile.cleanup import cleanup_policy, pods_to_clean
from engine.controller.reconcile.decide import Decision, Planned
from engine.controller.reconcile.jobspec import JobSpecView, ReplicaTypeSpec
from engine.controller.reconcile.manifests import (
    FIELDS_HASH_ANNOTATION,
    build_child,
    build_pod,
    build_service,
    cluster_spec,
    hosts,
    service_spec_for,
    with_fields,
)
from engine.controller.reconcile.objects import content_hash
from engine.controller.reconcile.observe import MISSING, PodFacts
from engine.controller.reconcile.variables import replica_variables
from engine.controller.reporting.events import EventRecorder
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.controller.runtime.freshness import ReleasedFinalizers
from engine.definition import (
    ChildDecorations,
    CompiledDefinition,
    PodDecorations,
    render_child_decorations,
    render_pod_decorations,
)
from engine.definition.cel import CelEvaluationError
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Invalid, NotFound, Replaced
from engine.kube.resources import PODS, SERVICES, Resource
from engine.kube.timestamps import parse_time
from engine.settings import EngineSettings

Obj = Mapping[str, Any]
Rendered = TypeVar("Rendered", PodDecorations, ChildDecorations)
_TEMPLATE_RETRY_S = 30.0
"""How soon a pod whose machine values failed is tried again (the job may be edited)."""


@dataclass(frozen=True)
class TemplateError:
    """A pod the machine's values could not be computed for."""

    cause: str
    """The evaluation error: the expression, and why it failed."""
    message: str
    """What the job is told (its PodTemplateError event and ReplicaFailure condition)."""


@dataclass(frozen=True)
class PendingCreate:
    """A create a slow-start pass has built and not sent yet."""

    replica: ReplicaId
    resource: Resource
    body: dict[str, Any]
    event_reason: Any = None
    """The reason of the Event said once the pod is created (none: no Event)."""

    @property
    def own(self) -> bool:
        """The replica's own object (counted by expectations), not its service."""
        return self.resource != SERVICES


@dataclass
class ActionRun:
    """One reconcile's acts on one job, and what they could not do yet."""

    client: KubeClient
    expectations: Expectations
    recorder: EventRecorder
    settings: EngineSettings
    key: JobKey
    job: Obj
    definition: CompiledDefinition
    spec: JobSpecView
    decision: Decision
    replica_objects: Claimed
    """Each replica's own object: its pod, or its spec.child object."""
    services: Claimed
    facts: Mapping[ReplicaId, PodFacts]
    now: datetime
    old_attempt: frozenset[ReplicaId] = frozenset()
    """Replicas whose object is of an older restart attempt: it is deleted, whatever the
    state."""
    released: ReleasedFinalizers | None = None
    """Tracking finalizers already removed, while the cache shows pods from before."""
    wait_s: list[float] = field(default_factory=list)
    """Delays after which a blocked action can go ahead (back-off, unmet expectations)."""
    template_errors: list[TemplateError] = field(default_factory=list)
    """Pods that could not be built: the machine's pod values failed (PodTemplateError)."""
    created: set[ReplicaId] = field(default_factory=set)
    """Replicas whose pod (or child) this run created: a create planned twice in one pass
    (a self-loop stepped in two rounds) makes one, also when the API server names it."""
    schedule_wake: datetime | None = None
    """When the job's schedule is next due (a machine with a schedule only)."""
    objects_wait_s: float = 0.0
    """0 when the job's child objects are as the machine wants them, else how long to wait
    before trying again: pods that may mount them are created only once they are."""
    satisfied: Mapping[str, bool] = field(default_factory=dict)
    """Whether each replica type's expectations were met when the pass began, before it read
    the cache (upstream's order): a pod the watch shows after that read must not let this
    pass act on a cache without it."""
    pool: Executor | None = None
    """Where the requests of a slow-start batch are sent at once (batches.senders()); None:
    one after another in this thread (the simulated world)."""
    _templates: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _may_act: dict[str, bool] = field(default_factory=dict, init=False, repr=False)
    _batches: dict[tuple[str, str], SlowStart] = field(default_factory=dict, init=False,
                                                       repr=False)
    _pending: list[PendingCreate] = field(default_factory=list, init=False, repr=False)
    """Creates built by a slow-start pass and not sent yet (`flush_creates` sends them)."""
    _queued: set[tuple[str, ReplicaId]] = field(default_factory=set, init=False, repr=False)
    renderings: dict[tuple[ReplicaId, Callable[..., Any]], Any] = field(
        default_factory=dict, init=False, repr=False)
    """Each replica's decorations as rendered in this run, by how: its service and its pod
    are made of one rendering (the machine's values are the same within a run)."""

    @property
    def slow_starting(self) -> bool:
        """Whether the machine creates in slow-start batches (pod.slowStart)."""
        return self.definition.definition.spec.pod.slow_start

    def slow_start(self, resource: Resource, replica_type: str) -> SlowStart:
        """This pass's slow-start batches of one type's creates of one resource."""
        return self._batches.setdefault((resource.plural, replica_type), SlowStart())

    def queue(self, create: PendingCreate) -> None:
        """Hold a built create until the pass sends its batch."""
        self._pending.append(create)
        self._queued.add((create.resource.plural, create.replica))

    def queued(self, resource: Resource, replica: ReplicaId) -> bool:
        """Whether this pass already holds a create of the replica's object of `resource`."""
        return (resource.plural, replica) in self._queued

    def take_pending(self) -> list[PendingCreate]:
        """The creates held so far, in the order they were planned; none are held after."""
        pending, self._pending = self._pending, []
        return pending

    def raise_batch_failure(self) -> None:
        """The first create refused in a slow-start batch, if any: what the pass failed of."""
        for batch in self._batches.values():
            if batch.failure is not None:
                raise batch.failure

    def template_variables(self) -> dict[str, Any]:
        """`clusterSpec` and `hosts`, built once per run (they list every replica)."""
        if self._templates is None:
            self._templates = {
                "clusterSpec": cluster_spec(self.job, self.definition, self.spec.replica_types),
                "hosts": hosts(self.job, self.spec.replica_types),
            }
        return self._templates

    def expectation(self, replica_type: str) -> ExpectationKey:
        """The expectations record of this job and replica type."""
        return ExpectationKey(self.key.id, replica_type)

    def may_act(self, replica_type: str) -> bool:
        """Whether this run may create and delete pods (or children) of `replica_type`: the
        expectations
        were satisfied when it first asked, as the Job controller asks once per sync.

        Asking again after each create would stop the run at its first pod of a type (its
        own creation is not observed yet), so a wide job got one pod per watch round trip.
        What this run creates are pods of distinct replicas, named by them, so it cannot
        make two of one; the check still stops a run working from a cache that has not yet
        seen an earlier run's pods.
        """
        if replica_type not in self._may_act:
            self._may_act[replica_type] = self.satisfied.get(replica_type, True) and (
                self.expectations.satisfied(self.expectation(replica_type)))
        return self._may_act[replica_type]


_DEFERRED = frozenset({"createPod", "createService"})
"""Actions a slow-start pass holds and sends in batches (`flush_creates`)."""


def execute(run: ActionRun) -> None:
    """Run the planned actions in order, then remove pods (or children) that no replica owns
    any more; a create refused in a slow-start batch is raised once the batch is over.

    With pod.slowStart, a run of consecutive creates is held and sent in slow-start batches
    once another action (or the end) comes, so every other action keeps its place."""
    for planned in run.decision.actions:
        if planned.action.name not in _DEFERRED:
            flush_creates(run)
        _execute_one(run, planned)
    flush_creates(run)
    _keep_child_fields(run)
    for replica in sorted(run.old_attempt):
        _delete(run, replica, run.replica_objects.by_replica.get(replica), own=True)
    if not run.decision.holds_replicas:
        _delete_stale(run)
    run.raise_batch_failure()


def _execute_one(run: ActionRun, planned: Planned) -> None:
    name, replica = planned.action.name, planned.replica
    if name == "event":
        args = planned.action.args
        run.recorder.record(
            run.job, type="Warning" if args.get("type") == "Warning" else "Normal",
            reason=str(args["reason"]),
            message=str(args.get("message") or args["reason"]),
            replica=None if replica is None else str(replica),
        )
    elif name == "cleanupPods":
        _cleanup_pods(run, planned.action.args.get("policy"))
    elif replica is None:
        raise ValueError(f"replica action {name} planned without a replica")
    elif name == "createPod":
        _create_pod(run, replica, event_reason=planned.action.args.get("reason"))
    elif name in ("deletePod", "deleteChild"):
        _delete(run, replica, run.replica_objects.by_replica.get(replica), own=True)
    elif name == "createChild":
        _create_child(run, replica)
    elif name == "createService":
        _create_service(run, replica)
    elif name == "deleteService":
        _delete(run, replica, run.services.by_replica.get(replica), own=False)
    else:
        raise NotImplementedError(f"the engine has no executor for action {name!r}")


def _log(run: ActionRun, replica: ReplicaId | None = None) -> Any:
    bound = logger.bind(job=str(run.key), kind=run.key.kind)
    return bound.bind(replica=str(replica)) if replica is not None else bound


def _may_create(run: ActionRun, replica: ReplicaId) -> bool:
    """Whether the replica's pod (or child) may be created now: it has none, the job's
    objects are as wanted, the expectations are met and its back-off has run out; when
    not, the run is told when to look again."""
    if replica in run.replica_objects.by_replica or replica in run.created or run.queued(
            run.replica_objects.resource, replica):
        return False
    if run.objects_wait_s > 0:
        run.wait_s.append(run.objects_wait_s)
        return False
    if not run.may_act(replica.type):
        run.wait_s.append(1.0)
        return False
    delay = _backoff_remaining(run, replica)
    if delay > 0:
        run.wait_s.append(delay)
        return False
    return True


def _create_pod(run: ActionRun, replica: ReplicaId, *, event_reason: Any = None) -> None:
    if not _may_create(run, replica):
        return
    replica_type = run.spec.replica_type(replica.type)
    if replica_type is None:
        return
    decorations = _decorations(run, replica, replica_type, render_pod_decorations)
    if decorations is None:
        return
    pod = build_pod(run.job, run.definition, replica_type, replica, decorations,
                    attempt=run.decision.record.restart_attempt)
    _warn_restart_policy(run, replica, replica_type.template_restart_policy,
                         pod["spec"]["restartPolicy"])
    if run.slow_starting:
        run.queue(PendingCreate(replica, PODS, pod, event_reason))
        return
    created = _create_expected(run, replica, PODS, pod)
    if created is not None:
        _said_created(run, replica, created, event_reason)


def _said_created(run: ActionRun, replica: ReplicaId, created: Obj, event_reason: Any) -> None:
    """The Event of a pod created, when the machine names one (SuccessfulCreate)."""
    if event_reason:
        run.recorder.record(run.job, type="Normal", reason=str(event_reason),
                            message=f"Created pod: {created['metadata']['name']}",
                            replica=str(replica))


def flush_creates(run: ActionRun) -> None:
    """Send the creates a slow-start pass holds: per resource and replica type, in batches
    that continue the pass's 1, 2, 4, ... (a batch may be split by another action in
    between); each batch's expectations are raised before its requests are sent, and
    lowered for each create refused. A batch with a refused create is finished and no other
    of its resource and type starts (its error is raised by `execute` at the end); what is
    left is created by a later pass.

    The groups go side by side: the next batch of every group is sent at once (a replica's
    pod beside its Service, one type's pods beside another's), so a pass waits about as long
    as its largest group takes, not for each group in turn."""
    groups: dict[tuple[str, str], list[PendingCreate]] = {}
    for create in run.take_pending():
        groups.setdefault((create.resource.plural, create.replica.type), []).append(create)
    queued = [(run.slow_start(group[0].resource, group[0].replica.type), group)
              for group in groups.values()]
    while True:
        batches: list[tuple[SlowStart, list[PendingCreate]]] = []
        for index, (batch, group) in enumerate(queued):
            if group and batch.may_try():
                room = batch.room()
                batches.append((batch, group[:room]))
                queued[index] = (batch, group[room:])
        if not batches:
            return
        _send_batches(run, batches)


def _send_batches(run: ActionRun, batches: list[tuple[SlowStart, list[PendingCreate]]]
                  ) -> None:
    """The batches' creates at once; then, batch by batch in planned order, each one's
    outcome."""
    for _, chunk in batches:
        own = [create for create in chunk if create.own]
        if own:
            run.expectations.expect_creations(run.expectation(own[0].replica.type), len(own))
    outcomes = iter(send_all(run.pool, [
        partial(run.client.create, create.resource, create.body, run.key.namespace)
        for _, chunk in batches for create in chunk]))
    unexpected: Exception | None = None
    for batch, chunk in batches:
        for create in chunk:
            outcome = next(outcomes)
            if isinstance(outcome, Exception) and create.own:
                run.expectations.creation_observed(run.expectation(create.replica.type))
            if isinstance(outcome, AlreadyExists):
                _explain_existing(run, create.resource,
                                  create.body["metadata"].get("name", ""), create.replica)
            elif isinstance(outcome, ApiError):
                batch.failed(outcome)  # the rest of this batch was tried too, as upstream's is
            elif isinstance(outcome, Exception):
                unexpected = unexpected or outcome
            else:
                _created(run, create, outcome)
            batch.tried()
    if unexpected is not None:
        raise unexpected


def _created(run: ActionRun, create: PendingCreate, created: Obj) -> None:
    kind = create.resource.kind.lower()
    _log(run, create.replica).info(f"created {kind} {created['metadata']['name']}")
    if create.own:
        run.created.add(create.replica)
        _said_created(run, create.replica, created, create.event_reason)


def _create_child(run: ActionRun, replica: ReplicaId) -> None:
    """Create the replica's spec.child object; AlreadyExists is explained as for pods."""
    if not _may_create(run, replica):
        return
    replica_type = run.spec.replica_type(replica.type)
    if replica_type is None:
        return
    decorations = _decorations(run, replica, replica_type, render_child_decorations)
    if decorations is None:
        return
    child = build_child(run.job, run.definition, replica_type, replica, decorations,
                        attempt=run.decision.record.restart_attempt)
    _create_expected(run, replica, run.replica_objects.resource, child)


def _create_expected(
    run: ActionRun, replica: ReplicaId, resource: Resource, body: dict[str, Any]
) -> Obj | None:
    """Create a replica's own object under its type's expectations (lowered again at once
    when the create fails); the object this call created, else None. AlreadyExists is
    explained: ours or an orphan is claimed next pass, another owner's is reported."""
    key = run.expectation(replica.type)
    run.expectations.expect_creations(key, 1)
    try:
        created = run.client.create(resource, body, run.key.namespace)
    except AlreadyExists:
        run.expectations.creation_observed(key)
        _explain_existing(run, resource, body["metadata"].get("name", ""), replica)
        return None
    except Exception:
        run.expectations.creation_observed(key)
        raise
    run.created.add(replica)
    _log(run, replica).info(f"created {resource.kind.lower()} {created['metadata']['name']}")
    return created


def _keep_child_fields(run: ActionRun) -> None:
    """Patch the machine's forced fields (spec.child.fields) into each child of this attempt
    that has not ended when what they render to changed (JobSet suspends and resumes its
    Jobs so); a change the child's API server refuses is said in a Warning event."""
    child = run.definition.child
    if child is None or not child.fields:
        return
    resource = run.replica_objects.resource
    for replica, obj in sorted(run.replica_objects.by_replica.items()):
        facts = run.facts.get(replica)
        if facts is None or facts.terminal or facts.going or replica in run.old_attempt:
            continue
        replica_type = run.spec.replica_type(replica.type)
        decorations = None if replica_type is None else _decorations(
            run, replica, replica_type, render_child_decorations)
        if decorations is None:
            continue
        metadata = obj["metadata"]
        if (metadata.get("annotations") or {}).get(FIELDS_HASH_ANNOTATION) == content_hash(
                decorations.fields):
            continue
        patch = with_fields({"metadata": {"uid": metadata["uid"]}}, decorations.fields)
        try:
            run.client.patch(resource, metadata["name"], patch, namespace=metadata["namespace"])
        except (NotFound, Replaced):  # gone, or its name holds another child now
            continue
        except Invalid as exc:
            run.recorder.record(run.job, type="Warning", reason="ChildUpdateRefused",
                                message=f"{replica}: {resource.kind} {metadata['name']}: "
                                        f"{exc.message}", replica=str(replica))
            continue
        _log(run, replica).info(f"updated {resource.kind} {metadata['name']}: "
                                f"{', '.join(sorted(decorations.fields))}")


def _decorations(
    run: ActionRun, replica: ReplicaId, replica_type: ReplicaTypeSpec,
    render: Callable[[CompiledDefinition, Mapping[str, Any]], Rendered],
) -> Rendered | None:
    """The machine's values for the replica's pod (env, labels, annotations...) or its child
    (name, labels, annotations); None (reported) if they fail. Rendered once per run and
    replica: a replica's service takes its labels from the rendering its pod is built of."""
    known = run.renderings.get((replica, render))
    if known is not None:
        return cast(Rendered, known)
    variables = replica_variables(
        run.decision.variables, replica, desired=replica_type.replicas,
        policy=replica_type.restart_policy, record=run.decision.record,
        facts=run.facts.get(replica, MISSING),
    )
    variables.update(run.template_variables())
    try:
        rendered = render(run.definition, variables)
    except CelEvaluationError as exc:
        revision = (run.job.get("status") or {}).get(MACHINE_STATUS_FIELD) or "?"
        message = (f"{replica}: the pod values of machine {run.definition.name} (revision "
                   f"{revision}) cannot be computed: {exc}; once a fixed machine is "
                   f"accepted, a job that has created no pod runs with it")
        run.recorder.record(run.job, type="Warning", reason="PodTemplateError", message=message)
        run.template_errors.append(TemplateError(str(exc), message))
        _log(run, replica).warning(f"pod values cannot be computed: {exc}")
        run.wait_s.append(_TEMPLATE_RETRY_S)
        return None
    run.renderings[(replica, render)] = rendered
    return rendered


def _backoff_remaining(run: ActionRun, replica: ReplicaId) -> float:
    """Seconds until a replica whose pod failed may get a new one (0: now).

    With runPolicy.recreationBackoff false (the Kubeflow machines' default) the first
    failure in a row is recreated at once, as Kubeflow does, and the back-off starts at the
    second: a pod that keeps failing does not spin (Kubeflow's would)."""
    restarts = run.decision.record.replica_backoff.get(replica)
    if restarts is None or restarts.count == 0:
        return 0.0
    failures = restarts.count
    if run.spec.run_policy.get("recreationBackoff", True) is False:
        failures -= 1
        if failures == 0:
            return 0.0
    settings = run.settings
    delay = min(
        settings.replica_backoff_base_s * 2 ** min(failures - 1, 30),
        settings.replica_backoff_cap_s,
    )
    due = parse_time(restarts.last) + timedelta(seconds=delay)
    return max((due - run.now).total_seconds(), 0.0)


def _warn_restart_policy(
    run: ActionRun, replica: ReplicaId, template_policy: str | None, pod_policy: str
) -> None:
    if template_policy is None or template_policy == pod_policy:
        return
    run.recorder.record(
        run.job, type="Warning", reason="RestartPolicyOverridden",
        message=f"{replica}: the pod template's restartPolicy {template_policy} is replaced by "
        f"{pod_policy}; the replica's restartPolicy decides restarts",
    )


def _explain_existing(
    run: ActionRun, resource: Resource, name: str, replica: ReplicaId
) -> None:
    """After AlreadyExists: ours or an orphan is claimed next pass; another owner's is reported."""
    try:
        existing = run.client.get(resource, name, run.key.namespace)
    except NotFound:
        run.wait_s.append(0.5)
        return
    owner = controller_uid(existing)
    if owner not in (None, run.job["metadata"]["uid"]):
        run.recorder.record(
            run.job, type="Warning", reason="NameConflict",
            message=f"{replica}: {resource.kind} {name} exists and belongs to another controller",
        )
        _log(run, replica).warning(f"{resource.kind} {name} belongs to another controller")
    run.wait_s.append(0.5)


def _create_service(run: ActionRun, replica: ReplicaId) -> None:
    if replica in run.services.by_replica or run.queued(SERVICES, replica):
        return
    replica_type = run.spec.replica_type(replica.type)
    if replica_type is None or service_spec_for(run.definition, replica.type) is None:
        return
    decorations = _decorations(run, replica, replica_type, render_pod_decorations)
    if decorations is None:
        return
    service = build_service(run.job, run.definition, replica_type, replica,
                            labels=decorations.labels)
    if service is None:
        return
    if run.slow_starting:
        run.queue(PendingCreate(replica, SERVICES, service))
        return
    try:
        run.client.create(SERVICES, service, run.key.namespace)
    except AlreadyExists:
        _explain_existing(run, SERVICES, service["metadata"]["name"], replica)


@dataclass(frozen=True)
class _Deletion:
    """A delete about to be sent, its expectation raised."""

    replica: ReplicaId | None
    obj: Obj
    resource: Resource
    key: ExpectationKey | None
    """The expectations that count it (a replica's own object), else None (a service)."""


def _deletion(run: ActionRun, replica: ReplicaId | None, obj: Obj | None, *, own: bool,
              replica_type: str | None = None) -> _Deletion | None:
    """A child to delete unless it is already going (or the type's expectations are not met
    yet: then the run looks again in a second), its deletion expected from now on.

    `own`: the replica's own object (its pod, or its spec.child object), counted by the
    expectations of its replica's type (or of `replica_type`, for a surplus pod that no
    replica holds); else its service."""
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None
    resource = run.replica_objects.resource if own else SERVICES
    key = None
    counted = replica.type if replica is not None else replica_type
    if own and counted is not None:
        if not run.may_act(counted):
            run.wait_s.append(1.0)
            return None
        key = run.expectation(counted)
        run.expectations.expect_deletions(key, [obj["metadata"]["name"]])
    return _Deletion(replica, obj, resource, key)


def _send_deletion(run: ActionRun, deletion: _Deletion) -> None:
    """The DELETE, with the uid precondition; a spec.child object goes in the foreground so
    that a new one waits for the old one's children."""
    metadata = deletion.obj["metadata"]
    foreground = "Foreground" if deletion.resource not in (PODS, SERVICES) else None
    run.client.delete(deletion.resource, metadata["name"], metadata["namespace"],
                      uid=metadata["uid"], propagation_policy=foreground)


def _deleted(run: ActionRun, deletion: _Deletion, failure: Exception | None) -> bool:
    """Whether the delete went through; a failed one is no longer expected (NotFound: gone
    already), and any failure but NotFound is raised."""
    name = deletion.obj["metadata"]["name"]
    if failure is None:
        _log(run, deletion.replica).info(f"deleted {deletion.resource.kind.lower()} {name}")
        _said_deleted(run, deletion)
        return True
    if deletion.key is not None:
        run.expectations.deletion_observed(deletion.key, name)
    if isinstance(failure, NotFound):
        return False
    raise failure


def _delete(run: ActionRun, replica: ReplicaId | None, obj: Obj | None, *, own: bool,
            replica_type: str | None = None) -> bool:
    """Delete a child unless it is already going (`_deletion`); whether this call deleted
    it."""
    deletion = _deletion(run, replica, obj, own=own, replica_type=replica_type)
    if deletion is None:
        return False
    try:
        _send_deletion(run, deletion)
    except Exception as exc:
        return _deleted(run, deletion, exc)
    return _deleted(run, deletion, None)


Target = tuple[ReplicaId | None, Obj]


def _delete_all(run: ActionRun, targets: list[Target], *, own: bool,
                replica_type: str | None = None,
                said: Callable[[ReplicaId | None, Obj], None] | None = None) -> None:
    """Delete each target as `_delete` does, and `said` each one deleted (its Event).

    With pod.slowStart all are expected first and sent at once, as kube-controller-manager's
    ReplicaSet and Job controllers delete a sync's pods in parallel; the first failure
    (other than NotFound) is raised once every delete has ended and been said. Else one
    after another, stopping at the first failure."""
    if not run.slow_starting:
        for replica, obj in targets:
            if _delete(run, replica, obj, own=own, replica_type=replica_type) and said:
                said(replica, obj)
        return
    deletions = [d for d in (_deletion(run, replica, obj, own=own, replica_type=replica_type)
                             for replica, obj in targets) if d is not None]
    outcomes = send_all(run.pool, [partial(_send_deletion, run, d) for d in deletions])
    failure: Exception | None = None
    for deletion, outcome in zip(deletions, outcomes, strict=True):
        try:
            deleted = _deleted(run, deletion, outcome)
        except Exception as exc:
            failure = failure or exc
            continue
        if deleted and said is not None:
            said(deletion.replica, deletion.obj)
    if failure is not None:
        raise failure


def _said_deleted(run: ActionRun, deletion: _Deletion) -> None:
    """The machine's `pod.deletedReason` Event (`Deleted pod: <name>`) for a pod deleted
    before it ended, as kube-controller-manager's pod control says each active pod its job
    and ReplicaSet controllers delete (SuccessfulDelete); an ended pod the engine deletes
    (to replace it) is one those controllers never delete, so it is not said."""
    reason = run.definition.definition.spec.pod.deleted_reason
    phase = (deletion.obj.get("status") or {}).get("phase")
    if reason is None or deletion.resource != PODS or phase in ("Succeeded", "Failed"):
        return
    run.recorder.record(run.job, type="Normal", reason=reason,
                        message=f"Deleted pod: {deletion.obj['metadata']['name']}",
                        replica=None if deletion.replica is None else str(deletion.replica))


def _cleanup_pods(run: ActionRun, policy: Any) -> None:
    chosen = cleanup_policy(policy, run.spec.run_policy)
    for replica in pods_to_clean(chosen, run.facts):
        _delete(run, replica, run.replica_objects.by_replica.get(replica), own=True)
        _delete(run, replica, run.services.by_replica.get(replica), own=False)


def _left_out(run: ActionRun, replica: ReplicaId) -> bool:
    """Whether no replica of the spec owns this one's children any more: the spec no longer
    has it (scaled down or removed types), or it is a pool member waiting for a place
    again (its pool's parallelism was lowered while it had a pod)."""
    spec = run.spec.replica_type(replica.type)
    if spec is None or replica.index >= spec.replicas:
        return True
    return spec.pool and replica not in run.decision.record.replica_states


def _delete_stale(run: ActionRun) -> None:
    """Children no replica owns any more (`_left_out`); a pool member sent back to waiting
    says so in an Event when its pod goes (a user sees why a running pod was deleted)."""
    for claimed, own in ((run.replica_objects, True), (run.services, False)):
        stale: list[Target] = [(replica, obj) for replica, obj in claimed.by_replica.items()
                               if _left_out(run, replica)]
        _delete_all(run, stale, own=own,
                    said=(lambda replica, obj: _said_waiting(run, replica, obj)) if own
                    else None)
        _delete_all(run, [(None, obj) for obj in claimed.unplaced], own=own)
    _delete_surplus(run)


def _said_waiting(run: ActionRun, replica: ReplicaId | None, pod: Obj) -> None:
    """ParallelismLowered, when the pod deleted was a pool member's that waits again."""
    spec = None if replica is None else run.spec.replica_type(replica.type)
    if spec is None or replica is None or not spec.pool or replica.index >= spec.replicas:
        return
    run.recorder.record(
        run.job, type="Normal", reason="ParallelismLowered",
        message=f"{replica} waits for a place again: its pool's parallelism is now "
                f"{spec.at_once}; its pod {pod['metadata']['name']} is deleted.",
        replica=str(replica))


def _delete_surplus(run: ActionRun) -> None:
    """Interchangeable pods beyond their type's replicas, in upstream's order, at most
    BURST_REPLICAS a pass, each said in the machine's `pod.deletedReason` Event
    (`_said_deleted`), or else its older `pod.surplusReason` one."""
    pod_spec = run.definition.definition.spec.pod
    reason = None if pod_spec.deleted_reason else pod_spec.surplus_reason
    surplus = run.replica_objects.surplus
    if len(surplus) > BURST_REPLICAS:
        run.wait_s.append(1.0)
    by_type: dict[str, list[Target]] = {}
    for replica_type, pod in surplus[:BURST_REPLICAS]:
        by_type.setdefault(replica_type, []).append((None, pod))

    def said(_replica: ReplicaId | None, pod: Obj) -> None:
        if reason:
            run.recorder.record(run.job, type="Normal", reason=reason,
                                message=f"Deleted pod: {pod['metadata']['name']}")

    for replica_type, pods in by_type.items():
        _delete_all(run, pods, own=True, replica_type=replica_type, said=said)


def release_tracking(run: ActionRun) -> None:
    """Drop the tracking finalizer of pods whose outcome the written status now holds (a
    spec.child object carries none).

    The removals are sent at once through the run's pool, as the Job controller removes a
    sync's finalizers in parallel: one after another, a wide job's pass waited a round trip
    per ended pod. Each is independent (its own test of the list it read); the first failure
    is raised once every removal has answered."""
    if run.replica_objects.resource != PODS:
        return
    done = run.decision.holds_replicas
    pods = [pod for replica, pod in run.replica_objects.by_replica.items()
            if done or _left_out(run, replica) or replica in run.old_attempt
            or run.facts.get(replica, MISSING).terminal]
    pods.extend(run.replica_objects.unplaced)
    # Only pods still carrying it go to the pool (remove_finalizer would return at once for
    # the rest): every pass of a finished wide job looks at all its pods.
    outcomes = send_all(run.pool, [
        partial(remove_finalizer, run.client, pod, TRACKING_FINALIZER, released=run.released)
        for pod in pods if TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())])
    failure = next((outcome for outcome in outcomes if isinstance(outcome, Exception)), None)
    if failure is not None:
        raise failure


def remove_finalizer(
    client: KubeClient, obj: Obj, finalizer: str, *, resource: Resource = PODS,
    released: ReleasedFinalizers | None = None,
) -> None:
    """A JSON patch that removes one finalizer only if the list is still what we saw;
    not sent again while the cache still shows the copy from before our removal."""
    metadata = obj["metadata"]
    current = list(metadata.get("finalizers") or [])
    if finalizer not in current:
        return
    uid, version = str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or "")
    if released is not None and released.pending(uid, finalizer, version):
        return
    patch = [
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers",
         "value": [f for f in current if f != finalizer]},
    ]
    try:
        patched = client.patch(resource, metadata["name"], patch,
                               namespace=metadata.get("namespace"), patch_type="json")
    except (NotFound, Invalid):
        # Gone, or the list changed since our read: its watch event queues the job again.
        return
    if released is not None:
        released.released(uid, finalizer, str(patched["metadata"].get("resourceVersion") or ""))
