"""One job, its pods (or spec.child objects) and services, and a fake clock: the engine's
reconcile without a cluster.

`World.reconcile()` does what the engine's reconcile does, with the engine's
own code: it reads the record back from the job's status, observes the pods
(failure rules, pods of an older restart attempt, lost nodes), decides,
writes the status it built onto the job, and runs the engine's action
executor against an in-memory API. Only the API server, the kubelet and the
clock are stand-ins, so a simulation or a model check sees the decisions a
real engine would make, including the pod it would build, its back-off before
re-creating a failed replica, and when it would look at the job again. With
spec.child the replicas' objects are children of that kind, deleted in the
foreground (they stay, marked, until `finish_deletion`); what their own machine
writes into their status is the caller's to say (the model checker's child moves).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

import orjson

from engine.controller.machines.registry import Assignment
from engine.controller.reconcile.actions import ActionRun, execute
from engine.controller.reconcile.children import (
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    JobKey,
    ReplicaId,
    attempt_of,
)
from engine.controller.reconcile.claims import Claimed
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import JobSpecView, ValidationVerdicts, read_job_spec
from engine.controller.reconcile.manifests import main_container_name
from engine.controller.reconcile.native_status import is_native, native_status
from engine.controller.reconcile.notices import Notice, notices_for
from engine.controller.reconcile.observe import (
    CHILD_MISSING,
    PodFacts,
    job_observations,
    observe_child,
    observe_replica_pod,
)
from engine.controller.reconcile.record import MachineRecord, read_record
from engine.controller.reconcile.status import build_status
from engine.controller.reconcile.timeouts import next_look, state_timed_out
from engine.controller.reconcile.variables import Surroundings
from engine.controller.reporting.events import EventRecorder
from engine.controller.runtime.expectations import Expectations
from engine.definition import CompiledDefinition, ReferenceTarget, reference_targets
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, NotFound
from engine.kube.resources import PODS, SERVICES, Resource
from engine.kube.timestamps import format_time, parse_time
from engine.settings import EngineSettings
from engine.simulation import kubelet
from engine.simulation.kubelet import Pod

SIMULATED_REVISION = "simulated"
ReferenceKey = tuple[str, str, str, str]
"""(apiVersion, kind, namespace or '', name) of an object a job may name."""
_RECORDS_KEPT = 10_000
"""Records (and spec views) a world and its copies keep (`World.records`,
`World.spec_views`); all are forgotten when full."""


_SHARED = frozenset({"spec", "status"})
"""The parts of the job copies of a world share: nothing changes them in place."""


def reference_key(target: ReferenceTarget) -> ReferenceKey:
    """Where a world keeps the object a reference names."""
    return (target.api_version, target.kind, target.namespace or "", target.name)


@dataclass(frozen=True)
class PostedEvent:
    """An Event the engine posted on the job."""

    type: str
    reason: str
    message: str
    replica: str | None = None


@dataclass(frozen=True)
class Pass:
    """What one reconcile decided and did."""

    decision: Decision
    status: Mapping[str, Any]
    notices: tuple[Notice, ...]
    created: tuple[ReplicaId, ...]
    deleted: tuple[ReplicaId, ...]
    events: tuple[PostedEvent, ...]
    """Every Event of the pass: those of `event` actions, then one per state change."""
    next_look: datetime | None
    """When the engine would look at the job again without being told (None: only when
    something changes): deadlines, timeouts, back-offs, requeue delays."""
    facts: Mapping[ReplicaId, PodFacts] = field(default_factory=dict)
    """The observations the decision was made on."""
    template_errors: tuple[str, ...] = ()
    """Why pods could not be built: each pod value that failed, with its expression."""

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything: a state, a pod, or an Event."""
        return bool(self.decision.fired or self.created or self.deleted or self.events)

    def wakes_a_watch(self, status_before: Any) -> bool:
        """Whether a watch would see the pass: a state, a pod or the job's status written
        (`status_before` is the job's status before it); an Event wakes no one."""
        return bool(self.decision.fired or self.created or self.deleted
                    or self.status != status_before)


