"""One sync of a job's rollout, decided without touching the API: which revision (child) to
make, which to scale or delete, the Events, the status that follows and when to look again.

The order, the arithmetic and the words are the Deployment controller's
(kube-controller-manager, pkg/controller/deployment: sync.go, rolling.go, recreate.go,
progress.go, util/deployment_util.go). The children are the job's revisions of its
template: the *new* one is the oldest whose template equals the job's (the hash label
aside), the others are *old*. A sync is one of:

- the job being deleted: the status only;
- paused, or a scaling event (a revision's `desired-replicas` annotation differs from the
  wanted replicas): scale the revisions (all to the active one; proportionally while
  rolling), trim the history, the status;
- Recreate: old revisions to 0, wait for their pods to go, then the new one to the whole;
- RollingUpdate: the new revision up while the pods stay within replicas + maxSurge, else
  the old ones down while the available pods stay at least replicas - maxUnavailable;
  once complete the history is trimmed.

Pure: the runner (run.py) reads the world, asks, and acts; each operation is applied in
order and the status is computed from the children as the operations leave them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from engine.controller.reconcile.children import owner_reference
from engine.controller.reconcile.notices import Notice
from engine.controller.rollouts.numbers import max_surge, max_unavailable, template_hash
from engine.controller.rollouts.revisions import (
    DESIRED_REPLICAS_ANNOTATION,
    HASH_LABEL,
    MAX_HISTORY_CHARS,
    MAX_REPLICAS_ANNOTATION,
    NOT_COPIED,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    Create,
    Delete,
    Operation,
    Revision,
    Update,
    comparable_template,
)
from engine.definition import RenderedRollout
from engine.kube.timestamps import format_time, parse_time

Obj = Mapping[str, Any]
OLD_PODS_POLL = timedelta(seconds=1)
"""How often a Recreate rollout looks again while old pods are still terminating."""


@dataclass(frozen=True)
class RolloutInput:
    """What one sync needs: the job (its metadata: name, generation, annotations), its
    status as stored, its revisions, the rendered rollout and the time."""

    job: Obj
    stored: Obj
    children: list[Revision]
    rollout: RenderedRollout
    now: datetime


@dataclass
class RolloutPlan:
    """What one sync does: operations in order, Events, the job's revision annotation (None:
    unchanged), the status fields it owns, and when to look again (None: on change)."""

    operations: list[Operation] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    job_revision: str | None = None
    status: dict[str, Any] = field(default_factory=dict)
    wake_at: datetime | None = None


class _Sync:
    """One sync, as upstream's syncDeployment: the children as the plan leaves them."""

    def __init__(self, given: RolloutInput) -> None:
        self.given = given
        self.rollout = given.rollout
        self.plan = RolloutPlan()
        self.children = sorted(given.children, key=lambda r: r.created)
        self.conditions: list[dict[str, Any]] = [
            dict(c) for c in given.stored.get("conditions") or ()]
        self.collisions = int(given.stored.get("collisionCount") or 0)
        self.wanted = comparable_template(self.rollout.template)
        self.new: Revision | None = next(
            (r for r in self.children if r.template == self.wanted), None)
        self.rolling = self.rollout.strategy == "RollingUpdate"

    # The bounds.

    @property
    def replicas(self) -> int:
        return self.rollout.replicas

    def surge(self) -> int:
        return max_surge(self.rolling, self.rollout.max_surge, self.rollout.max_unavailable,
                         self.replicas)

    def unavailable(self) -> int:
        return max_unavailable(self.rolling, self.rollout.max_surge,
                               self.rollout.max_unavailable, self.replicas)

    @property
    def old(self) -> list[Revision]:
        return [r for r in self.children if r is not self.new]

    # Conditions (SetDeploymentCondition, RemoveDeploymentCondition).

    def condition(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.conditions if c.get("type") == kind), None)

    def set_condition(self, kind: str, status: str, reason: str, message: str) -> None:
        now = format_time(self.given.now)
        found = self.condition(kind)
        if found is not None and found.get("status") == status and found.get("reason") == reason:
            return
        since = (found.get("lastTransitionTime") if found is not None
                 and found.get("status") == status else now)
        self.remove_condition(kind)
        self.conditions.append({"type": kind, "status": status, "lastUpdateTime": now,
                                "lastTransitionTime": since, "reason": reason,
                                "message": message})

    def remove_condition(self, kind: str) -> None:
        self.conditions = [c for c in self.conditions if c.get("type") != kind]

    # Operations.

    def scale(self, revision: Revision, replicas: int) -> bool:
        """scaleReplicaSet: set the replicas (and the replicas annotations); an Event when
        the size changes. Whether the size changed."""
        annotations = dict(revision.annotations)
        annotations[DESIRED_REPLICAS_ANNOTATION] = str(self.replicas)
        annotations[MAX_REPLICAS_ANNOTATION] = str(self.replicas + self.surge())
        if revision.replicas == replicas and annotations == revision.annotations:
            return False
        before = revision.replicas
        self._update(revision, replicas=replicas, annotations=annotations)
        if before != replicas:
            way = "up" if replicas > before else "down"
            self.plan.notices.append(Notice(
                "Normal", "ScalingReplicaSet",
                f"Scaled {way} replica set {revision.name} from {before} to {replicas}"))
        return before != replicas

    def _update(self, revision: Revision, *, replicas: int, annotations: dict[str, str],
                min_ready_seconds: int | None = None) -> None:
        before = revision.replicas
        revision.replicas = replicas
        revision.annotations = annotations
        if min_ready_seconds is not None:
            revision.min_ready_seconds = min_ready_seconds
        self.plan.operations.append(Update(
            revision.name, revision.uid,
            str(revision.obj["metadata"].get("resourceVersion") or ""), replicas,
            dict(annotations), revision.min_ready_seconds, before))

    # getAllReplicaSetsAndSyncRevision.

    def sync_revision(self, create: bool) -> bool:
        """Find (or, with `create`, make) the new revision and give it the next revision
        number; False when an update of it must be seen before anything else is done."""
        newest_old = max((r.revision for r in self.old), default=0)
        number = str(newest_old + 1)
        if self.new is not None:
            annotations = self._new_annotations(self.new, number, exists=True)
            stale_ready = self.new.min_ready_seconds != self.rollout.min_ready_seconds
            if annotations != self.new.annotations or stale_ready:
                self._update(self.new, replicas=self.new.replicas, annotations=annotations,
                             min_ready_seconds=self.rollout.min_ready_seconds)
                return False  # upstream returns the updated set and acts on the next sync
            self._job_revision(self.new.annotations.get(REVISION_ANNOTATION, number))
            if (self.rollout.progress_deadline_seconds is not None
                    and self.condition("Progressing") is None):
                self.set_condition("Progressing", "True", "FoundNewReplicaSet",
                                   f'Found new replica set "{self.new.name}"')
            return True
        if not create:
            return True
        self._create(number)
        return True

    def _new_annotations(self, revision: Revision, number: str, *, exists: bool
                         ) -> dict[str, str]:
        """SetNewReplicaSetAnnotations: the job's annotations copied, the revision number
        raised (the number it had joins the revision history: a rollback), and for a new
        revision the replicas annotations."""
        annotations = dict(revision.annotations)
        for key, value in (self.given.job["metadata"].get("annotations") or {}).items():
            if key not in NOT_COPIED:
                annotations[key] = str(value)
        had = annotations.get(REVISION_ANNOTATION, "")
        if had and not had.isdigit():
            return annotations
        if int(had or 0) < int(number):
            annotations[REVISION_ANNOTATION] = number
            if had:
                history = [h for h in annotations.get(REVISION_HISTORY_ANNOTATION, "").split(",")
                           if h]
                history.append(had)
                while len(",".join(history)) > MAX_HISTORY_CHARS and len(history) > 1:
                    history.pop(0)
                annotations[REVISION_HISTORY_ANNOTATION] = ",".join(history)
        if not exists:
            annotations[DESIRED_REPLICAS_ANNOTATION] = str(self.replicas)
            annotations[MAX_REPLICAS_ANNOTATION] = str(self.replicas + self.surge())
        return annotations

    def _create(self, number: str) -> None:
        job = self.given.job
        metadata = job["metadata"]
        digest = template_hash(self.rollout.template, self.collisions)
        template = copy.deepcopy(dict(self.rollout.template))
        template_metadata = dict(template.get("metadata") or {})
        template_metadata["labels"] = {**(template_metadata.get("labels") or {}),
                                       HASH_LABEL: digest}
        template["metadata"] = template_metadata
        selector = copy.deepcopy(dict(self.rollout.selector))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}
        name = f"{metadata['name']}-{digest}"
        replicas = self._new_replicas(None)
        stub = Revision({"metadata": {"name": name}}, replicas, {}, 0)
        annotations = self._new_annotations(stub, number, exists=False)
        body: dict[str, Any] = {
            "apiVersion": self.rollout.child_api_version, "kind": self.rollout.child_kind,
            "metadata": {
                "name": name, "namespace": metadata["namespace"],
                "labels": dict(template_metadata["labels"]),
                "annotations": annotations,
                "ownerReferences": [owner_reference(job)],
            },
            "spec": {"replicas": replicas, "minReadySeconds": self.rollout.min_ready_seconds,
                     "selector": selector, "template": template},
        }
        self.plan.operations.append(Create(body, replicas))
        self.new = Revision(body, replicas, dict(annotations),
                            self.rollout.min_ready_seconds)
        self.children.append(self.new)
        if replicas > 0:
            self.plan.notices.append(Notice("Normal", "ScalingReplicaSet",
                                            f"Scaled up replica set {name} from 0 to {replicas}"))
        self._job_revision(number)
        if self.rollout.progress_deadline_seconds is not None:
            self.set_condition("Progressing", "True", "NewReplicaSetCreated",
                               f'Created new replica set "{name}"')

    def _job_revision(self, number: str) -> None:
        had = (self.given.job["metadata"].get("annotations") or {}).get(REVISION_ANNOTATION)
        if had != number:
            self.plan.job_revision = number

    def _new_replicas(self, new: Revision | None) -> int:
        """NewRSNewReplicas: Recreate wants the whole at once; RollingUpdate grows the new
        revision while every revision's pods together stay within replicas + maxSurge."""
        if not self.rolling:
            return self.replicas
        current = new.replicas if new is not None else 0
        ceiling = self.replicas + self.surge()
        pods = sum(r.replicas for r in self.children if r is not new) + current
        if pods >= ceiling:
            return current
        return current + min(ceiling - pods, self.replicas - current)

    # rolling.go

    def roll(self) -> None:
        """rolloutRolling: the new revision up, else the old ones down, else (complete) the
        history trimmed; then the rollout's status."""
        self.sync_revision(create=True)
        if self._grow_new() or self._shrink_old():
            self.rollout_status()
            return
        if self._complete(self.status()):
            self.trim_history()
        self.rollout_status()

    def _grow_new(self) -> bool:
        new = self.new
        if new is None or new.replicas == self.replicas:
            return False
        if new.replicas > self.replicas:
            return self.scale(new, self.replicas)
        return self.scale(new, self._new_replicas(new))

    def _shrink_old(self) -> bool:
        """reconcileOldReplicaSets: as many old pods down as keeps replicas - maxUnavailable
        available, counting the new revision's unavailable pods as already missing;
        unhealthy old pods first."""
        old = self.old
        if sum(r.replicas for r in old) == 0:
            return False
        pods = sum(r.replicas for r in self.children)
        least = self.replicas - self.unavailable()
        new_unavailable = (self.new.replicas - self.new.count("availableReplicas")
                           if self.new is not None else 0)
        room = pods - least - new_unavailable
        if room <= 0:
            return False
        cleaned = 0
        for revision in old:  # cleanupUnhealthyReplicas, oldest first
            if cleaned >= room:
                break
            unhealthy = revision.replicas - revision.count("availableReplicas")
            if revision.replicas == 0 or unhealthy <= 0:
                continue
            down = min(room - cleaned, unhealthy)
            self.scale(revision, revision.replicas - down)
            cleaned += down
        return cleaned + self._shrink_available(old) > 0

    def _shrink_available(self, old: list[Revision]) -> int:
        """scaleDownOldReplicaSetsForRollingUpdate: old pods down, oldest revision first,
        while more than replicas - maxUnavailable pods are available."""
        least = self.replicas - self.unavailable()
        available = sum(r.count("availableReplicas") for r in self.children)
        if available <= least:
            return 0
        total, done = available - least, 0
        for revision in old:
            if done >= total:
                break
            if revision.replicas == 0:
                continue
            down = min(revision.replicas, total - done)
            self.scale(revision, revision.replicas - down)
            done += down
        return done

    # recreate.go

    def recreate(self) -> None:
        """rolloutRecreate: every old revision to 0; once none of their pods is running
        (oldPodsRunning: a pod being deleted still runs), the new revision made (or found)
        and scaled to the whole."""
        self.sync_revision(create=False)
        scaled = False
        for revision in self.old:
            if revision.replicas > 0:
                scaled = self.scale(revision, 0) or scaled
        if scaled or any(r.running_pods > 0 for r in self.old):
            self.rollout_status()
            if not scaled:  # a pod's end queues its ReplicaSet, not the job: look again
                self.plan.wake_at = self.given.now + OLD_PODS_POLL
            return
        if self.new is None:
            self.sync_revision(create=True)
        assert self.new is not None
        if self.new.replicas != self.replicas:
            self.scale(self.new, self.replicas)
        if self._complete(self.status()):
            self.trim_history()
        self.rollout_status()

    # sync.go: scaling and the history.

    def scaling_event(self) -> bool:
        """isScalingEvent: an active revision was sized for other replicas than wanted."""
        self.sync_revision(create=False)
        for revision in self.children:
            if revision.replicas <= 0:
                continue
            desired = revision.annotations.get(DESIRED_REPLICAS_ANNOTATION, "")
            if desired.isdigit() and int(desired) != self.replicas:
                return True
        return False

    def resize(self) -> None:
        """sync: scale the revisions to the wanted replicas, trim the history while paused,
        and write the status (the Progressing condition left as it is)."""
        self._scale_all()
        if self.rollout.paused:
            self.trim_history()
        self.plan.status = self.written(self.status())

    def _scale_all(self) -> None:
        """scale: one active revision (or none: the newest) takes the whole; a saturated new
        revision leaves the old ones at 0; while rolling, added or removed pods are shared
        in proportion to each revision's size."""
        active = [r for r in self.children if r.replicas > 0]
        if len(active) <= 1:
            target = active[0] if active else (self.new or (
                max(self.children, key=lambda r: r.created) if self.children else None))
            if target is not None and target.replicas != self.replicas:
                self.scale(target, self.replicas)
            return
        new = self.new
        if (new is not None and new.replicas == self.replicas
                and new.annotations.get(DESIRED_REPLICAS_ANNOTATION) == str(self.replicas)
                and new.count("availableReplicas") == self.replicas):
            for revision in self.old:
                if revision.replicas > 0:
                    self.scale(revision, 0)
            return
        if self.rolling:
            self._scale_proportionally(active)

    def _scale_proportionally(self, active: list[Revision]) -> None:
        allowed = self.replicas + self.surge() if self.replicas > 0 else 0
        to_add = allowed - sum(r.replicas for r in active)
        if to_add == 0:
            return
        if to_add > 0:  # ReplicaSetsBySizeNewer
            order = sorted(active, key=lambda r: (r.replicas, r.created), reverse=True)
        else:  # ReplicaSetsBySizeOlder
            order = sorted(active, key=lambda r: (-r.replicas, r.created))
        sizes: dict[str, int] = {}
        added = 0
        for revision in order:
            share = self._proportion(revision, to_add, added)
            sizes[revision.name] = revision.replicas + share
            added += share
        if order and added != to_add:  # the leftover goes to the largest
            sizes[order[0].name] = max(0, sizes[order[0].name] + to_add - added)
        for revision in order:
            self.scale(revision, max(0, sizes[revision.name]))

    def _proportion(self, revision: Revision, to_add: int, added: int) -> int:
        """GetProportion: this revision's share of `to_add`, by its size over the size all
        revisions were given for (the max-replicas annotation), never past what is left."""
        if revision.replicas == 0 or to_add in (0, added):
            return 0
        fraction = self._fraction(revision)
        allowed = to_add - added
        if to_add > 0:
            return min(fraction, allowed)
        return max(fraction, allowed)

    def _fraction(self, revision: Revision) -> int:
        """getReplicaSetFraction: the revision's size scaled from the size it was given for
        (its max-replicas annotation, else the stored status's replicas) to replicas +
        maxSurge, rounded half away from zero as Go's math.Round, less its size."""
        if self.replicas == 0:
            return -revision.replicas
        ceiling = revision.annotations.get(MAX_REPLICAS_ANNOTATION, "")
        given = (int(ceiling) if ceiling.isdigit()
                 else int(self.given.stored.get("replicas") or 0))
        if given == 0:
            return 0
        share = revision.replicas * (self.replicas + self.surge()) / given
        return math.floor(share + 0.5) - revision.replicas

    def trim_history(self) -> None:
        """cleanupDeployment: old revisions beyond the history limit deleted, lowest
        revision first, each only once it has no pods and its controller has seen it."""
        limit = self.rollout.revision_history_limit
        if limit is None:
            return
        cleanable = [r for r in self.old if not r.deleting]
        surplus = len(cleanable) - limit
        if surplus <= 0:
            return
        for revision in sorted(cleanable, key=lambda r: (r.revision, r.created))[:surplus]:
            status = revision.obj.get("status") or {}
            seen = int(status.get("observedGeneration") or 0)
            if (revision.count("replicas") != 0 or revision.replicas != 0
                    or int(revision.obj["metadata"].get("generation") or 0) > seen):
                continue
            self.plan.operations.append(Delete(revision.name, revision.uid))
            self.children.remove(revision)

    # progress.go and the status.

    def status(self) -> dict[str, Any]:
        """calculateStatus: the counts over every revision (unavailable: the pods the
        revisions want less those available), and Available."""
        available = sum(r.count("availableReplicas") for r in self.children)
        status: dict[str, Any] = {
            "observedGeneration": int(self.given.job["metadata"].get("generation") or 0),
            "replicas": sum(r.count("replicas") for r in self.children),
            "updatedReplicas": self.new.count("replicas") if self.new is not None else 0,
            "readyReplicas": sum(r.count("readyReplicas") for r in self.children),
            "availableReplicas": available,
            # Upstream counts what the revisions want, not spec.replicas: 0 while scaling down.
            "unavailableReplicas": max(0, sum(r.replicas for r in self.children) - available),
        }
        if available >= self.replicas - self.unavailable():
            self.set_condition("Available", "True", "MinimumReplicasAvailable",
                               "Deployment has minimum availability.")
        else:
            self.set_condition("Available", "False", "MinimumReplicasUnavailable",
                               "Deployment does not have minimum availability.")
        status["conditions"] = [dict(c) for c in self.conditions]
        if self.collisions:
            status["collisionCount"] = self.collisions
        return status

    def written(self, status: Mapping[str, Any]) -> dict[str, Any]:
        """The status as the Deployment API writes it: counts of 0 left out (omitempty)."""
        return {k: v for k, v in status.items() if v not in (0, [])}

    def _complete(self, status: Mapping[str, Any]) -> bool:
        """DeploymentComplete: every wanted pod updated and available, none other left."""
        return bool(status["updatedReplicas"] == self.replicas
                and status["replicas"] == self.replicas
                and status["availableReplicas"] == self.replicas
                and status["observedGeneration"]
                >= int(self.given.job["metadata"].get("generation") or 0))

    def rollout_status(self) -> None:
        """syncRolloutStatus: the status, and Progressing: NewReplicaSetAvailable once
        complete, ReplicaSetUpdated on any progress (its update time renewed), and
        ProgressDeadlineExceeded once progressDeadlineSeconds pass without any."""
        status = self.status()
        deadline = self.rollout.progress_deadline_seconds
        if deadline is None:
            self.remove_condition("Progressing")
        current = self.condition("Progressing")
        done = (status["replicas"] == status["updatedReplicas"] and current is not None
                and current.get("reason") == "NewReplicaSetAvailable")
        name = self.new.name if self.new is not None else None
        if deadline is not None and not done:
            if self._complete(status):
                self.set_condition(
                    "Progressing", "True", "NewReplicaSetAvailable",
                    f'ReplicaSet "{name}" has successfully progressed.' if name
                    else "Deployment has successfully progressed.")
            elif self._progressing(status):
                since = (current.get("lastTransitionTime") if current is not None
                         and current.get("status") == "True" else None)
                self.remove_condition("Progressing")
                self.set_condition("Progressing", "True", "ReplicaSetUpdated",
                                   f'ReplicaSet "{name}" is progressing.' if name
                                   else "Deployment is progressing.")
                if since is not None:
                    self.conditions[-1]["lastTransitionTime"] = since
            elif self._timed_out(deadline):
                self.set_condition("Progressing", "False", "ProgressDeadlineExceeded",
                                   f'ReplicaSet "{name}" has timed out progressing.' if name
                                   else "Deployment has timed out progressing.")
        self._replica_failure()
        status["conditions"] = [dict(c) for c in self.conditions]
        self.plan.status = self.written(status)
        self._wake_for_deadline(deadline)

    def _progressing(self, status: Mapping[str, Any]) -> bool:
        """DeploymentProgressing: more updated, ready or available pods, or fewer old ones,
        than the stored status says."""
        before = self.given.stored
        old_before = int(before.get("replicas") or 0) - int(before.get("updatedReplicas") or 0)
        old_now = status["replicas"] - status["updatedReplicas"]
        return bool(status["updatedReplicas"] > int(before.get("updatedReplicas") or 0)
                or old_now < old_before
                or status["readyReplicas"] > int(before.get("readyReplicas") or 0)
                or status["availableReplicas"] > int(before.get("availableReplicas") or 0))

    def _timed_out(self, deadline: int) -> bool:
        current = self.condition("Progressing")
        if current is None or current.get("reason") == "NewReplicaSetAvailable":
            return False
        if current.get("reason") == "ProgressDeadlineExceeded":
            return True
        since = current.get("lastUpdateTime")
        return (since is not None
                and parse_time(since) + timedelta(seconds=deadline) < self.given.now)

    def _wake_for_deadline(self, deadline: int | None) -> None:
        """requeueStuckDeployment: a rollout still progressing is looked at again when its
        deadline passes, so ProgressDeadlineExceeded is said without another event."""
        current = self.condition("Progressing")
        if (deadline is None or current is None or current.get("status") != "True"
                or current.get("reason") == "NewReplicaSetAvailable"
                or not current.get("lastUpdateTime")):
            return
        self.plan.wake_at = (parse_time(current["lastUpdateTime"])
                             + timedelta(seconds=deadline, milliseconds=100))

    def _replica_failure(self) -> None:
        """GetReplicaFailures: a revision's ReplicaFailure condition is the job's too."""
        for revision in self.children:
            for condition in (revision.obj.get("status") or {}).get("conditions") or ():
                if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
                    self.set_condition("ReplicaFailure", "True", str(condition.get("reason")),
                                       str(condition.get("message")))
                    return
        self.remove_condition("ReplicaFailure")


