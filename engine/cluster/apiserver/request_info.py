"""What a request asks to do, in the terms authorization and audit use.

kube-apiserver derives these attributes from the method and path alone, before
any handler runs, so that a denied request never reaches storage: the verb
(get, list, watch, create, update, patch, delete, deletecollection), and for
a resource request its group, version, namespace, resource, subresource and
name; anything else is a non-resource request to a path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from engine.cluster.apiserver.selectors import FieldSelector, SelectorError

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
# Subresources of a namespace itself, not resources inside it.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class RequestInfo:
    """The attributes of one request; `resource_request` False means a plain path."""

    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def resource_and_subresource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """The attributes of `method` on `path`, as kube-apiserver's RequestInfoFactory reads them."""
    parts = [unquote(part) for part in path.strip("/").split("/") if part]
    non_resource = RequestInfo(verb=method.lower(), path=path)
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return non_resource
    verb = _METHOD_VERBS.get(method.upper())
    if verb is None:
        return non_resource
    if rest[0] == "watch":
        verb, rest = "watch", rest[1:]
        if not rest:
            return non_resource
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "").lower() in ("1", "true") else "list"
    elif not name and verb == "delete":
        verb = "deletecollection"
    if verb in ("list", "watch"):
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    return RequestInfo(
        verb=verb, path=path, resource_request=True, api_group=group, api_version=version,
        namespace=namespace, resource=resource, subresource=subresource, name=name,
    )


def _name_from_field_selector(text: str) -> str:
    """A list or watch of one object by `metadata.name=X` is authorized as that object."""
    if not text:
        return ""
    try:
        selector = FieldSelector.parse(text, supported=_ANY_FIELD)
    except SelectorError:
        return ""
    return selector.exact("metadata.name") or ""


class _AnyField(frozenset[str]):
    """Every field is accepted here: the handler checks the selector against the resource."""

    def __contains__(self, item: object) -> bool:
        return True


_ANY_FIELD = _AnyField()
