"""The `scale` subresource: an autoscaling/v1 Scale made from the object.

Custom resources that declare one and the built-in workloads (Deployments, ReplicaSets,
ReplicationControllers) have it. No Scale is ever stored. A read builds one from the paths
the CRD version declares (spec replicas, status replicas, selector), or for a workload from
its replicas and its spec's selector as text, as each registry's ScaleREST does; a write
sets the spec replicas path of the resource and stores it through its own update pipeline,
so schema, CEL rules, generation and the watch event are those of any spec change. Also
here: the checks every write of a custom resource with a scale gets (the replicas paths hold
non-negative int32s, the selector a string) and who owns the replicas field after a write
through `/scale`.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from engine.cluster.apiserver.errors import (
    ApiError,
    Cause,
    bad_request,
    cannot_decode,
    conflict,
)
from engine.cluster.apiserver.errors import invalid as invalid_object
from engine.cluster.apiserver.patch.field_paths import FieldSet, Path, field
from engine.cluster.apiserver.patch.managed_fields import (
    APPLY,
    UPDATE,
    Managed,
    ManagerFields,
    conflict_error,
    decode,
    encode,
    identifier,
)
from engine.cluster.apiserver.registry.resources import ResourceType, ScalePaths
from engine.cluster.apiserver.registry.selectors import LabelSelector, SelectorError
from engine.cluster.apiserver.registry.writes import LATEST_RV_MESSAGE, check_identity, check_uid
from engine.cluster.apiserver.schema.schema_validation import OBJECT_META_FIELDS
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.field_errors import invalid

API_VERSION = "autoscaling/v1"
KIND = "Scale"
SUBRESOURCE = "scale"
# Scale versions the real server decodes a body from besides autoscaling/v1 (all convert).
_DECODED_VERSIONS = frozenset({API_VERSION, "extensions/v1beta1", "apps/v1beta1", "apps/v1beta2"})
_MAX_INT32 = 2**31 - 1
UNSET = -(2**31)
"""spec.replicas of the Scale a patch starts from when the resource has no spec replicas: a
count no client means, so a write that leaves it in place is refused (as upstream marks it)."""
SCALE_REPLICAS: Path = (field("spec"), field("replicas"))
_KNOWN_FIELDS = {
    "": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
    "metadata": OBJECT_META_FIELDS,
    "spec": frozenset({"replicas"}),
    "status": frozenset({"replicas", "selector"}),
}
_GO_TYPES = ((bool, "bool"), (int, "int64"), (float, "float64"), (str, "string"),
             (list, "[]interface {}"), (dict, "map[string]interface {}"))
_JSON_KINDS = ((bool, "bool"), (str, "string"), (list, "array"), (dict, "object"))


class PathError(ValueError):
    """A value of the wrong type on a scale path (unstructured's accessor error)."""


def _paths(rt: ResourceType) -> ScalePaths:
    if rt.scale is None:  # routing serves /scale only for types that declare it
        raise ValueError(f"{rt.plural}.{rt.group} has no scale subresource")
    return rt.scale


def _names(path: str) -> tuple[str, ...]:
    return tuple(path.removeprefix(".").split("."))


def _dotted(names: tuple[str, ...]) -> str:
    return "." + ".".join(names)


def _go_type(value: Any) -> str:
    return next((name for kind, name in _GO_TYPES if isinstance(value, kind)), "<nil>")


def _go_value(value: Any) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items())) + "]"
    return str(value)


def _lookup(obj: Obj, path: str) -> tuple[Any, bool]:
    """The value at a dot path; (None, False) when absent (a null on the way is absent too)."""
    names = _names(path)
    node: Any = obj
    for index, name in enumerate(names):
        if node is None:
            return None, False
        if not isinstance(node, dict):
            raise PathError(
                f"{_dotted(names[: index + 1])} accessor error: {_go_value(node)} is of the type "
                f"{_go_type(node)}, expected map[string]interface{{}}"
            )
        if name not in node:
            return None, False
        node = node[name]
    return node, True


def _typed(obj: Obj, path: str, kind: type, go_name: str) -> tuple[Any, bool]:
    value, found = _lookup(obj, path)
    if found and (not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool)):
        raise PathError(
            f"{_dotted(_names(path))} accessor error: {_go_value(value)} is of the type "
            f"{_go_type(value)}, expected {go_name}"
        )
    return value, found


def _count(obj: Obj, path: str) -> tuple[int, bool]:
    value, found = _typed(obj, path, int, "int64")
    return (value, True) if found else (0, False)


