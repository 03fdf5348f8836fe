"""What the node keeps of each pod in its watch cache, and why.

The node watches every pod (its scheduler binds the unbound ones), so its cache
holds a copy of each for as long as the pod exists. No copy keeps
`metadata.managedFields`: nothing on the node reads them, and they are half of
what a pod that has run costs in memory (kube-scheduler's informers drop them
too). A bound pod the node will never run again (finished, or its worker
ended) is kept as a small view: who it is, its owner and gang labels, where it is bound,
its phase and whether its deletion started. That is all the scheduler (freeing
its place, gang counts), the deletion confirmations and the attempt counts
still read.
"""

from __future__ import annotations

from typing import Any

Pod = dict[str, Any]

_FINISHED_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels", "annotations",
                      "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds")


def without_managed_fields(pod: Pod) -> Pod:
    """The pod without metadata.managedFields (itself when it has none)."""
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return pod
    return {**pod, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


def finished_view(pod: Pod) -> Pod:
    """The part of a pod the node reads once it will never run it again."""
    metadata = pod.get("metadata") or {}
    node_name = (pod.get("spec") or {}).get("nodeName")
    phase = (pod.get("status") or {}).get("phase")
    return {
        "metadata": {key: metadata[key] for key in _FINISHED_METADATA if key in metadata},
        "spec": {"nodeName": node_name} if node_name else {},
        "status": {"phase": phase} if phase else {},
    }
