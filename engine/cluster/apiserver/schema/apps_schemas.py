"""The published schemas of the replicated workloads: Deployment, ReplicaSet (apps/v1) and
ReplicationController (v1), their specs and statuses field by field.

`kubectl explain deployment.spec.strategy` reads these. As for Jobs, the pod template's spec
and the label selector stay open: the server, not kubectl, validates them. `maxSurge` and
`maxUnavailable` are strings of format int-or-string, as upstream publishes them. The
descriptions are this project's words.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.cluster.apiserver.schema.schema_parts import OPEN as _OPEN
from engine.cluster.apiserver.schema.schema_parts import Schema, pod_template
from engine.cluster.apiserver.schema.schema_parts import integer as _int
from engine.cluster.apiserver.schema.schema_parts import obj as _object
from engine.cluster.apiserver.schema.schema_parts import text as _text


def _int_or_string(description: str) -> Schema:
    """As upstream publishes an intstr.IntOrString: a string of format int-or-string."""
    return {"type": "string", "format": "int-or-string", "description": description}


def _pod_template(meta: Schema, what: str) -> Schema:
    return pod_template(
        meta, f"The pods the {what} keeps running: their metadata and their pod spec.")


def _conditions(what: str, *extra: str) -> Schema:
    fields = {
        "type": _text("The kind of condition."),
        "status": _text("True, False or Unknown."),
        "lastTransitionTime": {"type": "string", "format": "date-time",
                               "description": "When the status last changed."},
        "reason": _text("A one-word reason for the last change."),
        "message": _text("What happened, for people."),
    }
    if "lastUpdateTime" in extra:
        fields["lastUpdateTime"] = {"type": "string", "format": "date-time",
                                    "description": "When the condition was last written."}
    return {"type": "array", "items": _object(f"One condition of the {what}.", fields,
                                              "type", "status"),
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            "x-kubernetes-patch-merge-key": "type", "x-kubernetes-patch-strategy": "merge",
            "description": f"The {what}'s latest observations."}


def _replica_counts(what: str) -> dict[str, Schema]:
    return {
        "replicas": _int(f"Pods the {what} has (its most recently observed count)."),
        "fullyLabeledReplicas": _int("Pods whose labels match the template's labels."),
        "readyReplicas": _int("Pods that are ready."),
        "availableReplicas": _int("Pods ready for at least minReadySeconds."),
        "observedGeneration": _int(f"The generation of the {what} last acted on.", "int64"),
        "conditions": _conditions(what),
    }


def deployment_spec(meta: Schema) -> Schema:
    strategy = _object("How old pods make way for new ones.", {
        "type": _text("Recreate or RollingUpdate (the default).", "Recreate", "RollingUpdate"),
        "rollingUpdate": _object("The bounds of a rolling update (type RollingUpdate only).", {
            "maxSurge": _int_or_string(
                "Pods allowed above the desired count during an update: a number or a "
                "percent, rounded up (default 25%)."),
            "maxUnavailable": _int_or_string(
                "Pods allowed to be unavailable during an update: a number or a percent, "
                "rounded down (default 25%)."),
        }),
    })
    return _object("What the Deployment keeps running and how it rolls out changes.", {
        "replicas": _int("How many pods are wanted (default 1)."),
        "selector": {**_OPEN, "description": "The label selector of the Deployment's pods; "
                                             "it must match the template's labels."},
        "template": _pod_template(meta, "Deployment"),
        "strategy": strategy,
        "minReadySeconds": _int("Seconds a new pod must be ready to count as available."),
        "revisionHistoryLimit": _int("Old ReplicaSets kept for rollback (default 10)."),
        "paused": {"type": "boolean", "description": "Whether rollouts are held back."},
        "progressDeadlineSeconds": _int(
            "Seconds a rollout may make no progress before it is reported failed "
            "(default 600)."),
    }, "selector", "template")


def deployment_status() -> Schema:
    return _object("What the Deployment has observed.", {
        "observedGeneration": _int("The generation of the Deployment last acted on.", "int64"),
        "replicas": _int("Pods the Deployment's ReplicaSets have."),
        "updatedReplicas": _int("Pods that have the current template."),
        "readyReplicas": _int("Pods that are ready."),
        "availableReplicas": _int("Pods ready for at least minReadySeconds."),
        "unavailableReplicas": _int("Pods still needed for the Deployment to be available."),
        "conditions": _conditions("Deployment", "lastUpdateTime"),
        "collisionCount": _int("Times the template hash collided, for a unique new name."),
    })


def replica_set_spec(meta: Schema) -> Schema:
    return _object("What the ReplicaSet keeps running.", {
        "replicas": _int("How many pods are wanted (default 1)."),
        "minReadySeconds": _int("Seconds a new pod must be ready to count as available."),
        "selector": {**_OPEN, "description": "The label selector of the ReplicaSet's pods; "
                                             "it must match the template's labels."},
        "template": _pod_template(meta, "ReplicaSet"),
    }, "selector")


def replication_controller_spec(meta: Schema) -> Schema:
    return _object("What the ReplicationController keeps running.", {
        "replicas": _int("How many pods are wanted (default 1)."),
        "minReadySeconds": _int("Seconds a new pod must be ready to count as available."),
        "selector": {"type": "object", "additionalProperties": {"type": "string"},
                     "x-kubernetes-map-type": "atomic",
                     "description": "The labels of the pods it keeps (default: the template's "
                                    "labels)."},
        "template": _pod_template(meta, "ReplicationController"),
    })


# (group, kind) -> the top-level fields besides apiVersion, kind and metadata, built with the
# document's reference to ObjectMeta.
APPS_FIELDS: dict[tuple[str, str], Callable[[Schema], dict[str, Schema]]] = {
    ("apps", "Deployment"): lambda meta: {"spec": deployment_spec(meta),
                                          "status": deployment_status()},
    ("apps", "ReplicaSet"): lambda meta: {
        "spec": replica_set_spec(meta),
        "status": _object("What the ReplicaSet has observed.", _replica_counts("ReplicaSet"),
                          "replicas"),
    },
    ("", "ReplicationController"): lambda meta: {
        "spec": replication_controller_spec(meta),
        "status": _object("What the ReplicationController has observed.",
                          _replica_counts("ReplicationController"), "replicas"),
    },
}
APPS_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("apps", "Deployment"): "Deployment keeps pods running and rolls out changes to them "
                            "through ReplicaSets.",
    ("apps", "ReplicaSet"): "ReplicaSet keeps a number of pods matching its selector running.",
    ("", "ReplicationController"): "ReplicationController keeps a number of pods running (the "
                                   "legacy form of a ReplicaSet).",
}
