"""`jobmachine graph --job NS/NAME`: a job's machine with the path it took highlighted.

The job's status holds exact counts of every transition it fired and the
machine revision it ran with, kept by the engine as a ControllerRevision, so
the picture is drawn from the API alone: no logs, no engine state, and the
machine drawn is the one the job really ran with, however it was edited since.

A job whose machine makes objects other machines govern (a JobSet's Jobs, a TrainJob's
JobSet) is drawn with them: the children it owns now (the engine's job-uid label), each
with the machine it ran with and its own path, linked to the job's state in which it was
made (`made_in.py`), their own children below them, down to `depth` levels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.controller.machines.registry import recorded_revision
from engine.controller.machines.revisions import CONTROLLER_REVISIONS, compile_revision
from engine.controller.machines.served import CRDS, served_resources
from engine.controller.reconcile.children import (
    JOB_UID_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
)
from engine.controller.reconcile.native_status import engine_view
from engine.controller.reconcile.record import read_record
from engine.definition import CompiledDefinition, DefinitionError
from engine.graph.nested import JobPath
from engine.graph.render import render_job_tree
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import EVENTS, STATE_MACHINES, Resource
from engine.simulation.made_in import state_made_in
from engine.simulation.picture import status_highlight


class JobNotFoundError(LookupError):
    """No job of any kind the machines govern has that namespace and name."""


def job_picture(
    client: KubeClient,
    namespace: str,
    name: str,
    *,
    system_namespace: str,
    definitions: Sequence[CompiledDefinition] = (),
    level: str = "all",
    fmt: str = "dot",
    depth: int | None = None,
) -> bytes:
    """The picture of the job's machine with its path highlighted, in `fmt`, with its
    children's (`depth` levels of them; None: all, 0: none).

    The machine is the revision the job ran with; `definitions` (machine files) are
    drawn instead when given, for the kind they govern.
    """
    found, _ = _find_job(client, namespace, name, governed_kinds(client, definitions))
    reader = _Reader(client, system_namespace, definitions)
    return render_job_tree(reader.path(found, depth), level=level, fmt=fmt)


def governed_kinds(
    client: KubeClient, definitions: Sequence[CompiledDefinition] = ()
) -> dict[str, Resource]:
    """Kind -> resource of the kinds the given machines (else the cluster's) govern."""
    served = served_resources(client.list(CRDS)[0])
    if definitions:
        governed = [(d.governs.api_version, d.governs.kind) for d in definitions]
    else:
        machines = client.list(STATE_MACHINES)[0]
        governed = [_governs(m) for m in machines]
    return {kind: served[(api, kind)] for api, kind in governed if (api, kind) in served}


def _governs(machine: Mapping[str, Any]) -> tuple[str, str]:
    governs = (machine.get("spec") or {}).get("governs") or {}
    return str(governs.get("apiVersion")), str(governs.get("kind"))


class _Reader:
    """Reads jobs and their children from the API, each with the machine it ran with."""

    def __init__(self, client: KubeClient, system_namespace: str,
                 definitions: Sequence[CompiledDefinition]) -> None:
        self.client = client
        self.system_namespace = system_namespace
        self.definitions = definitions
        self._served: Mapping[tuple[str, str], Resource] | None = None

    def path(self, found: Mapping[str, Any], depth: int | None, *, created_in: str | None = None,
             made_by: str = "") -> JobPath:
        """The job's path, and its children's down to `depth` levels."""
        job = engine_view(found)  # a built-in kind keeps the engine's status in an annotation
        definition = self._definition(job)
        status = job.get("status") or {}
        children: tuple[JobPath, ...] = ()
        if definition.child is not None and depth != 0:
            below = None if depth is None else depth - 1
            record, events = read_record(status), self._events(job)
            children = tuple(
                self.path(child, below, made_by=_replica_of(child), created_in=state_made_in(
                    child, record, definition.definition.spec.job, events))
                for child in self._children(job, definition.child.api_version,
                                            definition.child.kind))
        metadata = job["metadata"]
        return JobPath(f"{job['kind']} {metadata.get('namespace')}/{metadata['name']}",
                       definition.definition, status_highlight(status), created_in, made_by,
                       children)

    def _definition(self, job: Mapping[str, Any]) -> CompiledDefinition:
        given = next((d for d in self.definitions
                      if (d.governs.api_version, d.governs.kind)
                      == (job.get("apiVersion"), job.get("kind"))), None)
        return given or _revision_of(self.client, job, self.system_namespace)

    def _events(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The Events posted on the job itself (not on a replica: those name one)."""
        metadata = job["metadata"]
        items, _ = self.client.list(EVENTS, metadata.get("namespace"))
        return [e for e in items if (e.get("involvedObject") or {}).get("uid") == metadata["uid"]
                and not (e.get("involvedObject") or {}).get("fieldPath")]

    def _children(self, job: Mapping[str, Any], api_version: str, kind: str
                  ) -> list[dict[str, Any]]:
        """The job's children of that kind now, by name (those of an older restart attempt
        already deleted are not there to draw)."""
        if self._served is None:
            self._served = served_resources(self.client.list(CRDS)[0])
        resource = self._served.get((api_version, kind))
        if resource is None:
            raise JobNotFoundError(f"the children of {job['kind']} {job['metadata']['name']} "
                                   f"are {kind} ({api_version}) objects, which the cluster "
                                   "does not serve")
        metadata = job["metadata"]
        items, _ = self.client.list(resource, metadata.get("namespace"),
                                    label_selector=f"{JOB_UID_LABEL}={metadata['uid']}")
        return sorted(items, key=lambda c: str(c["metadata"]["name"]))


def _replica_of(child: Mapping[str, Any]) -> str:
    labels = child["metadata"].get("labels") or {}
    kind, index = labels.get(REPLICA_TYPE_LABEL), labels.get(REPLICA_INDEX_LABEL)
    return f"{kind}-{index}" if kind is not None and index is not None else ""


def _find_job(
    client: KubeClient, namespace: str, name: str, kinds: Mapping[str, Resource]
) -> tuple[Mapping[str, Any], str]:
    """The job of that name, of the first kind that has one; where a job and its child
    share the name (a TrainJob and its JobSet), the job that owns the other: its picture
    holds the child's."""
    found: list[tuple[Mapping[str, Any], str]] = []
    for kind, resource in kinds.items():
        try:
            found.append((client.get(resource, name, namespace), kind))
        except NotFound:
            continue
    uids = {str(job["metadata"].get("uid")) for job, _ in found}
    for job, kind in found:
        owners = {str(r.get("uid")) for r in job["metadata"].get("ownerReferences") or ()}
        if not owners & uids:
            return job, kind
    raise JobNotFoundError(
        f"no job {namespace}/{name} of the kinds {', '.join(sorted(kinds)) or '(none)'}"
    )


def _revision_of(
    client: KubeClient, job: Mapping[str, Any], system_namespace: str
) -> CompiledDefinition:
    recorded = recorded_revision(job)
    if recorded is None:
        raise JobNotFoundError(
            f"job {job['metadata']['name']} records no machine revision yet (the engine has not "
            "started it): nothing to draw"
        )
    machine, revision = recorded
    try:
        stored = client.get(CONTROLLER_REVISIONS, revision, system_namespace)
        return compile_revision(stored)
    except (ApiError, DefinitionError) as exc:
        raise JobNotFoundError(
            f"revision {revision} of machine {machine}, which the job ran with, cannot be read "
            f"from namespace {system_namespace}: {exc}"
        ) from exc
