"""The known fields of the built-in kinds, for unknown-field detection and pruning.

The real server decodes built-in objects into typed structs, so a field it does
not know is dropped, and reported under `fieldValidation=Warn|Strict`. These
tables list the fields of the top level, ObjectMeta and the specs that people
write by hand (pod, container, service, Job and CronJob with their pod
templates and policies, Deployment, ReplicaSet and ReplicationController) and the
Lease spec that leader election writes, so a
typo there is caught exactly as a real cluster catches it; nested structures not
listed here (probes, volumes, affinity, pod status...) are accepted as they come.
"""

from __future__ import annotations

from typing import Any

# A shape is a set of field names mapped to the shape of each value: None
# accepts anything, a dict is an object, a one-element list a list of that shape.
Shape = dict[str, Any]

OBJECT_META: Shape = dict.fromkeys(
    (
        "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
        "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
        "labels", "annotations", "ownerReferences", "finalizers", "managedFields",
    )
)
_TYPED: Shape = {"apiVersion": None, "kind": None, "metadata": OBJECT_META}

CONTAINER: Shape = dict.fromkeys(
    (
        "args", "command", "env", "envFrom", "image", "imagePullPolicy", "lifecycle",
        "livenessProbe", "name", "ports", "readinessProbe", "resizePolicy", "resources",
        "restartPolicy", "securityContext", "startupProbe", "stdin", "stdinOnce",
        "terminationMessagePath", "terminationMessagePolicy", "tty", "volumeDevices",
        "volumeMounts", "workingDir",
    )
)
POD_SPEC: Shape = {
    **dict.fromkeys(
        (
            "activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "dnsConfig",
            "dnsPolicy", "enableServiceLinks", "ephemeralContainers", "hostAliases", "hostIPC",
            "hostNetwork", "hostPID", "hostUsers", "hostname", "imagePullSecrets", "nodeName",
            "nodeSelector", "os", "overhead", "preemptionPolicy", "priority",
            "priorityClassName", "readinessGates", "resourceClaims", "resources",
            "restartPolicy", "runtimeClassName", "schedulerName", "schedulingGates",
            "securityContext", "serviceAccount", "serviceAccountName", "setHostnameAsFQDN",
            "shareProcessNamespace", "subdomain", "terminationGracePeriodSeconds",
            "tolerations", "topologySpreadConstraints", "volumes",
        )
    ),
    "containers": [CONTAINER],
    "initContainers": [CONTAINER],
}
SERVICE_SPEC: Shape = dict.fromkeys(
    (
        "allocateLoadBalancerNodePorts", "clusterIP", "clusterIPs", "externalIPs",
        "externalName", "externalTrafficPolicy", "healthCheckNodePort",
        "internalTrafficPolicy", "ipFamilies", "ipFamilyPolicy", "loadBalancerClass",
        "loadBalancerIP", "loadBalancerSourceRanges", "ports", "publishNotReadyAddresses",
        "selector", "sessionAffinity", "sessionAffinityConfig", "trafficDistribution", "type",
    )
)

_LABEL_SELECTOR: Shape = {
    "matchLabels": None,
    "matchExpressions": [dict.fromkeys(("key", "operator", "values"))],
}
_POD_FAILURE_RULE: Shape = {
    "action": None,
    "onExitCodes": dict.fromkeys(("containerName", "operator", "values")),
    "onPodConditions": [dict.fromkeys(("type", "status"))],
}
JOB_SPEC: Shape = {
    **dict.fromkeys(
        (
            "activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completionMode",
            "completions", "managedBy", "manualSelector", "maxFailedIndexes", "parallelism",
            "podReplacementPolicy", "suspend", "ttlSecondsAfterFinished",
        )
    ),
    "podFailurePolicy": {"rules": [_POD_FAILURE_RULE]},
    "selector": _LABEL_SELECTOR,
    "successPolicy": {"rules": [dict.fromkeys(("succeededCount", "succeededIndexes"))]},
    "template": {"metadata": OBJECT_META, "spec": POD_SPEC},
}
_JOB_STATUS: Shape = {
    **dict.fromkeys(
        (
            "active", "completedIndexes", "completionTime", "failed", "failedIndexes", "ready",
            "startTime", "succeeded", "terminating",
        )
    ),
    "conditions": [
        dict.fromkeys(
            ("type", "status", "lastProbeTime", "lastTransitionTime", "reason", "message")
        )
    ],
    "uncountedTerminatedPods": dict.fromkeys(("succeeded", "failed")),
}
_CRONJOB_SPEC: Shape = {
    **dict.fromkeys(
        (
            "concurrencyPolicy", "failedJobsHistoryLimit", "schedule", "startingDeadlineSeconds",
            "successfulJobsHistoryLimit", "suspend", "timeZone",
        )
    ),
    "jobTemplate": {"metadata": OBJECT_META, "spec": JOB_SPEC},
}
_CRONJOB_STATUS: Shape = dict.fromkeys(("active", "lastScheduleTime", "lastSuccessfulTime"))

