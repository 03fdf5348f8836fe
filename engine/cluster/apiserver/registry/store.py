"""The API verbs over the object table: get, create, update, patch (delete is in deletion.py).

Each write runs the same pipeline as a real API server's registry: identity
and precondition checks, server-owned metadata, typed decoding, defaulting,
mutating admission (pod service account, pod priority), validation (schema, pruning), validating
admission (PodSecurity, one default PriorityClass), generation, the no-op rule, then one
commit to the table, which tells the watch hub, the journal and the background
duties. `dry_run` runs everything but the commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.cluster.apiserver.admission.admit import DEFAULT_FIELD_VALIDATION, admit
from engine.cluster.apiserver.admission.defaults import Held, apply_defaults
from engine.cluster.apiserver.admission.pod_security import admit_pod_security
from engine.cluster.apiserver.admission.priority_admission import (
    StoredClasses,
    admit_pod,
    check_priority_class,
)
from engine.cluster.apiserver.admission.service_account_admission import (
    admit_pod as admit_service_account,
)
from engine.cluster.apiserver.admission.typed_decoding import decode_typed
from engine.cluster.apiserver.errors import (
    ApiError,
    Cause,
    already_exists,
    bad_request,
    invalid,
    not_found,
)
from engine.cluster.apiserver.patch.patch_types import patched
from engine.cluster.apiserver.patch.server_side_apply import applied, decode_config
from engine.cluster.apiserver.patch.write_ownership import Ownership, with_managed_fields
from engine.cluster.apiserver.registry import crds, deletion
from engine.cluster.apiserver.registry.builtins import (
    CRDS,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
    SERVICE_ACCOUNTS,
    SERVICES,
    strategy_for,
)
from engine.cluster.apiserver.registry.node_ports import held as held_node_ports
from engine.cluster.apiserver.registry.pod_binding import bound_pod, checked_binding
from engine.cluster.apiserver.registry.reactor import Reactor
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.scale import SUBRESOURCE as SCALE
from engine.cluster.apiserver.registry.scale import ScaleChange
from engine.cluster.apiserver.registry.writes import (
    bump_generation,
    check_identity,
    check_resource_version,
    check_type,
    check_uid,
    check_uid_kept,
    generated_name,
    generation_moves,
    new_finalizer_causes,
    prepare_create,
    prepare_update,
    timestamp,
    unchanged,
)
from engine.cluster.apiserver.storage.objects import Entry, Obj, ObjectTable
from engine.cluster.apiserver.storage.watch import DEFAULT_HISTORY, DEFAULT_HISTORY_AGE, WatchHub
from engine.cluster.apiserver.validation.builtin_fields import prune_unknown

_GENERATE_NAME_ATTEMPTS = 8


@dataclass
class Written:
    """The outcome of a write: the object as stored (or as it would be, on dry run)."""

    entry: Entry
    warnings: list[str] = field(default_factory=list)
    created: bool = False


class Store:
    """The object table behind the API verbs, its watch hub and its clock."""

    def __init__(
        self,
        registry: Registry,
        reactor: Reactor,
        *,
        table: ObjectTable | None = None,
        history: int = DEFAULT_HISTORY,
        history_age: float = DEFAULT_HISTORY_AGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.registry = registry
        self.reactor = reactor
        self.table = table if table is not None else ObjectTable()
        self.hub = WatchHub(self.table, capacity=history, max_age=history_age, clock=clock)
        self.clock = clock
        self._priority_classes = StoredClasses(self.table)

    def now(self) -> str:
        return timestamp(self.clock())

    def get(self, rt: ResourceType, ns: str, name: str) -> Entry:
        entry = self.table.get(rt.key, ns, name)
        if entry is None:
            raise not_found(rt.group, rt.plural, name)
        return entry

    def create(
        self,
        rt: ResourceType,
        ns: str,
        body: Obj,
        *,
        dry_run: bool = False,
        field_validation: str = DEFAULT_FIELD_VALIDATION,
        field_manager: str = "",
    ) -> Written:
        body = _object(body)
        return self._create(
            rt, ns, body, Ownership(field_manager, sent=body),
            dry_run=dry_run, field_validation=field_validation,
        )

    def _create(
        self,
        rt: ResourceType,
        ns: str,
        body: Obj,
        ownership: Ownership,
        *,
        dry_run: bool,
        field_validation: str,
    ) -> Written:
        obj = prepare_create(rt, body, ns, now=self.now(), strategy=strategy_for(rt.key))
        metadata = obj["metadata"]
        self._check_namespace(rt, ns, metadata.get("name") or "")
        self._check_type_accepts_creates(rt)
        # Admission refusals name the object as sent: upstream admits before generating names.
        requested_name = str(metadata.get("name") or metadata.get("generateName") or "")
        if not metadata.get("name"):
            metadata["name"] = self._generate_name(rt, ns, metadata.get("generateName"))
        defaulted = apply_defaults(rt.key, decode_typed(rt, obj), None, self._held())
        obj = self._mutating_admission(rt, defaulted, None, name=requested_name, namespace=ns)
        before_admission = None if obj is defaulted else _decoded(rt, defaulted)
        obj, warnings = admit(self.registry, rt, obj, None, field_validation=field_validation)
        warnings = [*warnings, *self._validating_admission(rt, obj, None)]
        if rt.key == CRDS.key:
            obj = crds.prepare_crd(obj, None, self.registry, now=self.now())
        obj = with_managed_fields(
            self.registry, rt, ownership, old=None, new=obj, subresource=None, now=self.now(),
            before_admission=before_admission,
        )
        if self.table.get(rt.key, ns, metadata["name"]) is not None:
            raise already_exists(rt.group, rt.plural, metadata["name"])
        entry = Entry(obj) if dry_run else self.table.put(rt.key, obj)
        return Written(entry, warnings, created=True)

    def update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        body: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = DEFAULT_FIELD_VALIDATION,
        field_manager: str = "",
    ) -> Written:
        body = _object(body)
        check_type(rt, body)
        check_identity(rt, body, ns, name)
        entry = self.table.get(rt.key, ns, name)
        if entry is None:
            if subresource is None and strategy_for(rt.key).create_on_update:
                body = {**body, "metadata": {**body.get("metadata", {}), "name": name}}
                return self.create(
                    rt, ns, body, dry_run=dry_run, field_validation=field_validation,
                    field_manager=field_manager,
                )
            raise not_found(rt.group, rt.plural, name)
        return self._replace(
            rt, entry, body, name, subresource, ownership=Ownership(field_manager, sent=body),
            dry_run=dry_run, field_validation=field_validation,
        )

    def patch(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        content_type: str,
        body: bytes,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = DEFAULT_FIELD_VALIDATION,
        field_manager: str = "",
    ) -> Written:
        entry = self.get(rt, ns, name)
        result = patched(rt, content_type, entry.obj, body)
        check_type(rt, result)
        check_identity(rt, result, ns, name)
        _check_applied_name(result, name)  # a patch that drops the name (or metadata) is 400
        return self._replace(
            rt, entry, result, name, subresource, ownership=Ownership(field_manager, sent=result),
            dry_run=dry_run, field_validation=field_validation, patched=True,
        )

    def apply(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        body: bytes,
        *,
        field_manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = DEFAULT_FIELD_VALIDATION,
    ) -> Written:
        """Server-side apply: merge the configuration in `body` into the object as
        `field_manager`, creating the object when it does not exist."""
        config = decode_config(body)
        entry = self.table.get(rt.key, ns, name)
        if entry is None and subresource is not None:
            raise not_found(rt.group, rt.plural, name)
        node = self.registry.apply_type(rt)
        merged, managed = applied(
            rt, node, entry.obj if entry else None, config, manager=field_manager, force=force,
            subresource=subresource, now=self.now(), builtin=self.registry.is_builtin(rt.key),
        )
        ownership = Ownership.of_apply(field_manager, managed)
        check_type(rt, merged)
        if entry is None:
            _check_applied_name(merged, name)
            check_identity(rt, merged, ns, name)
            return self._create(
                rt, ns, merged, ownership, dry_run=dry_run, field_validation=field_validation
            )
        check_identity(rt, merged, ns, name)
        return self._replace(
            rt, entry, merged, name, subresource, ownership=ownership,
            dry_run=dry_run, field_validation=field_validation, patched=True,
        )

    def write_scale(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        change: Callable[[Obj], ScaleChange],
        *,
        manager: str,
        dry_run: bool = False,
    ) -> Written:
        """A write through a custom resource's `scale` subresource: `change` makes the resource
        with its new spec replicas (and their ownership) from the stored one, which is then
        stored as any spec change is (validation, generation, watch event)."""
        entry = self.get(rt, ns, name)
        scaled = change(entry.obj)
        written = self._write(
            rt, entry=entry, new=scaled.obj, subresource=SCALE,
            ownership=Ownership.precomputed(manager, scaled.managed), dry_run=dry_run,
            field_validation="Ignore",
        )
        return Written(written.entry, [*scaled.warnings, *written.warnings])

    def _replace(
        self,
        rt: ResourceType,
        entry: Entry,
        body: Obj,
        name: str,
        subresource: str | None,
        *,
        ownership: Ownership,
        dry_run: bool,
        field_validation: str,
        patched: bool = False,
    ) -> Written:
        """The write update, patch and apply end in, once the new body is known. An update's
        uid is its precondition (409), a patched or applied object's must be the stored one
        (422), as kube-apiserver checks each."""
        old = entry.obj
        if patched:
            check_resource_version(rt, body, old, strategy=strategy_for(rt.key), name=name)
            check_uid_kept(rt, body, old, name)
        else:
            check_uid(rt, body, old, name)
            check_resource_version(rt, body, old, strategy=strategy_for(rt.key), name=name)
        new = prepare_update(rt, body, old, subresource)
        return self._write(
            rt,
            entry=entry,
            new=new,
            subresource=subresource,
            ownership=ownership,
            dry_run=dry_run,
            field_validation=field_validation,
        )

    def _write(
        self,
        rt: ResourceType,
        *,
        entry: Entry,
        new: Obj,
        subresource: str | None,
        ownership: Ownership,
        dry_run: bool,
        field_validation: str,
    ) -> Written:
        old = entry.obj
        if subresource in (None, "status"):  # decoded, so defaulted, as a whole
            new = apply_defaults(rt.key, decode_typed(rt, new, old), old, self._held())
        before_admission = None
        if subresource is None:
            defaulted = new
            new = self._mutating_admission(rt, new, old, name=old["metadata"]["name"],
                                           namespace=old["metadata"].get("namespace") or "")
            before_admission = None if new is defaulted else _decoded(rt, defaulted)
        new, warnings = admit(
            self.registry, rt, new, old, field_validation=field_validation, subresource=subresource
        )
        if subresource is None:
            warnings = [*warnings, *self._validating_admission(rt, new, old)]
        if rt.key == CRDS.key:
            new = crds.prepare_crd(new, old, self.registry, now=self.now())
        causes = new_finalizer_causes(new, old)
        if causes:
            raise invalid(rt.group, rt.kind, old["metadata"]["name"], causes)
        if generation_moves(rt, new, old, strategy_for(rt.key).generation):
            bump_generation(new, old)
        new = with_managed_fields(
            self.registry, rt, ownership, old=old, new=new, subresource=subresource,
            now=self.now(), before_admission=before_admission,
        )
        if unchanged(new, old):
            return Written(entry, warnings)
        if dry_run:
            return Written(Entry(new), warnings)
        stored = self.table.put(rt.key, new)
        if deletion.ready_to_remove(rt.key, stored.obj):
            ns, name = stored.obj["metadata"].get("namespace") or "", old["metadata"]["name"]
            stored = self.table.remove(rt.key, ns, name)
        return Written(stored, warnings)

    def bind(self, rt: ResourceType, ns: str, name: str, body: Obj, *, dry_run: bool) -> Entry:
        """The pod `binding` subresource: assign an unbound pod to a node
        (`pod_binding.py` says what is checked, in kube-apiserver's order)."""
        binding = checked_binding(rt, ns, name, _object(body))
        new = bound_pod(rt, self.get(rt, ns, name).obj, binding, now=self.now())
        return Entry(new) if dry_run else self.table.put(rt.key, new)

    def _mutating_admission(self, rt: ResourceType, obj: Obj, old: Obj | None, *, name: str,
                            namespace: str) -> Obj:
        """The pod plugins in upstream's order: ServiceAccount (create only), Priority."""
        if rt.key != PODS.key:
            return obj
        if old is None:
            obj = admit_service_account(obj, self._service_account, namespace=namespace,
                                        name=name)
        return admit_pod(obj, old, self._priority_classes, name=name)

    def _service_account(self, namespace: str, name: str) -> Obj | None:
        entry = self.table.get(SERVICE_ACCOUNTS.key, namespace, name)
        return None if entry is None else entry.obj

    def _validating_admission(self, rt: ResourceType, obj: Obj, old: Obj | None) -> list[str]:
        """The validating plugins served: PodSecurity (its warnings are returned), then the
        Priority plugin's PriorityClass part."""
        warnings = admit_pod_security(rt.key, obj, old, self.table)
        if rt.key == PRIORITY_CLASSES.key:
            check_priority_class(obj, old, self._priority_classes)
        return warnings

    def _check_namespace(self, rt: ResourceType, ns: str, name: str) -> None:
        if not rt.namespaced:
            return
        namespace = self.table.get(NAMESPACES.key, "", ns)
        if namespace is None:
            raise not_found("", "namespaces", ns)
        if namespace.obj["metadata"].get("deletionTimestamp"):
            resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            raise ApiError(
                403,
                "Forbidden",
                f'{resource} "{name}" is forbidden: unable to create new content in namespace '
                f"{ns} because it is being terminated",
                {"name": name, "group": rt.group, "kind": rt.plural},
                (
                    Cause(
                        "metadata.namespace",
                        f"namespace {ns} is being terminated",
                        "NamespaceTerminating",
                    ),
                ),
            )

    def _check_type_accepts_creates(self, rt: ResourceType) -> None:
        if self.registry.is_builtin(rt.key):
            return
        crd = self.table.get(CRDS.key, "", f"{rt.plural}.{rt.group}")
        if crd is not None and crd.obj["metadata"].get("deletionTimestamp"):
            raise ApiError(  # apierrors.NewMethodNotSupported, with the handler's words
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
                {"group": rt.group, "kind": rt.plural},
            )

    def _generate_name(self, rt: ResourceType, ns: str, base: object) -> str:
        if not isinstance(base, str) or not base:
            cause = Cause(
                "metadata.name", "Required value: name or generateName is required",
                "FieldValueRequired",
            )
            raise invalid(rt.group, rt.kind, "", [cause])
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            name = generated_name(base)
            if self.table.get(rt.key, ns, name) is None:
                return name
        # apierrors.NewGenerateNameConflict: the last name tried, and a hint to try again
        error = already_exists(rt.group, rt.plural, name)
        error.message += ", the server was not able to generate a unique name for the object"
        error.details["retryAfterSeconds"] = 1
        raise error

    def _held(self) -> Held:
        return Held(self._service_ips, self._node_ports)

    def _service_ips(self) -> list[str]:
        return [
            str(entry.obj.get("spec", {}).get("clusterIP"))
            for entry in self.table.bucket(SERVICES.key).entries.values()
        ]

    def _node_ports(self) -> set[int]:
        """The node ports the stored services hold."""
        return {
            port
            for entry in self.table.bucket(SERVICES.key).entries.values()
            for port in held_node_ports(entry.obj.get("spec"))
        }


def _check_applied_name(obj: Obj, name: str) -> None:
    """A patched object, or an apply that creates, must name the object as the URL does
    (checkName: an empty name does not match either)."""
    metadata = obj.get("metadata")
    body_name = (metadata.get("name") if isinstance(metadata, dict) else None) or ""
    if body_name != name:
        raise bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )


def _decoded(rt: ResourceType, obj: Obj) -> Obj:
    """`obj` without the fields its kind lacks: what upstream's field manager sees, as it runs
    on the decoded object, before admission (unknown fields are no manager's)."""
    return prune_unknown(rt.kind, obj)[0]


def _object(body: object) -> Obj:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    return body