class _WorldApi:
    """The few API calls the action executor makes, answered from the world's objects."""

    def __init__(self, world: World) -> None:
        self._world = world
        self.created: list[ReplicaId] = []
        self.deleted: list[ReplicaId] = []

    def create(self, res: Resource, body: dict[str, Any],
               namespace: str | None = None) -> dict[str, Any]:
        store = self._world.store(res)
        replica = _replica_of(body)
        if replica in store:
            raise AlreadyExists(409, "AlreadyExists", f"{replica} has a pod", {})
        self._world.serial += 1
        if "generateName" in body["metadata"]:
            # As the API server names it, but by the replica: a situation repeats as before.
            body["metadata"]["name"] = (
                f"{body['metadata'].pop('generateName')}{replica.index:05d}")
        body["metadata"]["uid"] = f"{self._world.serial:08d}-{replica}"
        if res == PODS:
            kubelet.scheduled(body, self._world.now)
        if store is self._world.pods:
            self.created.append(replica)
        store[replica] = body
        return body

    def delete(self, res: Resource, name: str, namespace: str | None = None, *,
               uid: str | None = None, **_options: Any) -> None:
        store = self._world.store(res)
        for replica, obj in list(store.items()):
            if obj["metadata"]["name"] == name and uid in (None, obj["metadata"]["uid"]):
                if res == PODS:
                    kubelet.mark_deleted(obj, self._world.now)
                    self.deleted.append(replica)
                elif store is self._world.pods:  # a child: deleted in the foreground
                    obj["metadata"]["deletionTimestamp"] = format_time(self._world.now)
                    self.deleted.append(replica)
                else:
                    del store[replica]
                return
        raise NotFound(404, "NotFound", f"{name} not found", {})

    def patch(self, res: Resource, name: str, body: Mapping[str, Any],
              namespace: str | None = None) -> dict[str, Any]:
        """A JSON merge patch of a child (the machine's forced fields, spec.child.fields)."""
        obj = self.get(res, name, namespace)
        if res == SERVICES:  # a service is shared by copies of the world: patch its own
            store = self._world.services
            replica = next(r for r, o in store.items() if o is obj)
            obj = store[replica] = _copied(obj)
        elif "spec" in body and "spec" in obj:  # its spec's values may be a copy's too
            obj["spec"] = _copied(obj["spec"])
        merge_patch(obj, body)
        return obj

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        for obj in self._world.store(res).values():
            if obj["metadata"]["name"] == name:
                return obj
        raise NotFound(404, "NotFound", f"{name} not found", {})


class _Recorder:
    """Keeps the Events the executor posts (`event` actions, warnings)."""

    def __init__(self) -> None:
        self.posted: list[PostedEvent] = []

    def record(self, involved: Mapping[str, Any], *, type: str, reason: str, message: str,
               replica: str | None = None) -> None:
        self.posted.append(PostedEvent(type, reason, message, replica))


def _copied(value: Any) -> Any:
    """A deep copy of JSON data, or of a map of it by replica (much faster than
    `copy.deepcopy`)."""
    if isinstance(value, dict) and value and isinstance(next(iter(value)), ReplicaId):
        return {replica: orjson.loads(orjson.dumps(obj)) for replica, obj in value.items()}
    return orjson.loads(orjson.dumps(value))


def _pods_copied(pods: dict[ReplicaId, Pod]) -> dict[ReplicaId, Pod]:
    """A copy of the pods in which each pod's spec is a map of its own whose values (the
    containers, volumes... the bulk of a pod) are shared: nothing changes a pod's spec but
    the kubelet placing it on a node or losing that node (`nodeName`, a key of the spec
    itself) and a patch (`_WorldApi.patch`, which copies the spec first); the rest of each
    pod is copied deep."""
    copied: dict[ReplicaId, Pod] = {}
    for replica, pod in pods.items():
        spec = pod.get("spec")
        copied[replica] = orjson.loads(orjson.dumps(
            {key: value for key, value in pod.items() if key != "spec"}))
        if spec is not None:
            copied[replica]["spec"] = dict(spec)
    return copied