def _selector(obj: Obj, paths: ScalePaths) -> str:
    if paths.spec_selector:
        return _spec_selector(_lookup(obj, paths.spec_selector)[0])
    if not paths.label_selector:
        return ""
    value, found = _typed(obj, paths.label_selector, str, "string")
    return value if found else ""


def _spec_selector(selector: Any) -> str:
    """A workload's selector as its ScaleREST writes it: a LabelSelector through
    LabelSelectorAsSelector, a ReplicationController's label map as `k=v` pairs; sorted."""
    if not isinstance(selector, dict):
        return ""
    if set(selector) <= {"matchLabels", "matchExpressions"}:
        try:
            return str(LabelSelector.from_object(selector))
        except SelectorError:
            return ""
    return ",".join(f"{key}={selector[key]}" for key in sorted(selector))


def _scale(obj: Obj, spec_replicas: int, status_replicas: int, selector: str) -> Obj:
    """An autoscaling/v1 Scale as Go encodes it (spec.replicas and status.selector omitempty)."""
    metadata = obj["metadata"]
    meta = {
        key: metadata[key]
        for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if metadata.get(key)
    }
    status: Obj = {"replicas": status_replicas}
    if selector:
        status["selector"] = selector
    spec = {"replicas": spec_replicas} if spec_replicas else {}
    return {"kind": KIND, "apiVersion": API_VERSION, "metadata": meta, "spec": spec,
            "status": status}


def _read(rt: ResourceType, obj: Obj) -> tuple[Obj, bool]:
    paths = _paths(rt)
    try:
        spec_replicas, found = _count(obj, paths.spec_replicas)
        status_replicas, _ = _count(obj, paths.status_replicas)
        selector = _selector(obj, paths)
    except PathError as exc:
        raise ApiError(500, "", str(exc)) from exc
    return _scale(obj, spec_replicas, status_replicas, selector), found


def scale_written(rt: ResourceType, obj: Obj) -> Obj:
    """The Scale a write answers with, read from the resource as stored."""
    return _read(rt, obj)[0]


def scale_of(rt: ResourceType, obj: Obj) -> Obj:
    """The Scale a GET answers; 500 when the resource has no spec replicas (as upstream)."""
    scale, found = _read(rt, obj)
    if not found:
        path = _paths(rt).spec_replicas
        raise ApiError(
            500, "InternalError",
            f'Internal error occurred: the spec replicas field "{path}" does not exist',
        )
    return scale


def current_scale(rt: ResourceType, obj: Obj) -> Obj:
    """The Scale a write starts from (a patch applies to it): spec.replicas is `UNSET` when
    the resource has none."""
    scale, found = _read(rt, obj)
    if not found:
        scale["spec"] = {"replicas": UNSET}
    return scale


def _check_scale_type(scale: Obj) -> None:
    """400 for a body that is not a Scale, worded as the real decoder's refusal."""
    kind, api_version = scale.get("kind") or "", scale.get("apiVersion") or ""
    if kind in ("", KIND) and api_version in ("", *_DECODED_VERSIONS):
        return
    version = str(api_version).rpartition("/")[2]
    raise bad_request(
        f'{kind} in version "{version}" cannot be handled as a Scale: no kind "{kind}" is '
        f'registered for version "{api_version}"'
    )


def requested_replicas(rt: ResourceType, scale: Any) -> int:
    """spec.replicas of the Scale a client wants, decoded as the int32 Go reads."""
    if not isinstance(scale, dict):
        raise bad_request("the request body must be a JSON object")
    _check_scale_type(scale)
    spec = scale.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise _undecodable(spec, "Scale.spec", "v1.ScaleSpec")
    replicas = (spec or {}).get("replicas")
    if replicas is None:
        return 0
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not (
        UNSET <= replicas <= _MAX_INT32
    ):
        raise _undecodable(replicas, "ScaleSpec.spec.replicas", "int32")
    if replicas == UNSET:
        path = _paths(rt).spec_replicas
        raise bad_request(f'the spec replicas field "{path}" cannot be empty')
    return replicas


def _undecodable(value: Any, go_field: str, go_type: str) -> ApiError:
    kind = next((name for t, name in _JSON_KINDS if isinstance(value, t)), f"number {value}")
    detail = f"json: cannot unmarshal {kind} into Go struct field {go_field} of type {go_type}"
    return cannot_decode(KIND, "v1", detail)


