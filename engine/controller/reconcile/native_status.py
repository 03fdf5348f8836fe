"""Jobs of a kind whose status has a fixed schema (a built-in kind such as batch/v1 Job).

The engine's status (record, phase, conditions, counts: the write-ahead log of the
machines) cannot live in such a status: the API server drops fields its schema lacks.
With `governs.statusLayout: Native` it lives in the job's annotation
`jobmachine.dev/status` instead, and the status holds only what the kind defines: the
conditions (as the Job API writes them), startTime, completionTime and the fields the
machine's `status` section computes. Every reader of a job takes `engine_view` first,
so the rest of the engine sees the same status whatever the layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from engine.controller.reconcile.record import state_of
from engine.definition import CompiledDefinition, render_status_fields
from engine.kube.client import KubeClient
from engine.kube.resources import Resource

ENGINE_STATUS_ANNOTATION = "jobmachine.dev/status"
"""The annotation holding a Native-layout job's engine status, as compact JSON."""
NATIVE_STATUS = "jobmachine.dev/native-status"
"""Where an engine view keeps the job's own status as the server had it (never written)."""

Obj = dict[str, Any]


def is_native(definition: CompiledDefinition) -> bool:
    """Whether jobs of the definition's kind keep the engine status in an annotation."""
    governs = definition.definition.spec.governs
    return governs is not None and governs.status_layout == "Native"


def engine_view(job: Mapping[str, Any], definition: CompiledDefinition | None = None) -> Obj:
    """The job with the engine's status as `status`: the annotation's, where the job has
    one; none yet for a job of a Native-layout `definition`; else the job's status.

    Without a definition (a reader that does not know the machine: the web view, `graph
    --job`) a job is taken as it comes unless it carries the annotation.
    """
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    stored = annotations.get(ENGINE_STATUS_ANNOTATION)
    if stored is None and (definition is None or not is_native(definition)):
        return dict(job)
    try:
        status = orjson.loads(stored) if stored else {}
    except orjson.JSONDecodeError:
        status = {}  # hand-edited into nonsense: the job starts its record again
    return {**job, "status": status if isinstance(status, dict) else {},
            NATIVE_STATUS: dict(job.get("status") or {})}


def native_status(
    definition: CompiledDefinition, status: Mapping[str, Any], variables: Mapping[str, Any]
) -> Obj:
    """The kind's own status for an engine status: the conditions as the Job API writes
    them (lastProbeTime, no lastUpdateTime) and the machine's `status` fields over the
    decision's job-level variables and `status`, the engine status (startTime and
    completionTime are the machine's to copy: the Job API sets completionTime only for a
    job that succeeded)."""
    native: Obj = {}
    conditions = [
        {"type": c["type"], "status": c["status"], "reason": c.get("reason", ""),
         "message": c.get("message", ""), "lastProbeTime": c.get("lastUpdateTime"),
         "lastTransitionTime": c.get("lastTransitionTime")}
        for c in status.get("conditions") or ()
    ]
    if conditions:
        native["conditions"] = conditions
    # `state` is written only where it is not the phase's word; the fields read it whole.
    engine_status = {**status, "state": state_of(status)}
    native.update(render_status_fields(definition, {**variables, "status": engine_status}))
    return native


def write_native(
    client: KubeClient, resource: Resource, job: Mapping[str, Any], status: Mapping[str, Any],
    native: Mapping[str, Any],
) -> Obj:
    """Write the engine status into the annotation (conditional on the resourceVersion the
    decision was made from: the write-ahead record), then the kind's status; the job as
    the server has it after both."""
    metadata = job["metadata"]
    name, namespace = metadata["name"], metadata["namespace"]
    written: Obj = dict(job)
    text = orjson.dumps(dict(status)).decode()
    if (metadata.get("annotations") or {}).get(ENGINE_STATUS_ANNOTATION) != text:
        patch = {"metadata": {"resourceVersion": metadata["resourceVersion"],
                              "annotations": {ENGINE_STATUS_ANNOTATION: text}}}
        written = client.patch(resource, name, patch, namespace=namespace, patch_type="merge")
    if dict(native) != job.get(NATIVE_STATUS, {}):
        version = written["metadata"]["resourceVersion"]  # after the annotation's write
        current = {**job, "metadata": {**metadata, "resourceVersion": version},
                   "spec": written.get("spec") or {}}
        written = replace_native_status(client, resource, current, native)
    return written


def replace_native_status(
    client: KubeClient, resource: Resource, job: Mapping[str, Any], status: Mapping[str, Any]
) -> Obj:
    """Replace the kind's own status of `job` (conditional on its resourceVersion); the job
    as the server has it after."""
    metadata = job["metadata"]
    body = {
        "apiVersion": job["apiVersion"], "kind": job["kind"],
        "metadata": {"name": metadata["name"], "namespace": metadata["namespace"],
                     "uid": metadata["uid"], "resourceVersion": metadata["resourceVersion"]},
        "spec": job.get("spec") or {},
        "status": dict(status),
    }
    return client.replace(resource, metadata["name"], body, namespace=metadata["namespace"],
                          subresource="status")
