"""Where kube-apiserver keeps an object in etcd, and the precondition error that names it.

A failed uid or resourceVersion precondition (a delete's `preconditions`, a PUT carrying a
uid, a Binding's uid) is a storage error in kube-apiserver, reported as a 409 whose message
embeds etcd's key: `StorageError: invalid object, Code: 4, Key: /registry/pods/default/p, ...`.
Controllers match that text (`StorageError: invalid object, Code: 4` is how several tell an
object deleted and recreated under them), so the embedded server words it the same. The key
follows kube-apiserver's storage layout: built-in resources under their plural (a few under
historical names), the API extension kinds and custom resources under group and plural.
"""

from __future__ import annotations

from engine.cluster.apiserver.errors import ApiError, conflict
from engine.cluster.apiserver.registry.resources import ResourceType

ETCD_PREFIX = "/registry"

SPECIAL_PREFIXES: dict[tuple[str, str], str] = {
    ("", "replicationcontrollers"): "controllers",
    ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("extensions", "ingresses"): "ingress",
    ("networking.k8s.io", "ingresses"): "ingress",
}
"""Built-in resources kept under another name (kube-apiserver's
SpecialDefaultResourcePrefixes)."""

GROUP_PREFIXED = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})
"""Built-in groups whose resources are kept under group and plural, as custom resources are."""

INVALID_OBJECT = 4
"""etcd storage's ErrCodeInvalidObj."""


def storage_key(rt: ResourceType, namespace: str, name: str) -> str:
    """The object's etcd key in kube-apiserver, e.g. /registry/pods/default/p."""
    if (rt.group, rt.plural) in SPECIAL_PREFIXES:
        prefix = SPECIAL_PREFIXES[(rt.group, rt.plural)]
    elif rt.group in GROUP_PREFIXED or rt.schema is not None:
        prefix = f"{rt.group}/{rt.plural}"
    else:
        prefix = rt.plural
    where = f"{namespace}/{name}" if rt.namespaced else name
    return f"{ETCD_PREFIX}/{prefix}/{where}"


def precondition_failed(rt: ResourceType, namespace: str, name: str, field: str, *,
                        wanted: object, actual: object) -> ApiError:
    """409 for a precondition on `field` ("UID" or "ResourceVersion") that the stored object
    does not meet, in kube-apiserver's words."""
    detail = (f"Precondition failed: {field} in precondition: {wanted}, "
              f"{field} in object meta: {actual}")
    why = (f"StorageError: invalid object, Code: {INVALID_OBJECT}, "
           f"Key: {storage_key(rt, namespace, name)}, ResourceVersion: 0, "
           f"AdditionalErrorMsg: {detail}")
    return conflict(rt.group, rt.plural, name, why)
