"""The machine definitions `JobBuilder` reads a kind's layout from: shipped, or the cluster's.

A kind's replica-spec field, run-policy field, replica types and main container are
written in its machine's `governs` and `pod` blocks, not in Python, so the builder
takes them from there: the shipped `machines/` for the kinds jobmachine ships, or, for
a kind added at run time, the revision the cluster's engine starts new jobs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from engine.api.conditions import is_true
from engine.controller.machines.revisions import CONTROLLER_REVISIONS, compile_revision
from engine.definition import CompiledDefinition, DefinitionError, load_definitions
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import STATE_MACHINES
from engine.sdk.errors import JobClientError, UnknownKindError, refused
from engine.shipped import shipped_dir

_GOVERNING = "Governing"
"""The StateMachine condition that is True on the machine in force for its kind."""


@cache
def shipped_definitions() -> Mapping[str, CompiledDefinition]:
    """Kind -> the shipped machine governing it, compiled once per process."""
    return {d.governs.kind: d for d in load_definitions([shipped_dir("machines")])}


def shipped_definition(kind: str) -> CompiledDefinition:
    """The shipped machine of `kind`; UnknownKindError when jobmachine ships none."""
    found = shipped_definitions().get(kind)
    if found is None:
        raise UnknownKindError(kind, shipped_definitions(), where="in machines/")
    return found


def cluster_definition(client: KubeClient, kind: str, system_namespace: str
                       ) -> CompiledDefinition:
    """The machine revision new jobs of `kind` start with on the cluster, compiled."""
    machines, _ = client.list(STATE_MACHINES)
    governing = {
        str(governs.get("kind")): machine for machine in machines
        if (governs := (machine.get("spec") or {}).get("governs"))
        and is_true((machine.get("status") or {}).get("conditions") or [], _GOVERNING)
    }
    machine = governing.get(kind)
    if machine is None:
        raise UnknownKindError(kind, governing)
    revision = str((machine.get("status") or {}).get("currentRevision") or "")
    try:
        return compile_revision(client.get(CONTROLLER_REVISIONS, revision, system_namespace))
    except ApiError as exc:
        raise refused(exc, f"read revision {revision} of machine "
                           f"{machine['metadata']['name']} in {system_namespace}") from exc
    except DefinitionError as exc:
        raise JobClientError(f"revision {revision} of machine {machine['metadata']['name']} "
                             f"does not load here: {exc}") from exc
