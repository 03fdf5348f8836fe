"""A job's child objects besides pods and services: rendered from its machine, kept in step.

A machine declares the namespaced objects every job of its kind needs (an MPI
hostfile in a ConfigMap, a Secret, a PodGroup) as CEL templates. Each is named
`<job>-<name>`, owned by the job (removed with it by the garbage collector),
created before the pods that may mount it, and replaced when what it is
rendered from changes (an MPI hostfile when Workers are added), unless the machine
says it is made once (`update: Never`: a Secret holding a key pair). A hash of the
rendered object in an annotation says whether it changed, so the API server's
own defaulting never makes it look changed. An object of the same name that
belongs to someone else is never touched: the job's pods wait and an Event says
why (field notes, story 1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    JOB_UID_LABEL,
    JobKey,
    controller_uid,
    owner_reference,
)
from engine.controller.reporting.events import EventRecorder
from engine.controller.reporting.job_log import job_logger, warn_job
from engine.definition import CompiledDefinition, CompiledObject, RenderedObject, render_objects
from engine.definition.cel import CelEvaluationError
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, Conflict, NotFound
from engine.kube.resources import Resource

OBJECT_LABEL = "jobmachine.dev/object"
"""On a child object: its name in the machine (`spec.objects[].name`)."""
HASH_ANNOTATION = "jobmachine.dev/template-hash"
"""On a child object: the hash of what the machine rendered it from."""

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class ObjectRun:
    """What syncing one job's objects needs."""

    client: KubeClient
    recorder: EventRecorder
    key: JobKey
    job: Obj
    definition: CompiledDefinition
    variables: Mapping[str, Any]
    """The job-level CEL variables with the template ones (clusterSpec, hosts)."""
    resources: Mapping[tuple[str, str], Resource]
    """(apiVersion, kind) -> resource, for every kind of child object the engine watches."""
    caches: Mapping[tuple[str, str], Cache]


READY = 0.0
_SOON_S = 1.0
"""An object just written: its watch event usually queues the job sooner."""
_LATER_S = 30.0
"""An object that cannot be made now (a name taken, a value failing): look again later."""


def sync_objects(run: ObjectRun) -> float:
    """Create, replace or delete the job's objects as its machine says. READY (0) when every
    wanted object exists as rendered (pods that may mount them are created only then), else
    how many seconds to wait before trying again."""
    if not run.definition.objects:
        return READY
    try:
        wanted, absent = render_objects(run.definition, run.variables, _kept(run))
    except CelEvaluationError as exc:
        _warn(run, "ObjectTemplateError",
              f"the machine's child objects cannot be computed: {exc}")
        return _LATER_S
    wait = max((_ensure(run, rendered) for rendered in wanted), default=READY)
    for child in absent:
        _remove(run, child)
    return wait


def _kept(run: ObjectRun) -> frozenset[str]:
    """The objects made once (`update: Never`) that exist and are this job's: never rendered
    or written again (Trainer's MPI SSH Secret is immutable)."""
    kept = set()
    for child in run.definition.objects:
        if child.update != "Never":
            continue
        cache = run.caches.get((child.api_version, child.kind))
        existing = None if cache is None else cache.get(
            run.key.namespace, object_name(run.job, child.suffix, child.naming))
        if existing is not None and ours(run.job, existing):
            kept.add(child.name)
    return frozenset(kept)


def object_name(job: Obj, suffix: str, naming: str = "JobNameSuffixed") -> str:
    """The API name of a job's child object: `<job>-<suffix>`, or the job's own name when the
    machine names it so (naming JobName)."""
    if naming == "JobName":
        return str(job["metadata"]["name"])
    return f"{job['metadata']['name']}-{suffix}"


def build_object(job: Obj, rendered: RenderedObject) -> dict[str, Any]:
    """The child object: the machine's fields, our labels, the hash, owned by the job."""
    metadata = job["metadata"]
    body: dict[str, Any] = {
        "apiVersion": rendered.api_version,
        "kind": rendered.kind,
        "metadata": {
            "name": object_name(job, rendered.suffix, rendered.naming),
            "namespace": metadata["namespace"],
            "labels": {
                **rendered.labels,
                JOB_NAME_LABEL: metadata["name"],
                JOB_UID_LABEL: metadata["uid"],
                OBJECT_LABEL: rendered.name,
            },
            "annotations": dict(rendered.annotations),
            "ownerReferences": [owner_reference(job)],
        },
        **rendered.fields,
    }
    body["metadata"]["annotations"][HASH_ANNOTATION] = content_hash(body)
    return body