def unknown_fields(scale: Obj) -> list[str]:
    """Fields of a Scale body the Go type has not (what strict decoding names)."""
    unknown = [f'unknown field "{key}"' for key in scale if key not in _KNOWN_FIELDS[""]]
    for part in ("metadata", "spec", "status"):
        value = scale.get(part)
        if isinstance(value, dict):
            unknown += [
                f'unknown field "{part}.{key}"' for key in value if key not in _KNOWN_FIELDS[part]
            ]
    return unknown


def scaled(rt: ResourceType, obj: Obj, replicas: int) -> Obj:
    """`obj` with `replicas` at the spec replicas path, missing maps on the way created; the
    maps along the path are new, the rest is shared."""
    names = _names(_paths(rt).spec_replicas)
    result = {**obj, "metadata": dict(obj["metadata"])}
    node = result
    for index, name in enumerate(names[:-1]):
        child = node.get(name)
        if child is None:
            child = {}
        elif not isinstance(child, dict):
            raise ApiError(500, "", f"value cannot be set because {_dotted(names[: index + 1])} "
                                    "is not a map[string]interface{}")
        node[name] = dict(child)
        node = node[name]
    node[names[-1]] = replicas
    return result


def scale_causes(paths: ScalePaths, obj: Obj, *, spec: bool) -> list[Cause]:
    """What every write of a resource with a scale subresource must keep true (spec replicas
    only for writes that may change the spec)."""
    causes = []
    counts = [paths.spec_replicas] if spec else []
    for path in [*counts, paths.status_replicas]:
        try:
            value, _ = _count(obj, path)
        except PathError as exc:
            causes.append(invalid(path, 0, str(exc)))
            continue
        if value < 0:
            causes.append(invalid(path, value, "should be a non-negative integer"))
        elif value > _MAX_INT32:
            causes.append(invalid(path, value, f"should be less than or equal to {_MAX_INT32}"))
    if paths.label_selector:
        try:
            _selector(obj, paths)
        except PathError as exc:
            causes.append(invalid(paths.label_selector, "", str(exc)))
    return causes


@dataclass(frozen=True)
class ScaleWriter:
    """Who writes through /scale: the manager, and whether it applies (server-side apply)."""

    manager: str
    applied: bool = False
    force: bool = False


@dataclass(frozen=True)
class ScaleChange:
    """What a write through /scale makes of the resource: the object to store (spec
    replicas set), its managedFields and the warnings to answer with."""

    obj: Obj
    managed: list[dict[str, Any]] | None
    warnings: list[str] = dataclass_field(default_factory=list)


def updated(
    rt: ResourceType, old: Obj, scale: Any, writer: ScaleWriter, *, field_validation: str,
    uid_precondition: bool,
) -> ScaleChange:
    """A PUT (`scale` is the body) or a patch (`scale` is the patched current Scale): the
    body's resourceVersion is a precondition (409 when stale), and a PUT's uid too."""
    replicas = requested_replicas(rt, scale)
    warnings = _field_warnings(scale, field_validation)
    name = old["metadata"]["name"]
    if replicas < 0 and _paths(rt).spec_selector:
        # A workload's ScaleREST validates the Scale itself (ValidateScale) before the object.
        cause = invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        raise invalid_object("autoscaling", KIND, name, [cause])
    check_identity(rt, scale, old["metadata"].get("namespace") or "", name)
    if uid_precondition:
        check_uid(rt, scale, old, name)
    _check_resource_version(rt, scale, old)
    before = _spec_replicas(rt, old)
    managed = managed_after_scale(rt, old, writer, before=before, after=replicas, owns=True)
    return ScaleChange(scaled(rt, old, replicas), managed, warnings)


def applied(rt: ResourceType, old: Obj, config: Obj, writer: ScaleWriter) -> ScaleChange:
    """A server-side apply of a Scale configuration: the applier owns spec.replicas when it
    sets them; a replicas value it applied before and now leaves out is removed from the
    Scale (0, as the Go type reads an absent count) unless another manager owns it too."""
    if config.get("apiVersion") != API_VERSION or config.get("kind") != KIND:
        raise bad_request(f"invalid object type: {_gvk(config)}")
    metadata = config.get("metadata")
    if isinstance(metadata, dict) and metadata.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    name = old["metadata"]["name"]
    check_identity(rt, config, old["metadata"].get("namespace") or "", name)
    _check_resource_version(rt, config, old)
    before = _spec_replicas(rt, old)
    spec = config.get("spec")
    owns = isinstance(spec, dict) and spec.get("replicas") is not None
    after = requested_replicas(rt, config) if owns else _left_out(rt, old, writer, before)
    managed = managed_after_scale(rt, old, writer, before=before, after=after, owns=owns)
    return ScaleChange(scaled(rt, old, after), managed)


