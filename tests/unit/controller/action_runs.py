"""One pass of the action executor (engine.controller.reconcile.actions) over a job the
engine's own decide has judged, against a stand-in API server that notes every request and
answers each as the test says: the tests of what the executor sends, in what order, with
which preconditions, and what it says (Events, log lines) and waits for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, cast

from loguru import logger

from engine.controller.reconcile.actions import ActionRun
from engine.controller.reconcile.children import JobKey, ReplicaId
from engine.controller.reconcile.claims import Claimed
from engine.controller.reconcile.decide import Decision, Planned
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reporting.events import EventRecorder
from engine.controller.runtime.expectations import Expectations
from engine.controller.runtime.freshness import ReleasedFinalizers
from engine.definition import CompiledDefinition
from engine.definition.step import PlannedAction
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import PODS, Resource
from engine.settings import EngineSettings
from engine.simulation.world import World
from tests.scenarios.world import DEFINITIONS, T0

JOB_UID = "uid-train"


@dataclass
class Api:
    """Notes each request as (verb, plural, name, details); answers a create with the body
    and a uid, a get with `existing[name]` (else NotFound), and raises `refuse[(verb,
    name)]` when the test gives one."""

    existing: dict[str, dict[str, Any]] = field(default_factory=dict)
    refuse: dict[tuple[str, str], Exception] = field(default_factory=dict)
    sent: list[tuple[str, str, str, Any]] = field(default_factory=list)

    def _note(self, verb: str, resource: Resource, name: str, details: Any) -> None:
        self.sent.append((verb, resource.plural, name, details))
        error = self.refuse.get((verb, name))
        if error is not None:
            raise error

    def create(self, resource: Resource, body: dict[str, Any], namespace: str
               ) -> dict[str, Any]:
        name = body["metadata"].get("name") or body["metadata"].get("generateName", "")
        self._note("create", resource, name, namespace)
        return {**body, "metadata": {**body["metadata"], "name": name, "uid": f"uid-{name}"}}

    def get(self, resource: Resource, name: str, namespace: str | None = None
            ) -> dict[str, Any]:
        self._note("get", resource, name, namespace)
        if name not in self.existing:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        return self.existing[name]

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
               uid: str | None = None, propagation_policy: str | None = None) -> None:
        self._note("delete", resource, name, (namespace, uid, propagation_policy))

    def patch(self, resource: Resource, name: str, body: Any, *, namespace: str | None = None,
              patch_type: str = "merge") -> dict[str, Any]:
        self._note("patch", resource, name, (namespace, body, patch_type))
        return {"metadata": {"name": name, "resourceVersion": "9"}}

    def verbs(self, verb: str) -> list[str]:
        """The names of the objects sent `verb`, in order."""
        return [name for v, _, name, _ in self.sent if v == verb]


@dataclass(frozen=True)
class Said:
    """One Event, as the recorder was asked for it."""

    about: str
    type: str
    reason: str
    message: str
    replica: str | None


@dataclass
class Recorder:
    said: list[Said] = field(default_factory=list)

    def record(self, involved: Mapping[str, Any], *, type: str, reason: str, message: str,
               replica: str | None = None) -> None:
        self.said.append(Said(involved["metadata"]["name"], type, reason, message, replica))


def world_of(job: dict[str, Any], definition: CompiledDefinition | None = None) -> World:
    """The engine's simulated world of `job` (a job of tests.scenarios.world), at T0, under
    `definition` (the shipped machine of its kind when None)."""
    job["metadata"]["uid"] = JOB_UID
    return World(definition or DEFINITIONS[job["kind"]], job, T0)


def judged(world: World, **changes: Any) -> tuple[Decision, Mapping[ReplicaId, PodFacts]]:
    """The decision of one pass of `world` as its pods are now (with `changes` to it), and
    the facts it was made on; the pass's own acts land in the world, not in a test's Api."""
    played = world.reconcile()
    return replace(played.decision, **changes), played.facts


def planned(name: str, replica: ReplicaId | None = None, **args: Any) -> Planned:
    return Planned(PlannedAction(name, args), replica)


def action_run(world: World, decision: Decision, api: Api, recorder: Recorder, *,
               pods: Mapping[ReplicaId, dict[str, Any]] | None = None,
               services: Mapping[ReplicaId, dict[str, Any]] | None = None,
               facts: Mapping[ReplicaId, PodFacts] | None = None,
               unplaced: tuple[dict[str, Any], ...] = (),
               old_attempt: frozenset[ReplicaId] = frozenset(),
               expectations: Expectations | None = None,
               now: datetime = T0, **fields: Any) -> ActionRun:
    """A pass of the executor over `world`'s job and `decision`, the pods and services given
    claimed by their replicas."""
    metadata = world.job["metadata"]
    return ActionRun(
        client=cast(KubeClient, api), expectations=expectations or Expectations(),
        recorder=cast(EventRecorder, recorder), settings=EngineSettings(),
        key=JobKey(world.job["kind"], metadata["namespace"], metadata["name"]),
        job=world.job, definition=world.definition, spec=world.spec, decision=decision,
        replica_objects=Claimed(dict(pods or {}), unplaced=unplaced,
                                resource=fields.pop("resource", PODS)),
        services=Claimed(dict(services or {})), facts=facts or {}, now=now,
        old_attempt=old_attempt, released=ReleasedFinalizers(), **fields)


def obj(name: str, *, uid: str | None = None, owner: str | None = JOB_UID,
        **metadata: Any) -> dict[str, Any]:
    """An object named `name` in the job's namespace, controlled by `owner` (None: none)."""
    found: dict[str, Any] = {"name": name, "namespace": "team", "uid": uid or f"uid-{name}",
                             **metadata}
    if owner is not None:
        found["ownerReferences"] = [{"controller": True, "uid": owner}]
    return {"metadata": found}


@contextmanager
def logged(job: str = "team/train") -> Iterator[list[tuple[str, str, dict[str, Any]]]]:
    """Every log line about `job` (bound to it) written meanwhile, as (level, message, bound
    values). Loguru's sinks are process-wide: only that job's lines."""
    lines: list[tuple[str, str, dict[str, Any]]] = []
    sink = logger.add(lambda m: lines.append(
        (m.record["level"].name, m.record["message"],
         dict(m.record["extra"]))), level="DEBUG",
        filter=lambda record: record["extra"].get("job") == job)
    try:
        yield lines
    finally:
        logger.remove(sink)