def content_hash(value: Any) -> str:
    """A short hash of a JSON value (the same content gives the same hash, key order aside):
    what a child was last written from, kept in its annotations so that a change is seen
    without comparing what the API server defaulted."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _ensure(run: ObjectRun, rendered: RenderedObject) -> float:
    located = _located(run, rendered.api_version, rendered.kind)
    if located is None:
        return _LATER_S
    resource, cache = located
    body = build_object(run.job, rendered)
    existing = cache.get(run.key.namespace, body["metadata"]["name"])
    if existing is None:
        return _create(run, resource, body)
    return _update(run, resource, body, existing)


def _create(run: ObjectRun, resource: Resource, body: dict[str, Any]) -> float:
    name = body["metadata"]["name"]
    try:
        run.client.create(resource, body, run.key.namespace)
    except AlreadyExists:
        # Not in the cache: our watch sees only objects labelled for a job. One uncached
        # read says whether it is this job's (adopted now) or someone else's.
        try:
            existing = run.client.get(resource, name, run.key.namespace)
        except NotFound:
            return _SOON_S
        return _update(run, resource, body, existing)
    _log(run).info(f"created {resource.kind.lower()} {name}")
    return READY


def _update(run: ObjectRun, resource: Resource, body: dict[str, Any], existing: Obj) -> float:
    name = body["metadata"]["name"]
    if not ours(run.job, existing):
        _warn(run, "NameConflict", f"{resource.kind} {name} exists and is not this job's: its "
              "pods wait until it is removed or renamed")
        return _LATER_S
    annotations = existing["metadata"].get("annotations") or {}
    same = annotations.get(HASH_ANNOTATION) == body["metadata"]["annotations"][HASH_ANNOTATION]
    if same and controller_uid(existing) is not None:
        return READY
    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    try:
        run.client.replace(resource, name, body, namespace=run.key.namespace)
    except (Conflict, NotFound):
        return _SOON_S
    _log(run).info(f"updated {resource.kind.lower()} {name}: the machine renders it differently")
    return READY


def _remove(run: ObjectRun, child: CompiledObject) -> None:
    """An object whose `when` no longer holds goes (only ours, never another's)."""
    # A kind the server does not serve has nothing of ours to delete: no warning.
    resource = run.resources.get((child.api_version, child.kind))
    cache = run.caches.get((child.api_version, child.kind))
    if resource is None or cache is None:
        return
    existing = cache.get(run.key.namespace, object_name(run.job, child.suffix, child.naming))
    if existing is None or controller_uid(existing) != run.job["metadata"]["uid"]:
        return
    metadata = existing["metadata"]
    try:
        run.client.delete(resource, metadata["name"], metadata["namespace"], uid=metadata["uid"])
    except NotFound:
        return
    _log(run).info(f"deleted {resource.kind.lower()} {metadata['name']}: its `when` is false")


def _located(run: ObjectRun, api_version: str, kind: str) -> tuple[Resource, Cache] | None:
    resource = run.resources.get((api_version, kind))
    cache = run.caches.get((api_version, kind))
    if resource is None or cache is None:
        _warn(run, "ObjectKindNotServed", f"the machine declares a {kind} ({api_version}) "
              "object, which the API server does not serve: install its CRD")
        return None
    return resource, cache


def ours(job: Obj, existing: Obj) -> bool:
    """Owned by this job, or an orphan whose labels name this job (it is adopted on update)."""
    owner = controller_uid(existing)
    if owner is not None:
        return bool(owner == job["metadata"]["uid"])
    labels = existing["metadata"].get("labels") or {}
    return bool(labels.get(JOB_UID_LABEL) == job["metadata"]["uid"])


def _warn(run: ObjectRun, reason: str, message: str) -> None:
    warn_job(run.recorder, run.job, run.key, reason, message)


def _log(run: ObjectRun) -> Any:
    return job_logger(run.key)
