"""Machine revisions: every accepted version of a machine, kept as a ControllerRevision.

A job records the revision it started with and keeps it until it ends, so a
machine edited or deleted meanwhile cannot change a running job's rules. A
revision is the whole machine as it runs (its bases merged in), named after its
content, so applying the same machine twice gives the same revision; it lives in
the engine's own namespace and outlives the StateMachine object while any job
needs it. Kubernetes keeps the versions of a StatefulSet or DaemonSet the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from engine.definition import CompiledDefinition, DefinitionError, compile_definition
from engine.definition.loader import build_definitions, object_definition
from engine.kube.resources import Resource

CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")
MACHINE_LABEL = "jobmachine.dev/machine"
"""On a revision: the StateMachine it is a version of."""
KIND_LABEL = "jobmachine.dev/governs"
"""On a revision: the kind that version governs."""
API_VERSION_ANNOTATION = "jobmachine.dev/governs-api-version"
GENERATION_ANNOTATION = "jobmachine.dev/generation"
"""The StateMachine's metadata.generation the revision was made from."""

_HASH_LENGTH = 10
_NAME_LIMIT = 253


def revision_name(machine: str, document: Mapping[str, Any]) -> str:
    """`<machine>-<hash of the spec>`: the same machine content always gives the same name."""
    digest = hashlib.sha256(orjson.dumps(document.get("spec"), option=orjson.OPT_SORT_KEYS))
    prefix = machine[: _NAME_LIMIT - _HASH_LENGTH - 1]
    return f"{prefix}-{digest.hexdigest()[:_HASH_LENGTH]}"


def machine_in_name(revision: str) -> str:
    """The machine a revision name (`revision_name`) is of: all before the hash."""
    return revision.rsplit("-", 1)[0]


def revision_object(
    document: Mapping[str, Any],
    *,
    namespace: str,
    number: int,
    generation: int | None,
) -> dict[str, Any]:
    """The ControllerRevision holding `document`, a StateMachine as it runs (bases merged in)."""
    name = str(document["metadata"]["name"])
    governs = document["spec"]["governs"]
    return {
        "apiVersion": CONTROLLER_REVISIONS.api_version,
        "kind": CONTROLLER_REVISIONS.kind,
        "metadata": {
            "name": revision_name(name, document),
            "namespace": namespace,
            "labels": {MACHINE_LABEL: name, KIND_LABEL: str(governs["kind"])},
            "annotations": {
                API_VERSION_ANNOTATION: str(governs["apiVersion"]),
                GENERATION_ANNOTATION: "" if generation is None else str(generation),
            },
        },
        "data": {
            "apiVersion": document.get("apiVersion"),
            "kind": document.get("kind"),
            "metadata": {"name": name},
            "spec": document["spec"],
        },
        "revision": number,
    }


def machine_of(revision: Mapping[str, Any]) -> str:
    """The StateMachine a revision is a version of."""
    return str(((revision.get("metadata") or {}).get("labels") or {}).get(MACHINE_LABEL, ""))


def governed_by(revision: Mapping[str, Any]) -> tuple[str, str]:
    """(apiVersion, kind) the revision governs."""
    metadata = revision.get("metadata") or {}
    kind = str((metadata.get("labels") or {}).get(KIND_LABEL, ""))
    return str((metadata.get("annotations") or {}).get(API_VERSION_ANNOTATION, "")), kind


def generation_of(revision: Mapping[str, Any]) -> str:
    """The StateMachine generation a revision was made from ('' when unknown)."""
    annotations = (revision.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(GENERATION_ANNOTATION, ""))


def compile_revision(revision: Mapping[str, Any]) -> CompiledDefinition:
    """The machine a revision holds, compiled; raises `DefinitionError` if it no longer loads
    (written by an engine whose language differed)."""
    raw = object_definition(revision.get("data") or {})
    definitions, diagnostics = build_definitions([raw])
    if any(d.is_error for d in diagnostics) or not definitions:
        raise DefinitionError(diagnostics)
    return compile_definition(definitions[0])
