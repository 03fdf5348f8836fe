"""A PyTorchJob operator written the way kopf's documentation teaches: the peer that
`benchmarks/compare.py` measures jobmachine against.

It has the engine's minimal semantics for one kind and nothing more: a pod per replica
(`<job>-<type>-<index>`, owned by the job), exit code >= 128 recreates the pod, any other
non-zero exit code fails the job, and the job succeeds once every pod exited 0. kopf runs
with its defaults (1.45 posts no log messages as Events; it keeps what it handled in an
annotation); handlers call the API server through the official `kubernetes` client, as
kopf's examples do.

Run: KUBECONFIG=... python -m kopf run --standalone --all-namespaces benchmarks/kopf_operator.py
"""

from __future__ import annotations

import copy
import datetime
import functools
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"
OPERATOR_LABEL = "bench.jobmachine.dev/operator"
OPERATOR = "kopf"
JOB_LABEL = "training.kubeflow.org/job-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
# Killed by a signal (137 SIGKILL or OOM, 143 SIGTERM): worth another try, as Kubeflow's
# ExitCode restart policy says; 1-127 are the program's own errors.
RETRYABLE = 128
TERMINAL = ("Succeeded", "Failed")


class JobView(NamedTuple):
    """What pod handlers need to know about their job, kept in kopf's in-memory index."""

    replicas: int
    finished: bool


@functools.cache
def core() -> kubernetes.client.CoreV1Api:
    # One shared client (one connection pool); kopf's login has loaded the kubeconfig.
    return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient())


@functools.cache
def custom() -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(core().api_client)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def replica_specs(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return spec.get("pytorchReplicaSpecs") or {}


def replica_pod(job: Mapping[str, Any], replica_type: str, index: int) -> dict[str, Any]:
    """The pod of one replica: the replica's template, named and labelled, owned by `job`."""
    template = replica_specs(job["spec"])[replica_type].get("template") or {}
    pod = copy.deepcopy(dict(template))
    metadata = pod.setdefault("metadata", {})
    metadata["name"] = f"{job['metadata']['name']}-{replica_type.lower()}-{index}"
    metadata.setdefault("labels", {}).update({
        OPERATOR_LABEL: OPERATOR,
        JOB_LABEL: job["metadata"]["name"],
        TYPE_LABEL: replica_type.lower(),
        INDEX_LABEL: str(index),
    })
    pod.setdefault("spec", {})["restartPolicy"] = "Never"  # restarts are ours to decide
    kopf.adopt(pod, owner=job)  # type: ignore[arg-type]
    return pod


def create_pod(pod: dict[str, Any]) -> None:
    try:
        # The client sends a plain dict as it is: no need for its typed model.
        core().create_namespaced_pod(pod["metadata"]["namespace"], pod)  # type: ignore[arg-type]
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:  # a retried handler finds the pods it already made
            raise


def exit_code(status: Mapping[str, Any]) -> int | None:
    """The worst exit code of an ended pod (None while it runs); an ended pod without one
    (evicted, lost) counts as killed."""
    if status.get("phase") not in TERMINAL:
        return None
    codes = [
        terminated["exitCode"]
        for container in status.get("containerStatuses") or []
        if (terminated := (container.get("state") or {}).get("terminated"))
    ]
    return max(codes, default=RETRYABLE if status.get("phase") == "Failed" else 0)


def finish(namespace: str, job: str, phase: str) -> None:
    body = {"status": {"phase": phase, "completionTime": now()}}
    try:
        custom().patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, job, body)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise


@kopf.index(GROUP, VERSION, PLURAL)
def jobs(*, namespace: str | None, name: str, spec: kopf.Spec, status: kopf.Status,
         **_: Any) -> dict[tuple[str | None, str], JobView]:
    replicas = sum(int(r.get("replicas", 1)) for r in replica_specs(spec).values())
    return {(namespace, name): JobView(replicas, status.get("phase") in TERMINAL)}


@kopf.index("", "v1", "pods", labels={OPERATOR_LABEL: OPERATOR})
def pods(*, namespace: str | None, labels: kopf.Labels, status: kopf.Status,
         **_: Any) -> dict[tuple[str | None, str], int | None]:
    return {(namespace, labels[JOB_LABEL]): exit_code(status)}


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_pods(*, body: kopf.Body, spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
    for replica_type, replica in replica_specs(spec).items():
        for index in range(int(replica.get("replicas", 1))):
            create_pod(replica_pod(body, replica_type, index))
    patch.status["phase"] = "Created"
    patch.status["startTime"] = now()


# kopf passes each index (`jobs`, `pods` above) as the keyword argument of its name, which
# its handler protocol does not declare.
@kopf.on.event("", "v1", "pods", labels={OPERATOR_LABEL: OPERATOR})  # type: ignore[arg-type]
def pod_event(*, type: str, name: str, namespace: str, labels: kopf.Labels,
              meta: kopf.Meta, status: kopf.Status, jobs: kopf.Index[Any, JobView],
              pods: kopf.Index[Any, int | None], logger: kopf.Logger, **_: Any) -> None:
    key = (namespace, labels[JOB_LABEL])
    job = next(iter(jobs.get(key, [])), None)
    code = exit_code(status)
    if job is None or job.finished or code is None:
        return
    if type == "DELETED":
        if code >= RETRYABLE:
            restart(namespace, labels)
    elif meta.get("deletionTimestamp"):
        return
    elif code >= RETRYABLE:
        logger.info(f"pod {name} exited {code}: recreating it")
        delete_pod(name, namespace)
    elif code != 0:
        finish(namespace, key[1], "Failed")
    elif all_succeeded(pods.get(key, []), job.replicas):
        finish(namespace, key[1], "Succeeded")


def all_succeeded(codes: Iterable[int | None], replicas: int) -> bool:
    codes = list(codes)
    return len(codes) == replicas and all(code == 0 for code in codes)


def delete_pod(name: str, namespace: str) -> None:
    try:
        core().delete_namespaced_pod(name, namespace)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise


def restart(namespace: str, labels: Mapping[str, str]) -> None:
    """Recreate a deleted pod from its job's current spec (the index keeps no templates)."""
    job: dict[str, Any] = custom().get_namespaced_custom_object(  # type: ignore[assignment]
        GROUP, VERSION, namespace, PLURAL, labels[JOB_LABEL])
    replica_type = next(t for t in replica_specs(job["spec"]) if t.lower() == labels[TYPE_LABEL])
    create_pod(replica_pod(job, replica_type, int(labels[INDEX_LABEL])))