def _left_out(rt: ResourceType, old: Obj, writer: ScaleWriter, before: int | None) -> int:
    """The replicas after an apply without them: as they were, or 0 when the applier was
    their only owner (pruned); a resource without spec replicas cannot keep none."""
    try:
        managed = decode(old["metadata"].get("managedFields"))
    except ValueError:
        managed = Managed()
    path = _path_of(_paths(rt).spec_replicas)
    key = identifier(writer.manager, APPLY, rt.api_version, SUBRESOURCE)
    mine = managed.managers.get(key)
    others = any(m.fields.has(path) for k, m in managed.managers.items() if k != key)
    if mine is not None and mine.fields.has(path) and not others:
        return 0
    if before is None:
        path_text = _paths(rt).spec_replicas
        raise bad_request(f'the spec replicas field "{path_text}" cannot be empty')
    return before


def _gvk(config: Obj) -> str:
    api_version = config.get("apiVersion") if isinstance(config.get("apiVersion"), str) else ""
    group, _, version = str(api_version).rpartition("/")
    kind = config.get("kind") if isinstance(config.get("kind"), str) else ""
    return f"{group}/{version}, Kind={kind}"


def _spec_replicas(rt: ResourceType, obj: Obj) -> int | None:
    try:
        value, found = _count(obj, _paths(rt).spec_replicas)
    except PathError as exc:
        raise ApiError(500, "", str(exc)) from exc
    return value if found else None


def _check_resource_version(rt: ResourceType, scale: Obj, old: Obj) -> None:
    """A Scale's resourceVersion is the resource's: a stale one is the resource's 409."""
    metadata = scale.get("metadata")
    wanted = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    if wanted not in (None, "") and str(wanted) != old["metadata"]["resourceVersion"]:
        raise conflict(rt.group, rt.plural, old["metadata"]["name"], LATEST_RV_MESSAGE)


def _field_warnings(scale: Obj, field_validation: str) -> list[str]:
    unknown = unknown_fields(scale) if field_validation != "Ignore" else []
    if unknown and field_validation == "Strict":
        raise cannot_decode(KIND, "v1", f"strict decoding error: {', '.join(unknown)}")
    return unknown


def managed_after_scale(
    rt: ResourceType, old: Obj, writer: ScaleWriter, *, before: int | None, after: int,
    owns: bool,
) -> list[dict[str, Any]] | None:
    """The managedFields of the resource after a write through /scale set the spec replicas
    from `before` (None: unset) to `after`; `owns`: the writer ends up owning them.

    As upstream's scale handler maps the Scale's managers back onto the resource: the writer
    (`subresource: scale`, the resource's apiVersion) owns the replicas field, the managers
    that owned it lose it when its value changed (an apply without force conflicts instead),
    everything else is untouched. An update's entry has no time: upstream carries over only
    times the resource already had, and an update's Scale-side manager is new to it.
    """
    entries = old["metadata"].get("managedFields")
    try:
        managed = decode(entries)
    except ValueError:
        managed = Managed()
    if not managed.managers and not writer.applied:
        return None  # upstream never starts tracking an existing object on an update
    changed = after != before
    if not changed and not writer.applied:
        return list(entries) if entries else None
    path = _path_of(_paths(rt).spec_replicas)
    mine = FieldSet.of(path)
    key = identifier(writer.manager, APPLY if writer.applied else UPDATE, rt.api_version,
                     SUBRESOURCE)
    owners = sorted(k for k, m in managed.managers.items() if k != key and m.fields.has(path))
    if changed and owners and writer.applied and not writer.force:
        raise conflict_error([(owner, SCALE_REPLICAS) for owner in owners])
    managed = managed.copy()
    for owner in owners if changed else ():
        previous = managed.managers[owner]
        remaining = previous.fields.difference(mine)
        if remaining.empty():
            del managed.managers[owner]
            managed.times.pop(owner, None)
        else:
            managed.managers[owner] = ManagerFields(remaining, previous.api_version,
                                                    previous.applied)
    if owns:
        managed.managers[key] = ManagerFields(mine, rt.api_version, writer.applied)
        managed.times[key] = managed.times.get(key) if writer.applied else None
    else:
        managed.managers.pop(key, None)
        managed.times.pop(key, None)
    return encode(managed)


def _path_of(dotted: str) -> Path:
    return tuple(field(name) for name in _names(dotted))
