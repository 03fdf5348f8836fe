"""What a request asks to do, in the terms authorization and audit use.

kube-apiserver derives these attributes from the method and path alone, before
any handler runs, so that a denied request never reaches storage: the verb
(get, list, watch, create, update, patch, delete, deletecollection), and for
a resource request its group, version, namespace, resource, subresource and
name; anything else is a non-resource request to a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from multidict import MultiMapping

from engine.cluster.apiserver.endpoints import params
from engine.cluster.apiserver.registry.selectors import FieldSelector, SelectorError

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


def request_info(method: str, path: str, query: MultiMapping[str]) -> RequestInfo:
    """The attributes of `method` on `path`, as kube-apiserver's RequestInfoFactory reads them."""
    parts = [unquote(part) for part in path.strip("/").split("/") if part]
    non_resource = RequestInfo(verb=method.lower(), path=path)
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return non_resource
    # An unknown method on a resource path is a resource request no rule's verbs match.
    verb = _METHOD_VERBS.get(method.upper(), "")
    watch_path = rest[0] == "watch"
    if watch_path:
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
        # The handler's own rule (upstream's request info and handler decode the same
        # ListOptions): a request is never authorized as a list and served as a watch.
        verb = "watch" if params.flag(query, "watch") else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    elif not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(
        verb=verb, path=path, resource_request=True, api_group=group, api_version=version,
        namespace=namespace, resource=resource, subresource=subresource, name=name,
    )


def _name_from_field_selector(text: str) -> str:
    """A list or watch of one object by `metadata.name=X` is authorized as that object (a
    name that could not be in a path is no name)."""
    if not text:
        return ""
    try:
        selector = FieldSelector.parse(text, supported=_ANY_FIELD)
    except SelectorError:
        return ""
    name = selector.exact("metadata.name") or ""
    return "" if name in (".", "..") or "/" in name or "%" in name else name


class _AnyField(frozenset[str]):
    """Every field is accepted here: the handler checks the selector against the resource."""

    def __contains__(self, item: object) -> bool:
        return True


_ANY_FIELD = _AnyField()
