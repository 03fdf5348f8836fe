"""The machine controller: StateMachine objects in, machines in force and kinds watched out.

Any change to a StateMachine, a CRD or a kept revision queues one key; a sync
judges every machine (they are few, and judgements are remembered by content),
keeps new revisions, writes each machine's status, publishes what is in force
to the registry, tells the engine which job kinds to watch, requeues the jobs
of kinds whose machine changed, and deletes revisions no job needs any more.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from loguru import logger

from engine.controller.machines.admission import (
    Judge,
    Judgement,
    KeptRevision,
    MachineVerdict,
    verdicts,
)
from engine.controller.machines.registry import (
    Governed,
    MachineRegistry,
    Unassigned,
    recorded_revision,
)
from engine.controller.machines.revisions import (
    CONTROLLER_REVISIONS,
    MACHINE_LABEL,
    generation_of,
    governed_by,
    machine_of,
    revision_object,
)
from engine.controller.machines.served import (
    CRDS,
    crd_schema_lookup,
    project_crd,
    served_resources,
)
from engine.controller.machines.status import announce, machine_status, write_machine_status
from engine.controller.reporting.events import EventRecorder
from engine.controller.runtime.queue import WorkQueue
from engine.controller.runtime.scheduler import utc_now
from engine.controller.runtime.workers import Outcome, RequeueAfter, Retry, run_workers
from engine.definition import CompiledDefinition
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, Conflict, NotFound, Unavailable
from engine.kube.informer import Informer
from engine.kube.resources import BUILTIN_CHILDREN, STATE_MACHINES, Resource
from engine.kube.timestamps import format_time

Obj = Mapping[str, Any]
_SYNC = "machines"
_LOOK_AGAIN_S = 60.0
"""How often revisions no job needs are looked for, without any event."""


class MachineController:
    """Judges StateMachine objects and publishes what is in force (writes only while leading)."""

    def __init__(
        self,
        client: KubeClient,
        registry: MachineRegistry,
        recorder: EventRecorder,
        *,
        system_namespace: str,
        revision_grace_s: float,
        watch_kinds: Callable[[Mapping[str, Resource]], None],
        watch_objects: Callable[
            [Mapping[tuple[str, str], Resource], frozenset[tuple[str, str]]], None],
        enqueue_kind: Callable[[str], None],
        jobs: Callable[[], Iterable[tuple[str, Obj]]],
        kind_synced: Callable[[str], bool],
        may_write: Callable[[], bool] = lambda: True,
    ) -> None:
        """`may_write` says whether this replica writes revisions and machine status (with
        sharded engines, only the holder of shard 0 does; every replica still judges)."""
        self._client = client
        self._registry = registry
        self._recorder = recorder
        self._namespace = system_namespace
        self._grace_s = revision_grace_s
        self._watch_kinds = watch_kinds
        self._watch_objects = watch_objects
        self._enqueue_kind = enqueue_kind
        self._jobs = jobs
        self._kind_synced = kind_synced
        self._may_write = may_write
        self.machines = Cache()
        self.crds = Cache(project_crd)
        self.revisions = Cache()
        self._judge = Judge()
        self._queue: WorkQueue[str] = WorkQueue()
        self._superseded: dict[str, float] = {}
        self._answers: dict[str, object] = {}
        """Kind -> the revision in force, or why there is none, as of the last sync."""
        self._kept_kinds: dict[str, str] = {}
        """Kept revision -> the kind it governs, as of the last sync."""
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._log = logger.bind(component="machines")

    def informers(self) -> list[Informer]:
        """The watches the controller needs; the engine starts and stops them."""
        return [
            Informer(self._client, STATE_MACHINES, cache=self.machines, handler=self._changed),
            Informer(self._client, CRDS, cache=self.crds, handler=self._changed),
            Informer(self._client, CONTROLLER_REVISIONS, namespace=self._namespace,
                     cache=self.revisions, handler=self._changed, label_selector=MACHINE_LABEL),
        ]

    def _changed(self, _event: str, _old: Obj | None, _new: Obj | None) -> None:
        self._queue.add(_SYNC)

    def resync(self) -> None:
        """Sync again soon (this replica may write now)."""
        self._queue.add(_SYNC)

    def start_working(self) -> None:
        """Sync once now (the registry is filled before any job is reconciled), then on change.
        A first sync the server refuses for now is tried again by the worker, with back-off
        (jobs wait for the registry meanwhile)."""
        self._stop.clear()
        self._queue = WorkQueue()
        if isinstance(self.sync(), Retry):
            self._queue.add(_SYNC)
        self._worker = threading.Thread(
            target=run_workers, args=(self._queue, lambda _key: self.sync()),
            kwargs={"workers": 1, "stop": self._stop}, name="jobmachine-machines", daemon=True,
        )
        self._worker.start()

    def stop_working(self) -> None:
        self._stop.set()
        self._queue.shut_down()
        if self._worker is not None:
            self._worker.join()

    def sync(self) -> Outcome:
        """One pass over every machine; see the module docstring."""
        objects = self.machines.list()
        crds = self.crds.list()
        judged = self._judge.judge(objects, crd_schema_lookup(crds))
        revisions: dict[str, Obj] = {r["metadata"]["name"]: r for r in self.revisions.list()}
        kept = {name: _kept(rev) for name, rev in revisions.items()}
        served = served_resources(crds)
        decided = verdicts(objects, judged, kept, served)
        try:
            revisions |= self._keep_new_revisions(decided, revisions)
            self._write_statuses(objects, decided)
        except (Conflict, NotFound, Unavailable) as exc:
            return Retry(exc)
        governed = {
            v.governs[1]: Governed(v.name, v.current_revision, v.resource)
            for v in decided.values()
            if v.governing.status == "True" and v.governs and v.current_revision and v.resource
        }
        watched = {kind: g.resource for kind, g in governed.items()}
        named = _named(objects)
        for api_version, kind in [governed_by(rev) for rev in revisions.values()] + list(
            named.values()
        ):
            if (api_version, kind) in served and kind not in watched:
                watched[kind] = served[(api_version, kind)]
        refused = _refusals(watched, governed, decided, named, revisions)
        self._registry.update(
            governed=governed, refused=refused, watched=watched, revisions=revisions,
            compiled=_compiled(decided, judged),
        )
        self._watch_kinds(watched)
        documents = _documents(judged, revisions)
        self._watch_objects(_object_kinds(documents, served), _child_kinds(documents))
        self._requeue_changed(governed, refused, revisions)
        self._collect(decided, revisions, governed, served)
        return RequeueAfter(_LOOK_AGAIN_S)

    def _keep_new_revisions(
        self, decided: Mapping[str, MachineVerdict], revisions: Mapping[str, Obj]
    ) -> dict[str, Obj]:
        """Create the ControllerRevision of every newly valid machine; the ones created."""
        created: dict[str, Obj] = {}
        for verdict in decided.values():
            if verdict.new_revision is None or verdict.current_revision in revisions:
                continue
            numbers = [int(r.get("revision") or 0) for r in revisions.values()
                       if machine_of(r) == verdict.name]
            body = revision_object(verdict.new_revision, namespace=self._namespace,
                                   number=max(numbers, default=0) + 1,
                                   generation=verdict.generation)
            if self._may_write():
                with contextlib.suppress(AlreadyExists):
                    self._client.create(CONTROLLER_REVISIONS, body, self._namespace)
                    self._log.info(f"machine {verdict.name}: kept revision "
                                   f"{body['metadata']['name']}")
            created[body["metadata"]["name"]] = body
        return created

    def _write_statuses(
        self, objects: Iterable[Obj], decided: Mapping[str, MachineVerdict]
    ) -> None:
        if not self._may_write():
            return
        now = format_time(utc_now())
        for obj in objects:
            verdict = decided[obj["metadata"]["name"]]
            status = machine_status(obj, verdict, now=now)
            if status == (obj.get("status") or {}):
                continue
            write_machine_status(self._client, obj, status)
            announce(self._recorder, obj, verdict)

    def _requeue_changed(
        self,
        governed: Mapping[str, Governed],
        refused: Mapping[str, Unassigned],
        revisions: Mapping[str, Obj],
    ) -> None:
        """Jobs of a kind look again when what they may run with changed: the revision in
        force, why there is none, or a kept revision (one deleted, or back)."""
        answers: dict[str, object] = {kind: (g.machine, g.revision) for kind, g in governed.items()}
        answers |= {kind: (u.reason, u.message) for kind, u in refused.items()}
        kept = {name: governed_by(rev)[1] for name, rev in revisions.items()}
        changed = {kind for kind in answers.keys() | self._answers.keys()
                   if answers.get(kind) != self._answers.get(kind)}
        changed |= {kind for _, kind in kept.items() ^ self._kept_kinds.items()}
        for kind in sorted(changed):
            self._enqueue_kind(kind)
        self._answers, self._kept_kinds = answers, kept

    def _collect(
        self,
        decided: Mapping[str, MachineVerdict],
        revisions: Mapping[str, Obj],
        governed: Mapping[str, Governed],
        served: Mapping[tuple[str, str], Resource],
    ) -> None:
        """Delete revisions no machine has in force and no job runs with, after a grace period
        (a job may be recording one right now); keep the newest of a kind nobody governs, so
        the engine still watches that kind and tells its new jobs why they do not start."""
        if not self._may_write():
            return
        needed = {v.current_revision for v in decided.values() if v.current_revision}
        needed |= _tombstones(revisions, governed, served)
        for _kind, job in self._jobs():
            recorded = recorded_revision(job)
            if recorded is not None:
                needed.add(recorded[1])
        now = time.monotonic()
        served_kinds = {kind for _, kind in served}
        for name, rev in revisions.items():
            kind = governed_by(rev)[1]
            unsure = kind in served_kinds and not self._kind_synced(kind)
            if name in needed or unsure:
                self._superseded.pop(name, None)
                continue
            since = self._superseded.setdefault(name, now)
            if now - since < self._grace_s:
                continue
            with contextlib.suppress(NotFound):
                self._client.delete(CONTROLLER_REVISIONS, name, self._namespace)
                self._log.info(f"deleted revision {name}: no machine has it in force and no "
                               "job runs with it")
            self._superseded.pop(name, None)


def _kept(revision: Obj) -> KeptRevision:
    return KeptRevision(revision["metadata"]["name"], machine_of(revision), governed_by(revision),
                        generation_of(revision))


def _compiled(
    decided: Mapping[str, MachineVerdict],
    judged: Mapping[str, tuple[Judgement, tuple[str, ...]]],
) -> dict[str, CompiledDefinition]:
    """Revisions compiled while judging: the ones valid now, in force for their machine."""
    found: dict[str, CompiledDefinition] = {}
    for name, verdict in decided.items():
        judgement = judged[name][0]
        in_force = verdict.new_revision is not None or verdict.accepted.status == "True"
        if verdict.current_revision and judgement.compiled is not None and in_force:
            found[verdict.current_revision] = judgement.compiled
    return found


def _refusals(
    watched: Mapping[str, Resource],
    governed: Mapping[str, Governed],
    decided: Mapping[str, MachineVerdict],
    named: Mapping[str, tuple[str, str]],
    revisions: Mapping[str, Obj],
) -> dict[str, Unassigned]:
    """Why new jobs of a watched kind that no machine governs do not start."""
    refused: dict[str, Unassigned] = {}
    for kind in watched:
        if kind in governed:
            continue
        invalid = [v for v in decided.values() if v.accepted.status == "False"
                   and v.name in named and named[v.name][1] == kind]
        machines = sorted({machine_of(r) for r in revisions.values() if governed_by(r)[1] == kind})
        if invalid:
            refused[kind] = Unassigned(
                "StateMachineNotAccepted",
                f"no StateMachine governs {kind}: machine {invalid[0].name} is not accepted "
                f"({invalid[0].accepted.message}); new jobs start once a machine governs {kind}",
            )
        else:
            gone = ", ".join(machines) or "its machine"
            refused[kind] = Unassigned(
                "NoStateMachine",
                f"no StateMachine governs {kind} ({gone} was deleted): new jobs start once a "
                "machine governs it; jobs already running finish with the revision they "
                "started with",
            )
    return refused


def _named(objects: Iterable[Obj]) -> dict[str, tuple[str, str]]:
    """Machine -> (apiVersion, kind) its object names in governs, valid or not: a kind whose
    only machine is refused is watched too, so its jobs can be told why they wait."""
    found = {}
    for obj in objects:
        governs = (obj.get("spec") or {}).get("governs")
        if isinstance(governs, Mapping) and governs.get("kind"):
            found[obj["metadata"]["name"]] = (str(governs.get("apiVersion")),
                                              str(governs["kind"]))
    return found


def _documents(
    judged: Mapping[str, tuple[Judgement, tuple[str, ...]]], revisions: Mapping[str, Obj]
) -> list[Obj]:
    """The machine documents in force now, and those of revisions jobs may still run with."""
    documents = [j.document for j, _ in judged.values() if j.document is not None]
    return [*documents, *(r.get("data") or {} for r in revisions.values())]


def _object_kinds(
    documents: Sequence[Obj], served: Mapping[tuple[str, str], Resource],
) -> dict[tuple[str, str], Resource]:
    """(apiVersion, kind) -> resource of every kind of child object a machine declares
    (spec.objects, spec.child; kinds not served are left out)."""
    wanted = set()
    for document in documents:
        spec = document.get("spec") or {}
        declared = [*(spec.get("objects") or ()), spec.get("child")]
        wanted |= {(str(o.get("apiVersion")), str(o.get("kind")))
                   for o in declared if isinstance(o, Mapping)}
    known = {**{k: r for k, r in served.items() if r.namespaced}, **BUILTIN_CHILDREN}
    return {key: known[key] for key in wanted if key in known}


def _child_kinds(documents: Sequence[Obj]) -> frozenset[tuple[str, str]]:
    """(apiVersion, kind) of every spec.child: the kinds whose objects are replicas, so that
    their appearance meets a creation the engine expects (a declared object's does not)."""
    children = [(document.get("spec") or {}).get("child") for document in documents]
    return frozenset((str(c.get("apiVersion")), str(c.get("kind")))
                     for c in children if isinstance(c, Mapping))


def _tombstones(
    revisions: Mapping[str, Obj],
    governed: Mapping[str, Governed],
    served: Mapping[tuple[str, str], Resource],
) -> set[str]:
    """The newest revision of each served kind no machine governs any more."""
    newest: dict[str, tuple[int, str]] = {}
    for name, rev in revisions.items():
        api_version, kind = governed_by(rev)
        if kind in governed or (api_version, kind) not in served:
            continue
        number = int(rev.get("revision") or 0)
        if kind not in newest or newest[kind] < (number, name):
            newest[kind] = (number, name)
    return {name for _, name in newest.values()}


