"""What an object must pass before it is stored: schema, validation, unknown-field policy.

Custom resources go through their CRD's compiled structural schema (pruning,
defaults, types, CEL rules) and the generic metadata checks; built-in kinds
through `builtin_fields` (unknown fields) and `builtin_validation`. Unknown
(pruned) fields follow the request's `fieldValidation` (Strict: 400, Warn: a
`Warning` header, Ignore: silence), worded as the real server words them.
"""

from __future__ import annotations

from engine.cluster.apiserver.errors import bad_request, cannot_decode, invalid
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.scale import scale_causes
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.batch_warnings import write_warnings
from engine.cluster.apiserver.validation.builtin_fields import prune_unknown
from engine.cluster.apiserver.validation.builtin_validation import (
    validate_builtin,
    validate_metadata,
)
from engine.cluster.apiserver.validation.names import dns1123_subdomain_errors

FIELD_VALIDATION_MODES = ("Strict", "Warn", "Ignore")
DEFAULT_FIELD_VALIDATION = "Warn"


def field_validation_mode(value: str | None) -> str:
    if value in (None, ""):
        return DEFAULT_FIELD_VALIDATION
    if value not in FIELD_VALIDATION_MODES:
        raise bad_request(
            f"fieldValidation must be one of {', '.join(FIELD_VALIDATION_MODES)}, not {value!r}"
        )
    return value


def admit(
    registry: Registry,
    rt: ResourceType,
    obj: Obj,
    old: Obj | None,
    *,
    field_validation: str,
    subresource: str | None = None,
) -> tuple[Obj, list[str]]:
    """The object as it will be stored (pruned, defaulted) and the warnings to send (unknown
    fields under Warn, then the kind's own, as a real server's strategy adds them).

    Raises 400 for unknown fields under Strict and 422 with every cause otherwise. A custom
    resource with a scale subresource also keeps its scale paths readable (spec replicas
    only where the write may change the spec: not through /status).
    """
    compiled = registry.compiled_schema(rt)
    if compiled is None:
        obj, pruned = prune_unknown(rt.kind, obj)
        causes = validate_builtin(rt.kind, obj, old, subresource=subresource)
    else:
        paths = rt.scale
        checks = None if paths is None else (
            lambda new: scale_causes(paths, new, spec=subresource != "status")
        )
        result = compiled.apply(obj, old=old, checks=checks)
        obj, pruned = result.obj, result.pruned
        causes = [*validate_metadata(obj["metadata"], dns1123_subdomain_errors), *result.causes]
    unknown = [f'unknown field "{path}"' for path in pruned]
    if unknown and field_validation == "Strict":
        raise cannot_decode(rt.kind, rt.version, f"strict decoding error: {', '.join(unknown)}")
    if causes:
        raise invalid(rt.group, rt.kind, obj["metadata"].get("name", ""), list(causes))
    warnings = unknown if field_validation == "Warn" else []
    if compiled is None and subresource is None:
        warnings = [*warnings, *write_warnings(rt.kind, obj, old)]
    return obj, warnings
