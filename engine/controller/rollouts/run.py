"""A job's rollout against the API: read its revisions, ask plan.py, act, write the status.

Runs after the job's machine has stepped and its status is written, once per reconcile,
as a schedule does. The revisions are read from the watch cache of their kind, which
must be a kind the engine governs (a Deployment's ReplicaSets are run by the replicaset
machine): a revision's every change then queues its owner again. Operations are applied
in the plan's order on the versions read (a conflict is raised for the work queue's
back-off: the next sync decides again on fresh reads); a create whose name is taken by an
object of another template counts a hash collision, so the next sync names it anew.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine.controller.reconcile.children import JobKey, controller_uid
from engine.controller.reconcile.claims import AdoptionGuard
from engine.controller.reconcile.native_status import NATIVE_STATUS, replace_native_status
from engine.controller.reporting.events import EventRecorder
from engine.controller.reporting.job_log import job_logger, warn_job
from engine.controller.rollouts.claims import claim_revisions
from engine.controller.rollouts.plan import RolloutInput, RolloutPlan, plan_rollout
from engine.controller.rollouts.revisions import (
    REVISION_ANNOTATION,
    ROLLOUT_STATUS_FIELDS,
    Create,
    Delete,
    Revision,
    Update,
    comparable_template,
)
from engine.definition import CompiledRollout, render_rollout
from engine.definition.cel import CelEvaluationError
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Forbidden, Invalid, NotFound
from engine.kube.resources import Resource
from engine.kube.timestamps import format_time

Obj = Mapping[str, Any]
_LATER = timedelta(seconds=30)
"""A rollout that cannot run now (its values fail, its child kind is not governed, its
revision's create is refused)."""
COLLISION = "collision"
"""Why a revision was not made: its name is taken by another template."""


@dataclass(frozen=True)
class RolloutRun:
    """What one sync of a job's rollout needs."""

    client: KubeClient
    recorder: EventRecorder
    key: JobKey
    job: Obj
    """The job as its status write left it (an engine view: NATIVE_STATUS holds its own)."""
    resource: Resource
    """The job's own resource (its status is written through it)."""
    rollout: CompiledRollout
    variables: Mapping[str, Any]
    children: tuple[Resource, Cache] | None
    """The resource and watch cache of the revisions' kind; None when the engine does not
    govern it."""
    now: datetime
    pods: Cache
    """The pod watch cache: a revision's pods, by owner (Recreate waits for them to end)."""


@dataclass(frozen=True)
class RolloutOutcome:
    """What a sync leaves: when to look again (None: only when something changes), and
    the job as its last write returned it (None: not written)."""

    wake_at: datetime | None
    written: Obj | None = None


def sync_rollout(run: RolloutRun) -> RolloutOutcome:
    """One sync of the job's rollout."""
    try:
        rollout = render_rollout(run.rollout, run.variables)
    except CelEvaluationError as exc:
        _warn(run, "RolloutTemplateError", f"the machine's rollout cannot be computed: {exc}")
        return RolloutOutcome(run.now + _LATER)
    if run.children is None:
        _warn(run, "ChildKindNotGoverned", f"the rollout makes {run.rollout.kind} "
              f"({run.rollout.api_version}) objects, which no machine of this engine runs")
        return RolloutOutcome(run.now + _LATER)
    resource, cache = run.children
    guard = AdoptionGuard(run.client, run.resource, run.job)
    children = [Revision.of(obj, _running(run.pods, obj)) for obj in claim_revisions(
        run.client, resource, cache, run.job, selector=rollout.selector, guard=guard)]
    stored = dict(run.job.get(NATIVE_STATUS) or {})
    plan = plan_rollout(RolloutInput(job=run.job, stored=stored, children=children,
                                     rollout=rollout, now=run.now))
    versions: dict[str, str] = {}  # a revision updated twice in one sync: its new version
    for operation in plan.operations:
        if isinstance(operation, Create) and (failure := _create(run, resource, operation)):
            not_made(run, plan, stored, str(operation.body["metadata"]["name"]), failure)
            break
        if isinstance(operation, Update):
            versions[operation.name] = _update(
                run, resource, operation, versions.get(operation.name, operation.resource_version))
        if isinstance(operation, Delete):
            _delete(run, resource, operation)
    for notice in plan.notices:
        run.recorder.record(run.job, type=notice.type, reason=notice.reason,
                            message=notice.message)
    written = _write(run, stored, plan)
    return RolloutOutcome(plan.wake_at, written)


def _running(pods: Cache, revision: Obj) -> int:
    """The revision's pods (its controller reference) that have not ended."""
    uid = revision["metadata"].get("uid")
    return sum(1 for pod in pods.by_owner(str(uid)) if controller_uid(pod) == uid
               and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def _create(run: RolloutRun, resource: Resource, creation: Create) -> str:
    """Make the revision; '' when it is made, else why not: COLLISION when its name is
    taken by another template, or the API server's refusal. One of this job's with the
    same template (made by an earlier try the cache has not shown yet) is taken as made."""
    name = str(creation.body["metadata"]["name"])
    try:
        run.client.create(resource, dict(creation.body), run.key.namespace)
    except AlreadyExists:
        try:
            found = run.client.get(resource, name, run.key.namespace)
        except NotFound:
            return ""  # deleted in between: the next sync makes it again
        same = comparable_template((found.get("spec") or {}).get("template") or {}) == \
            comparable_template(creation.body["spec"]["template"])
        if controller_uid(found) == run.job["metadata"]["uid"] and same:
            return ""
        _log(run).info(f"{resource.kind} {name} exists with another template: a hash "
                       "collision, the next sync picks another name")
        return COLLISION
    except (Invalid, Forbidden) as exc:
        return exc.message
    _log(run).info(f"created {resource.kind.lower()} {name} with {creation.replicas} replicas")
    return ""


def not_made(run: RolloutRun, plan: RolloutPlan, stored: dict[str, Any], name: str,
              failure: str) -> None:
    """A revision not made: no Event says it was scaled up; a collision is counted (the
    next name differs); a refusal is upstream's Warning ReplicaSetCreateError, and
    Progressing False with its words where the job has a progress deadline."""
    plan.notices = [n for n in plan.notices if f" replica set {name} " not in n.message]
    if failure == COLLISION:
        stored["collisionCount"] = int(stored.get("collisionCount") or 0) + 1
        plan.status = {**plan.status, "collisionCount": stored["collisionCount"]}
        return
    message = f'Failed to create new replica set "{name}": {failure}'
    _warn(run, "ReplicaSetCreateError", message)
    plan.wake_at = run.now + _LATER
    conditions = list(plan.status.get("conditions") or ())
    progressing = next((c for c in conditions if c.get("type") == "Progressing"), None)
    if progressing is None:
        return  # no progress deadline: no Progressing condition
    now = format_time(run.now)
    before: Mapping[str, Any] = next((c for c in stored.get("conditions") or ()
                   if c.get("type") == "Progressing"), {})
    since = before.get("lastTransitionTime") if before.get("status") == "False" else now
    conditions = [c for c in conditions if c.get("type") != "Progressing"]
    conditions.append({"type": "Progressing", "status": "False", "lastUpdateTime": now,
                       "lastTransitionTime": since or now, "reason": "ReplicaSetCreateError",
                       "message": message})
    plan.status = {**plan.status, "conditions": conditions}


def _update(run: RolloutRun, resource: Resource, update: Update, version: str) -> str:
    """Patch the revision on `version`; the version the patch leaves."""
    patch = {"metadata": {"resourceVersion": version,
                          "annotations": dict(update.annotations)},
             "spec": {"replicas": update.replicas, "minReadySeconds": update.min_ready_seconds}}
    patched = run.client.patch(resource, update.name, patch, namespace=run.key.namespace,
                               patch_type="merge")
    if update.replicas != update.scaled_from:
        _log(run).info(f"scaled {resource.kind.lower()} {update.name} from "
                       f"{update.scaled_from} to {update.replicas}")
    return str(patched["metadata"]["resourceVersion"])


def _delete(run: RolloutRun, resource: Resource, deletion: Delete) -> None:
    try:
        run.client.delete(resource, deletion.name, run.key.namespace, uid=deletion.uid,
                          propagation_policy="Background")
    except NotFound:
        return
    except ApiError as exc:
        _warn(run, "FailedDelete", f"Error deleting {resource.kind} {deletion.name}: "
              f"{exc.message}")
        return
    _log(run).info(f"deleted old {resource.kind.lower()} {deletion.name}")


def _write(run: RolloutRun, stored: Obj, plan: RolloutPlan) -> Obj | None:
    """The job's revision annotation, then the rollout's status fields beside the rest of
    the job's own status; the job as the last write left it (None: nothing written)."""
    job: Obj = run.job
    written: Obj | None = None
    metadata = job["metadata"]
    if plan.job_revision is not None:
        patch = {"metadata": {"annotations": {REVISION_ANNOTATION: plan.job_revision}}}
        written = run.client.patch(run.resource, metadata["name"], patch,
                                   namespace=metadata["namespace"], patch_type="merge")
        job = {**job, "metadata": {**metadata,
                                   "resourceVersion": written["metadata"]["resourceVersion"]}}
    ours = {key: stored[key] for key in ROLLOUT_STATUS_FIELDS if key in stored}
    if plan.status == ours:
        return written
    status = {key: value for key, value in stored.items() if key not in ROLLOUT_STATUS_FIELDS}
    return replace_native_status(run.client, run.resource, job, {**status, **plan.status})


def _warn(run: RolloutRun, reason: str, message: str) -> None:
    warn_job(run.recorder, run.job, run.key, reason, message)


def _log(run: RolloutRun) -> Any:
    return job_logger(run.key)
