"""Events the node posts about pods (source component `jobmachine-node`), as a kubelet does.

An event posted `once` has a name derived from the pod's uid, so a restarted
node asking again is answered AlreadyExists and nothing is repeated. Failing to
post an event is logged and never stops the pod.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from loguru import logger

from engine.cluster.node.api import ApiError, NodeApi
from engine.cluster.node.times import now

COMPONENT = "jobmachine-node"


def event_body(pod: Mapping[str, Any], *, node: str, reason: str, message: str, kind: str,
               name: str, at: str) -> dict[str, Any]:
    metadata = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": metadata["namespace"]},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": COMPONENT, "host": node},
        "reportingComponent": COMPONENT,
        "reportingInstance": node,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


class EventPoster:
    """Posts pod events for one node."""

    def __init__(self, api: NodeApi, node: str) -> None:
        self._api = api
        self._node = node

    def post(self, pod: Mapping[str, Any], reason: str, message: str, *,
             kind: str = "Normal", once: bool = False) -> None:
        metadata = pod["metadata"]
        suffix = f"{metadata.get('uid')}.{reason.lower()}" if once else uuid.uuid4().hex[:16]
        body = event_body(pod, node=self._node, reason=reason, message=message, kind=kind,
                          name=f"{metadata['name'][:200].rstrip('-.')}.{suffix}", at=now())
        try:
            self._api.post(f"/api/v1/namespaces/{metadata['namespace']}/events", body)
        except ApiError as exc:
            if once and exc.status == 409:
                return
            logger.bind(pod=f"{metadata['namespace']}/{metadata['name']}").warning(
                f"could not post event {reason}: {exc}"
            )
