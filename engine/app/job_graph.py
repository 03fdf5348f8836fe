"""`jobmachine graph --job NS/NAME`: a job's machine with the path it took highlighted.

The job's status holds exact counts of every transition it fired and the
machine revision it ran with, kept by the engine as a ControllerRevision, so
the picture is drawn from the API alone: no logs, no engine state, and the
machine drawn is the one the job really ran with, however it was edited since.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.controller.machines.registry import recorded_revision
from engine.controller.machines.revisions import CONTROLLER_REVISIONS, compile_revision
from engine.controller.machines.served import CRDS, served_resources
from engine.controller.reconcile.native_status import engine_view
from engine.definition import CompiledDefinition, DefinitionError
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import STATE_MACHINES, Resource
from engine.simulation.picture import path_picture


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
) -> bytes:
    """The picture of the job's machine with its path highlighted, in `fmt`.

    The machine is the revision the job ran with; `definitions` (machine files) are
    drawn instead when given, for the kind they govern.
    """
    found, kind = _find_job(client, namespace, name, governed_kinds(client, definitions))
    job = engine_view(found)  # a built-in kind's job keeps the engine's status in an annotation
    definition = next((d for d in definitions if d.governs.kind == kind), None)
    if definition is None:
        definition = _revision_of(client, job, system_namespace)
    return path_picture(definition, job.get("status") or {}, level=level, fmt=fmt)


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


def _find_job(
    client: KubeClient, namespace: str, name: str, kinds: Mapping[str, Resource]
) -> tuple[Mapping[str, Any], str]:
    for kind, resource in kinds.items():
        try:
            return client.get(resource, name, namespace), kind
        except NotFound:
            continue
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
