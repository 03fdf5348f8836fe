"""Events the node posts about pods, as a kubelet (source component `jobmachine-node`) and
kube-scheduler (`default-scheduler`) do.

An event about one container names it in `involvedObject.fieldPath`
(`spec.containers{main}`), as the kubelet's do. An event identical to one already posted for
the same pod (same container, type, reason and message) is counted instead (`count` and
`lastTimestamp` patched), as client-go's event correlator does for the kubelet, so
`kubectl describe` reads "(x3 over 40s)". An event posted `once` has a name derived from the
pod's uid, so a restarted node asking again is answered AlreadyExists and nothing is
repeated. Failing to post an event is logged and never stops the pod.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from loguru import logger

from engine.cluster.node.times import now
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from engine.kube.resources import EVENTS

COMPONENT = "jobmachine-node"
SCHEDULER = "default-scheduler"

# (fieldPath, type, reason, message) of an event already posted about one pod.
_Key = tuple[str, str, str, str]


def field_path(container: str, *, init: bool) -> str:
    """How an event points at one container of its pod."""
    return f"spec.{'initContainers' if init else 'containers'}{{{container}}}"


def event_body(pod: Mapping[str, Any], *, node: str, reason: str, message: str, kind: str,
               name: str, at: str, path: str = "", component: str = COMPONENT
               ) -> dict[str, Any]:
    metadata = pod["metadata"]
    involved = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": metadata["name"],
        "namespace": metadata["namespace"],
        "uid": metadata.get("uid"),
        "resourceVersion": metadata.get("resourceVersion"),
        **({"fieldPath": path} if path else {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": metadata["namespace"]},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component, **({"host": node} if component == COMPONENT else {})},
        "reportingComponent": component,
        "reportingInstance": node if component == COMPONENT else f"{component}-{node}",
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


class EventPoster:
    """Posts pod events for one node, as its kubelet or (`component` SCHEDULER) its scheduler."""

    def __init__(self, api: KubeClient, node: str, component: str = COMPONENT) -> None:
        self._api = api
        self._node = node
        self._component = component
        self._lock = threading.Lock()
        # Events posted per pod uid and key: their name and count (forgotten with the pod,
        # or once nothing more will be said about it).
        self._posted: dict[str, dict[_Key, tuple[str, int]]] = {}

    def post(self, pod: Mapping[str, Any], reason: str, message: str, *,
             kind: str = "Normal", once: bool = False, path: str = "") -> None:
        metadata = pod["metadata"]
        uid, key = str(metadata.get("uid")), (path, kind, reason, message)
        with self._lock:
            seen = self._posted.get(uid, {}).get(key)
        if seen is not None and (once or self._count(pod, key, *seen)):
            return
        suffix = f"{metadata.get('uid')}.{reason.lower()}" if once else uuid.uuid4().hex[:16]
        body = event_body(pod, node=self._node, reason=reason, message=message, kind=kind,
                          name=f"{metadata['name'][:200].rstrip('-.')}.{suffix}", at=now(),
                          path=path, component=self._component)
        try:
            self._api.create(EVENTS, body, metadata["namespace"])
        except ApiError as exc:
            if not (once and isinstance(exc, AlreadyExists | Conflict)):
                self._warn(pod, reason, exc)
            return
        with self._lock:
            self._posted.setdefault(uid, {})[key] = (body["metadata"]["name"], 1)

    def _count(self, pod: Mapping[str, Any], key: _Key, name: str, count: int) -> bool:
        """Count one more occurrence of a posted event; False when it is gone (post anew)."""
        namespace = pod["metadata"]["namespace"]
        try:
            self._api.patch(EVENTS, name, {"count": count + 1, "lastTimestamp": now()},
                            namespace=namespace)
        except ApiError as exc:
            if not isinstance(exc, NotFound):
                self._warn(pod, key[2], exc)
                return True
            return False
        with self._lock:
            self._posted.setdefault(str(pod["metadata"].get("uid")), {})[key] = (name, count + 1)
        return True

    def forget(self, uid: str) -> None:
        """Drop what is known of a pod's events: it is deleted, or nothing more will be said
        about it (its worker ended, or it is bound)."""
        with self._lock:
            self._posted.pop(uid, None)

    @staticmethod
    def _warn(pod: Mapping[str, Any], reason: str, exc: ApiError) -> None:
        metadata = pod["metadata"]
        logger.bind(pod=f"{metadata['namespace']}/{metadata['name']}").warning(
            f"could not post event {reason}: {exc}"
        )