def _paused_conditions(sync: _Sync) -> None:
    """checkPausedConditions: Progressing Unknown while paused (DeploymentPaused) and once
    resumed (DeploymentResumed), unless the deadline was already exceeded."""
    if sync.rollout.progress_deadline_seconds is None:
        return
    current = sync.condition("Progressing")
    if current is not None and current.get("reason") == "ProgressDeadlineExceeded":
        return
    paused_said = current is not None and current.get("reason") == "DeploymentPaused"
    if sync.rollout.paused and not paused_said:
        sync.set_condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
    elif not sync.rollout.paused and paused_said:
        sync.set_condition("Progressing", "Unknown", "DeploymentResumed",
                           "Deployment is resumed")


def plan_rollout(given: RolloutInput) -> RolloutPlan:
    """One sync of the rollout (syncDeployment)."""
    sync = _Sync(given)
    _paused_conditions(sync)
    if given.job["metadata"].get("deletionTimestamp"):
        sync.sync_revision(create=False)
        sync.plan.status = sync.written(sync.status())
    elif sync.rollout.paused or sync.scaling_event():
        if sync.rollout.paused:
            sync.sync_revision(create=False)
        sync.resize()
    elif sync.rolling:
        sync.roll()
    else:
        sync.recreate()
    return sync.plan


def with_collision(stored: Obj) -> Obj:
    """The stored status with one more hash collision counted (the next name differs)."""
    return {**stored, "collisionCount": int(stored.get("collisionCount") or 0) + 1}