def merge_patch(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """Merge `patch` into `target` in place: mappings merge, null deletes, the rest replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            merge_patch(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def _replica_of(obj: Mapping[str, Any]) -> ReplicaId:
    labels = obj["metadata"]["labels"]
    return ReplicaId(labels[REPLICA_TYPE_LABEL], int(labels[REPLICA_INDEX_LABEL]))


@dataclass
class World:
    """One job of the kind `definition` governs, its children, and the time."""

    definition: CompiledDefinition
    job: dict[str, Any]
    now: datetime
    settings: EngineSettings = field(default_factory=EngineSettings)
    transitions_kept: int = 100
    """As `EngineSettings.status_last_transitions`; many, so a whole path can be read."""
    pods: dict[ReplicaId, Pod] = field(default_factory=dict)
    services: dict[ReplicaId, dict[str, Any]] = field(default_factory=dict)
    serial: int = 0
    """Objects created so far (each gets a uid of its own)."""
    verdicts: ValidationVerdicts = field(default_factory=ValidationVerdicts)
    """The engine's memory of validation verdicts by uid and generation; copies of a world
    may share it, as the generation tells their specs apart."""
    records: dict[bytes, MachineRecord] = field(default_factory=dict, repr=False)
    """Records read from statuses, by the status's JSON: copies of a world share it, and a
    model check reads the few statuses its situations have thousands of times."""
    spec_views: dict[bytes, JobSpecView] = field(default_factory=dict, repr=False)
    """Views of the job's spec by the job's JSON but for its status: copies share it."""
    keep_native: bool = False
    """Whether to keep, in `native`, the status a Native-layout machine writes into the
    kind's own status (the model checker reads a child's so)."""
    native: dict[str, Any] = field(default_factory=dict)
    """The kind's own status as the last pass wrote it (with `keep_native` only)."""
    referenced: Mapping[ReferenceKey, Mapping[str, Any]] = field(default_factory=dict)
    """The objects of the cluster a job may name through its machine's governs.references
    (a TrainJob's runtimes), by `reference_key`; copies share it, and a change replaces it."""
    _spec: tuple[Any, JobSpecView] | None = field(default=None, init=False, repr=False)
    _record: tuple[Any, MachineRecord] | None = field(default=None, init=False, repr=False)

    def store(self, res: Resource) -> dict[ReplicaId, dict[str, Any]]:
        """The world's pods (or children) or services."""
        return self.services if res == SERVICES else self.pods

    @property
    def spec(self) -> JobSpecView:
        """The job's spec as the engine reads it (read again after each `edit_spec`)."""
        generation = self.job["metadata"].get("generation")
        if self._spec is None or self._spec[0] != generation:
            self._spec = (generation, self._read_spec())
        return self._spec[1]

    def _read_spec(self) -> JobSpecView:
        """`read_job_spec`, answered from `spec_views` for a job read before: the view is a
        pure function of the job but for its status (read too where a validation rule
        mentions `status`), and a model check's branches edit their jobs into the few same
        specs again and again."""
        definition = self.definition
        if any("status" in v.rule.source for v in definition.validations):
            return read_job_spec(self.job, definition, verdicts=self.verdicts)
        key = orjson.dumps({k: v for k, v in self.job.items() if k != "status"},
                           option=orjson.OPT_SORT_KEYS)
        found = self.spec_views.get(key)
        if found is None:
            if len(self.spec_views) >= _RECORDS_KEPT:
                self.spec_views.clear()
            found = self.spec_views[key] = read_job_spec(self.job, definition,
                                                         verdicts=self.verdicts)
        return found

    def edit_spec(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the job's spec as a user would: the server raises the generation. The
        spec changed is a copy (copies of a world share the one they were made with)."""
        self.job["spec"] = _copied(self.job["spec"])
        change(self.job["spec"])
        self.job["metadata"]["generation"] = int(self.job["metadata"].get("generation") or 0) + 1
        # Copies share the verdicts, and two branches' edits reach the same generation.
        self.verdicts.forget(str(self.job["metadata"].get("uid") or ""))

    def copy(self) -> World:
        """An independent copy (the definition and the verdicts are shared, never changed;
        so are the job's status, which a pass replaces and never changes in place, its spec,
        which `edit_spec` replaces, the services, which are made and deleted but changed
        only by a patch (which copies one first), and the values of each pod's spec:
        `_pods_copied`)."""
        job = _copied({k: v for k, v in self.job.items() if k not in _SHARED})
        job.update({k: v for k, v in self.job.items() if k in _SHARED})
        pods = _pods_copied(self.pods) if self.definition.child is None else _copied(self.pods)
        copied = World(self.definition, job, self.now, self.settings,
                       self.transitions_kept, pods, dict(self.services),
                       self.serial, self.verdicts, self.records, self.spec_views,
                       self.keep_native,
                       _copied(self.native), self.referenced)
        copied._spec = self._spec
        copied._record = self._record
        return copied

    def advance_to(self, when: datetime) -> None:
        """Let time pass (it never goes back)."""
        self.now = max(self.now, when)

    def advance(self, seconds: float) -> None:
        self.advance_to(self.now + timedelta(seconds=seconds))

    def observe(self, spec: JobSpecView, attempt: int) -> tuple[dict[ReplicaId, PodFacts], int]:
        """The facts of the pods of restart attempt `attempt`, and how many pods are
        terminating (being deleted, or of another attempt, which is about to be)."""
        facts: dict[ReplicaId, PodFacts] = {}
        terminating = 0
        for replica, pod in sorted(self.pods.items()):
            old_attempt = attempt_of(pod) != attempt
            terminating += old_attempt or bool(pod["metadata"].get("deletionTimestamp"))
            if old_attempt:
                continue
            if self.definition.child is not None:
                facts[replica] = observe_child(pod, job=self.job, definition=self.definition)
                continue
            replica_type = spec.replica_type(replica.type)
            template = replica_type.template if replica_type else {}
            facts[replica] = observe_replica_pod(
                pod, replica_type=replica.type, failure_rules=spec.failure_rules,
                main_container=main_container_name(self.definition, template),
                node_ready=kubelet.node_ready,
                judge_deleted_when_ended=spec.judge_deleted_when_ended,
            )
        if self.definition.child is not None:  # a replica without its object reads childMissing
            for replica_type in spec.replica_types:
                for index in range(replica_type.replicas):
                    facts.setdefault(ReplicaId(replica_type.name, index), CHILD_MISSING)
        return facts, terminating

    def reconcile(self) -> Pass:
        """One pass of the engine: observe, decide, write status, act."""
        status = self.job.get("status") or {}
        spec = self.spec
        record = self.record
        facts, terminating = self.observe(spec, record.restart_attempt)
        surroundings = Surroundings(objects={c.name: {} for c in self.definition.objects},
                                    references=self.references())
        observations = job_observations(self.job, spec, start_time=status.get("startTime"),
                                        now=self.now, terminating_pods=terminating)
        if state_timed_out(self.definition, self.job, spec=spec, record=record, facts=facts,
                           surroundings=surroundings, now=self.now):
            observations |= {"timedOut"}
        decision = decide(self.definition, self.job, spec, record, facts,
                          job_observations=observations, now=format_time(self.now),
                          transitions_kept=self.transitions_kept, surroundings=surroundings)
        assignment = Assignment(self.definition.name, SIMULATED_REVISION, self.definition)
        self.job["status"] = build_status(self.job, assignment, spec, decision,
                                          now=format_time(self.now))
        # The status holds the record the pass decided on (`read_record` of it gives that
        # record back, field for field): kept as it is rather than parsed back.
        self._record = (self.job["status"], decision.record)
        if self.keep_native and is_native(self.definition):
            self.native = native_status(self.definition, self.job["status"], decision.variables)
        notices = notices_for(decision.fired, facts)
        api, recorder = _WorldApi(self), _Recorder()
        run = self._act(spec, decision, facts, api, recorder)
        events = (*recorder.posted, *(PostedEvent(n.type, n.reason, n.message, n.replica)
                                      for n in notices))
        return Pass(decision, self.job["status"], tuple(notices), tuple(api.created),
                    tuple(api.deleted), events, self._next_look(spec, decision, run), facts,
                    tuple(error.cause for error in run.template_errors))

    def _act(self, spec: JobSpecView, decision: Decision, facts: Mapping[ReplicaId, PodFacts],
             api: _WorldApi, recorder: _Recorder) -> ActionRun:
        metadata = self.job["metadata"]
        attempt = decision.record.restart_attempt
        run = ActionRun(
            # The executor's client and recorder are stand-ins answering from the world:
            # only the calls the executor makes (create, delete, get, record) are needed.
            client=cast(KubeClient, api), expectations=Expectations(),
            recorder=cast(EventRecorder, recorder), settings=self.settings,
            key=JobKey(self.job["kind"], metadata["namespace"], metadata["name"]),
            job=self.job, definition=self.definition, spec=spec, decision=decision,
            replica_objects=Claimed(dict(self.pods), resource=self.replica_resource),
            services=Claimed(dict(self.services)),
            facts=facts, now=self.now,
            old_attempt=frozenset(r for r, p in self.pods.items() if attempt_of(p) != attempt),
        )
        execute(run)
        return run

    def _next_look(self, spec: JobSpecView, decision: Decision, run: ActionRun
                   ) -> datetime | None:
        """When the engine's scheduler would wake the job, as the reconcile asks it to."""
        state = decision.record.state
        status = self.job["status"]
        if state is not None and self.definition.job.states[state].terminal:
            return None
        look = next_look(self.definition, spec, status, decision, wait_s=run.wait_s,
                         now=self.now)
        wakes = [*look.wake_ups.values(),
                 *(self.now + timedelta(seconds=delay) for delay in look.delays)]
        return min(wakes) if wakes else None

    def references(self) -> dict[str, Mapping[str, Any]]:
        """Each object the job names through governs.references, as the engine resolves
        it: the world's object it names, `{}` while absent or when it cannot be named."""
        found: dict[str, Mapping[str, Any]] = {}
        for name, target in reference_targets(self.definition, self.job).items():
            found[name] = ({} if isinstance(target, str)
                           else self.referenced.get(reference_key(target), {}))
        return found

    @property
    def replica_resource(self) -> Resource:
        """What the replicas' own objects are: pods, or spec.child's kind (its plural only
        names it here: the world's API answers by kind)."""
        child = self.definition.child
        if child is None:
            return PODS
        group, _, version = child.api_version.rpartition("/")
        return Resource(group, version, f"{child.kind.lower()}s", child.kind)

    @property
    def record(self) -> MachineRecord:
        """The engine's record, as the job's status holds it."""
        status = self.job.get("status") or {}
        if self._record is None or self._record[0] is not status:
            self._record = (status, self._read_record(status))
        return self._record[1]

    def _read_record(self, status: Mapping[str, Any]) -> MachineRecord:
        """`read_record`, answered from `records` for a status read before (equal JSON,
        equal record: reading it is a pure function of the status)."""
        try:
            text = orjson.dumps(status)
        except TypeError:
            return read_record(status)
        found = self.records.get(text)
        if found is None:
            if len(self.records) >= _RECORDS_KEPT:
                self.records.clear()
            found = self.records[text] = read_record(status)
        return found

    def state(self) -> str | None:
        """The job's state, as its status records it."""
        return self.record.state

    def ended(self) -> bool:
        """Whether the job is in a terminal state."""
        state = self.state()
        return state is not None and bool(self.definition.job.states[state].terminal)

    def remove_deleted_pods(self) -> list[ReplicaId]:
        """The pods being deleted are gone (their containers stopped, finalizers released)."""
        gone = [r for r, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]
        for replica in gone:
            del self.pods[replica]
        return gone

    def finish_deletion(self, replica: ReplicaId) -> bool:
        """The kubelet is done with a pod being deleted: it is gone, unless the engine
        judges deleted pods once they ended and this one has not: then the kubelet stops
        it (`kubelet.stop`), and it stays until the engine has seen how it ended (as its
        tracking finalizer keeps it). Whether the pod is gone."""
        pod = self.pods[replica]
        if (self.definition.child is None and self.spec.judge_deleted_when_ended
                and not kubelet.has_ended(pod)):
            kubelet.stop(pod, self.now)
            return False
        del self.pods[replica]
        return True

    def completed_at(self) -> datetime | None:
        """When the job reached its terminal condition, from status.completionTime."""
        finished = (self.job.get("status") or {}).get("completionTime")
        return None if finished is None else parse_time(finished)
