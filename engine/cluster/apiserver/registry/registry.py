"""The set of served resource types: the built-ins plus every established CRD version.

Routing, discovery, OpenAPI and storage all ask this one registry, so a CRD's
kinds appear everywhere at once when it is established and disappear
everywhere at once when it is deleted. Compiled CRD schemas and the structure
server-side apply reads are cached here, once per served version.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.cluster.apiserver.patch.apply_schema import TypeNode, builtin_type, custom_resource_type
from engine.cluster.apiserver.registry.builtins import BUILTIN_TYPES
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.schema.schema_validation import CompiledSchema
from engine.cluster.apiserver.storage.objects import TypeKey

VersionKey = tuple[str, str, str]  # (group, version, plural)


def _version_key(rt: ResourceType) -> VersionKey:
    return (rt.group, rt.version, rt.plural)


class Registry:
    """Served types by (group, version, plural), and each type's storage version."""

    def __init__(self, builtins: Iterable[ResourceType] = BUILTIN_TYPES) -> None:
        self._types: dict[VersionKey, ResourceType] = {}
        self._storage: dict[TypeKey, ResourceType] = {}
        self._schemas: dict[VersionKey, CompiledSchema] = {}
        self._apply_types: dict[VersionKey, TypeNode] = {}
        self._builtin_keys: set[TypeKey] = set()
        self._list: tuple[ResourceType, ...] = ()
        self.revision = 0
        for rt in builtins:
            self._types[_version_key(rt)] = rt
            self._storage[rt.key] = rt
            self._builtin_keys.add(rt.key)
        self._changed()

    def types(self) -> tuple[ResourceType, ...]:
        """Every served type, built-ins first, in a stable order."""
        return self._list

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def storage(self, key: TypeKey) -> ResourceType | None:
        """The version objects of this type are stored (and garbage-collected) as."""
        return self._storage.get(key)

    def is_builtin(self, key: TypeKey) -> bool:
        return key in self._builtin_keys

    def namespaced_keys(self) -> list[TypeKey]:
        return [key for key, rt in self._storage.items() if rt.namespaced]

    def serve(self, served: list[ResourceType], storage: ResourceType) -> None:
        """Serve a custom type's versions, replacing whatever was served for it before."""
        key = storage.key
        if key in self._builtin_keys:
            raise ValueError(f"{key[1]}.{key[0]} is a built-in type")
        self._drop(key)
        for rt in served:
            self._types[_version_key(rt)] = rt
        self._storage[key] = storage
        self._changed()

    def withdraw(self, key: TypeKey) -> None:
        """Stop serving a custom type (its CRD is gone)."""
        if key in self._builtin_keys:
            raise ValueError(f"{key[1]}.{key[0]} is a built-in type")
        self._drop(key)
        self._storage.pop(key, None)
        self._changed()

    def compiled_schema(self, rt: ResourceType) -> CompiledSchema | None:
        """The compiled openAPIV3Schema of a custom type's version; None for built-ins."""
        if rt.schema is None:
            return None
        version_key = _version_key(rt)
        compiled = self._schemas.get(version_key)
        if compiled is None:
            compiled = self._schemas[version_key] = CompiledSchema(rt.schema)
        return compiled

    def apply_type(self, rt: ResourceType) -> TypeNode:
        """The structure server-side apply and managed fields see in objects of `rt`."""
        version_key = _version_key(rt)
        node = self._apply_types.get(version_key)
        if node is None:
            node = (
                builtin_type(rt.group, rt.kind)
                if rt.key in self._builtin_keys
                else custom_resource_type(rt.schema)
            )
            self._apply_types[version_key] = node
        return node

    def _drop(self, key: TypeKey) -> None:
        for version_key in [vk for vk, rt in self._types.items() if rt.key == key]:
            del self._types[version_key]
            self._schemas.pop(version_key, None)
            self._apply_types.pop(version_key, None)

    def _changed(self) -> None:
        self._list = tuple(self._types.values())
        self.revision += 1