_POD_TEMPLATE: Shape = {"metadata": OBJECT_META, "spec": POD_SPEC}
_CONDITIONS: list[Shape] = [
    dict.fromkeys(("type", "status", "lastUpdateTime", "lastTransitionTime", "reason", "message"))
]
_DEPLOYMENT_SPEC: Shape = {
    **dict.fromkeys(
        ("minReadySeconds", "paused", "progressDeadlineSeconds", "replicas",
         "revisionHistoryLimit")
    ),
    "selector": _LABEL_SELECTOR,
    "strategy": {"type": None, "rollingUpdate": dict.fromkeys(("maxSurge", "maxUnavailable"))},
    "template": _POD_TEMPLATE,
}
_DEPLOYMENT_STATUS: Shape = {
    **dict.fromkeys(
        ("availableReplicas", "collisionCount", "observedGeneration", "readyReplicas",
         "replicas", "unavailableReplicas", "updatedReplicas")
    ),
    "conditions": _CONDITIONS,
}
_REPLICA_SET_STATUS: Shape = {
    **dict.fromkeys(
        ("availableReplicas", "fullyLabeledReplicas", "observedGeneration", "readyReplicas",
         "replicas")
    ),
    "conditions": _CONDITIONS,
}

SHAPES: dict[str, Shape] = {
    "Pod": {**_TYPED, "spec": POD_SPEC, "status": None},
    "Service": {**_TYPED, "spec": SERVICE_SPEC, "status": None},
    "Namespace": {**_TYPED, "spec": {"finalizers": None}, "status": None},
    "ConfigMap": {**_TYPED, "data": None, "binaryData": None, "immutable": None},
    "Secret": {**_TYPED, "data": None, "stringData": None, "type": None, "immutable": None},
    "ControllerRevision": {**_TYPED, "data": None, "revision": None},
    "Node": {**_TYPED, "spec": None, "status": None},
    "Lease": {**_TYPED, "spec": dict.fromkeys((
        "acquireTime", "holderIdentity", "leaseDurationSeconds", "leaseTransitions",
        "preferredHolder", "renewTime", "strategy",
    ))},
    "PriorityClass": {
        **_TYPED, "value": None, "globalDefault": None, "description": None,
        "preemptionPolicy": None,
    },
    "CustomResourceDefinition": {**_TYPED, "spec": None, "status": None},
    "Job": {**_TYPED, "spec": JOB_SPEC, "status": _JOB_STATUS},
    "CronJob": {**_TYPED, "spec": _CRONJOB_SPEC, "status": _CRONJOB_STATUS},
    "Deployment": {**_TYPED, "spec": _DEPLOYMENT_SPEC, "status": _DEPLOYMENT_STATUS},
    "ReplicaSet": {
        **_TYPED,
        "spec": {**dict.fromkeys(("minReadySeconds", "replicas")), "selector": _LABEL_SELECTOR,
                 "template": _POD_TEMPLATE},
        "status": _REPLICA_SET_STATUS,
    },
    "ReplicationController": {
        **_TYPED,
        "spec": {**dict.fromkeys(("minReadySeconds", "replicas", "selector")),
                 "template": _POD_TEMPLATE},
        "status": _REPLICA_SET_STATUS,
    },
    "Event": {
        **_TYPED,
        **dict.fromkeys(
            (
                "action", "count", "eventTime", "firstTimestamp", "involvedObject",
                "lastTimestamp", "message", "reason", "related", "reportingComponent",
                "reportingInstance", "series", "source", "type",
            )
        ),
    },
}


def prune_unknown(kind: str, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`obj` without the fields its kind does not have, and their paths (a copy is made
    only where something is dropped)."""
    shape = SHAPES.get(kind)
    if shape is None:
        return obj, []
    unknown: list[str] = []
    pruned = _prune(obj, shape, "", unknown)
    return pruned, unknown


def _prune(value: Any, shape: Any, path: str, unknown: list[str]) -> Any:
    if shape is None:
        return value
    if isinstance(shape, list):
        if not isinstance(value, list):
            return value
        items = [_prune(item, shape[0], f"{path}[{i}]", unknown) for i, item in enumerate(value)]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if not isinstance(value, dict):
        return value
    result: dict[str, Any] | None = None
    for key, item in value.items():
        child = f"{path}.{key}" if path else key
        if key not in shape:
            unknown.append(child)
            result = result if result is not None else dict(value)
            del result[key]
            continue
        pruned = _prune(item, shape[key], child, unknown)
        if pruned is not item:
            result = result if result is not None else dict(value)
            result[key] = pruned
    return value if result is None else result
