"""Server-side apply requests: PATCH with `application/apply-patch+yaml`, checked as upstream.

This is the request edge of apply: the options (`fieldManager` required,
`force` only here), the body (YAML or JSON, one object of the URL's kind and
version, no `managedFields`), the checks upstream makes when it types the
configuration (undeclared fields, duplicate or unnamed list items: a 500, as
upstream answers them) and the conflict answer. The merge and ownership
rules are in `field_manager.py`; the store runs the result through the usual
write pipeline, creating the object when it does not exist.
"""

from __future__ import annotations

from typing import Any

import yaml

from engine.cluster.apiserver.encoding.json_documents import check_depth
from engine.cluster.apiserver.encoding.yaml_documents import YamlLimitError, load_yaml
from engine.cluster.apiserver.errors import ApiError, Cause, bad_request, invalid
from engine.cluster.apiserver.patch.apply_schema import TypeNode
from engine.cluster.apiserver.patch.field_manager import Scope, tracked_apply
from engine.cluster.apiserver.patch.managed_fields import ApplyConflictError, conflict_error
from engine.cluster.apiserver.patch.ownership_rules import empty_object, reset_fields
from engine.cluster.apiserver.patch.typed_walks import validate
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.field_errors import forbidden, required, too_long
from engine.cluster.apiserver.validation.field_errors import invalid as invalid_value

APPLY_YAML = "application/apply-patch+yaml"
MAX_FIELD_MANAGER_LENGTH = 128


def field_manager_causes(manager: str) -> list[Cause]:
    """ValidateFieldManager: at most 128 bytes, printable characters only."""
    causes = []
    if len(manager.encode()) > MAX_FIELD_MANAGER_LENGTH:
        causes.append(too_long("fieldManager", MAX_FIELD_MANAGER_LENGTH))
    causes += [
        invalid_value("fieldManager", manager,
                      f"invalid character U+{ord(char):04X} (at position {position})")
        for position, char in enumerate(manager)
        if not char.isprintable()
    ]
    return causes


def check_options(kind: str, manager: str, *, apply: bool, force_given: bool) -> None:
    """422 on options upstream refuses (`kind`: CreateOptions, UpdateOptions, PatchOptions)."""
    causes = []
    if apply and not manager:
        causes.append(required("fieldManager", "is required for apply patch"))
    if force_given and not apply:
        causes.append(forbidden("force", "may not be specified for non-apply patch"))
    causes += field_manager_causes(manager)
    if causes:
        raise invalid("meta.k8s.io", kind, "", causes)


def manager_name(field_manager: str, user_agent: str) -> str:
    """The manager of a write: `fieldManager`, else the User-Agent up to its first `/`, its
    non-printable characters dropped, cut at 128 bytes (upstream's prefixFromUserAgent)."""
    if field_manager:
        return field_manager
    result = ""
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        if len((result + char).encode()) > MAX_FIELD_MANAGER_LENGTH:
            break
        result += char
    return result


def decode_config(body: bytes) -> Obj:
    """The applied configuration: YAML (JSON is YAML too), one object."""
    try:
        document = load_yaml(body) if body.strip() else None
    except (yaml.YAMLError, YamlLimitError, RecursionError) as exc:
        raise bad_request(f"error decoding YAML: {exc}") from exc
    check_depth(document, "the applied configuration")
    if not isinstance(document, dict):
        kind = "null" if document is None else type(document).__name__
        raise bad_request(
            f"error decoding YAML: cannot unmarshal {kind} into Go value of type "
            "map[string]interface {}"
        )
    return document


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _gvk(config: Obj) -> str:
    api_version = _text(config.get("apiVersion"))
    group, _, version = api_version.rpartition("/")
    if api_version.count("/") > 1:
        group = version = ""
    return f"{group}/{version}, Kind={_text(config.get('kind'))}"


def _identity(config: Obj) -> str:
    metadata = config.get("metadata")
    named = metadata if isinstance(metadata, dict) else {}
    return f"{_text(named.get('namespace'))}/{_text(named.get('name'))}; {_gvk(config)}"


def check_config(rt: ResourceType, node: TypeNode, config: Obj) -> None:
    """What upstream refuses before merging: another kind (400), managedFields (400), and a
    configuration that does not fit the schema (500, as upstream)."""
    if config.get("apiVersion") != rt.api_version or config.get("kind") != rt.kind:
        raise bad_request(f"invalid object type: {_gvk(config)}")
    metadata = config.get("metadata")
    if isinstance(metadata, dict) and metadata.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    errors = validate(config, node)
    if errors:
        detail = errors[0] if len(errors) == 1 else "errors:\n" + "\n".join(
            f"  {e}" for e in errors
        )
        raise ApiError(
            500, "", f"failed to create typed patch object ({_identity(config)}): {detail}"
        )


def applied(
    rt: ResourceType,
    node: TypeNode,
    live: Obj | None,
    config: Obj,
    *,
    manager: str,
    force: bool,
    subresource: str | None,
    now: str,
    builtin: bool,
) -> tuple[Obj, list[dict[str, Any]] | None]:
    """The object the apply makes (live merged with the configuration) and its managedFields."""
    check_config(rt, node, config)
    scope = Scope(
        node, rt.api_version, subresource or "", reset_fields(rt, subresource), now,
        empty_object(rt), go_typed=builtin,
    )
    try:
        return tracked_apply(scope, live, config, manager, force=force)
    except ApplyConflictError as conflict:
        raise conflict_error(conflict.conflicts) from conflict
