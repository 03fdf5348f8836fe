"""The logs of a job's replicas: read once, or followed line by line while the pods run.

A replica's pod is found by the labels and controller reference the engine gives it
(`engine.controller.reconcile.children`), so any kind's pods are found alike. Following starts
from the replicas the engine's record lists (a replica whose pod is not there yet is
waited for, until the job ends), reads each pod's log stream on a thread of its own
and hands the lines over in the order they arrive; it ends when every stream ended.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    ReplicaId,
    child_name,
    controller_uid,
    replica_of,
)
from engine.controller.reconcile.record import RecordError, read_record
from engine.kube.client import ByteStream, KubeClient
from engine.kube.errors import ApiError, NotFound, Unavailable
from engine.kube.resources import PODS
from engine.sdk.errors import JobClientError, describe, refused

Obj = dict[str, Any]
Line = tuple[str, str]
"""(replica, line): `("Worker-1", "epoch 3: loss 0.21")`."""

_POLL_S = 0.2
"""How often a followed replica whose pod has not started yet is looked at again."""
_FOLLOW_READ_TIMEOUT_S = 86400.0
"""A followed log may stay silent for long; only a day without a byte counts as a dead peer."""
_READ_SIZE = 65536
_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Selection:
    """Which replicas' logs, and of which container (None: the pod's only one)."""

    replica_type: str | None = None
    replica_index: int | None = None
    container: str | None = None

    def label_selector(self, job_name: str) -> str:
        """The pods of the job's selected replicas, as a label selector."""
        terms = [f"{JOB_NAME_LABEL}={job_name}"]
        if self.replica_type is not None:
            terms.append(f"{REPLICA_TYPE_LABEL}={self.replica_type}")
        if self.replica_index is not None:
            terms.append(f"{REPLICA_INDEX_LABEL}={self.replica_index}")
        return ",".join(terms)

    def covers(self, replica: ReplicaId) -> bool:
        """Whether the replica is one of those selected."""
        return (self.replica_type in (None, replica.type)
                and self.replica_index in (None, replica.index))


def read_logs(client: KubeClient, job: Mapping[str, Any], selection: Selection
              ) -> dict[str, str]:
    """Replica ("Worker-1") -> the log of its current pod so far ("" before it started)."""
    metadata = job["metadata"]
    pods, _ = client.list(PODS, metadata["namespace"],
                          label_selector=selection.label_selector(metadata["name"]))
    found: dict[ReplicaId, Obj] = {}
    for pod in pods:
        replica = replica_of(pod)
        if replica is not None and controller_uid(pod) == metadata["uid"]:
            found[replica] = pod
    return {str(replica): _pod_log(client, found[replica], selection.container)
            for replica in sorted(found)}


def follow_logs(
    client: KubeClient, job: Mapping[str, Any], selection: Selection,
    reread: Callable[[], Obj | None],
) -> Generator[Line, None, None]:
    """Every line the selected replicas' pods write, as they write it, until they end.

    `reread` gives the job as it is now (None once deleted): the replicas come from its
    record, and a replica without a started pod is given up once the job has finished.
    `close()` on the generator ends the streams early.
    """
    replicas = _replicas(job, selection, reread)
    lines: queue.SimpleQueue[Line | BaseException | None] = queue.SimpleQueue()
    follower = _Follower(client, job, selection.container, reread, lines)
    threads = [threading.Thread(target=follower.run, args=(replica,), daemon=True,
                                name=f"logs-{replica}") for replica in replicas]
    for thread in threads:
        thread.start()
    try:
        running = len(threads)
        while running:
            item = lines.get()
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        follower.stop()
        for thread in threads:
            thread.join()


def _replicas(job: Mapping[str, Any], selection: Selection,
              reread: Callable[[], Obj | None]) -> list[ReplicaId]:
    """The selected replicas of the job's record, read again until the engine wrote one."""
    current: Mapping[str, Any] | None = job
    while current is not None:
        try:
            states = read_record(current.get("status") or {}).replica_states
        except RecordError as exc:
            raise JobClientError(f"{describe(current)}: {exc}") from exc
        if states or _finished(current):
            return sorted(replica for replica in states if selection.covers(replica))
        time.sleep(_POLL_S)
        current = reread()
    return []


def _finished(job: Mapping[str, Any] | None) -> bool:
    if job is None:
        return True
    conditions = (job.get("status") or {}).get("conditions") or ()
    return any(c.get("type") in _FINISHED and c.get("status") == "True" for c in conditions)


class _Follower:
    """Follows one replica per thread; `stop()` ends every stream from any thread."""

    def __init__(self, client: KubeClient, job: Mapping[str, Any], container: str | None,
                 reread: Callable[[], Obj | None],
                 lines: queue.SimpleQueue[Line | BaseException | None]) -> None:
        self._client = client
        self._job = job
        self._container = container
        self._reread = reread
        self._lines = lines
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._open: set[ByteStream] = set()

    def run(self, replica: ReplicaId) -> None:
        try:
            pod = self._started_pod(replica)
            if pod is not None:
                self._stream(replica, pod)
        except Exception as exc:  # handed to the reader, which raises it
            self._lines.put(exc)
        finally:
            self._lines.put(None)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            responses = list(self._open)
        for response in responses:
            response.shutdown()

    def _started_pod(self, replica: ReplicaId) -> Obj | None:
        """The replica's pod once it runs (or ran); None if the job ends first."""
        metadata = self._job["metadata"]
        name = child_name(metadata["name"], replica)
        while not self._stopping.is_set():
            try:
                pod: Obj | None = self._client.get(PODS, name, metadata["namespace"])
            except NotFound:
                pod = None
            if (pod is not None and controller_uid(pod) == metadata["uid"]
                    and (pod.get("status") or {}).get("phase") != "Pending"):
                return pod
            if _finished(self._reread()):
                return None
            self._stopping.wait(_POLL_S)
        return None

    def _stream(self, replica: ReplicaId, pod: Obj) -> None:
        response = _follow_response(self._client, pod, self._container)
        with self._lock:
            self._open.add(response)
        buffer = b""
        try:
            while chunk := _read_chunk(response, stopping=self._stopping):
                *complete, buffer = (buffer + chunk).split(b"\n")
                for line in complete:
                    self._lines.put((str(replica), line.decode(errors="replace")))
            if buffer:
                self._lines.put((str(replica), buffer.decode(errors="replace")))
        finally:
            with self._lock:
                self._open.discard(response)
            response.close()


def _read_chunk(stream: ByteStream, *, stopping: threading.Event) -> bytes:
    """The next bytes of a followed log; b"" at its end or once stopped."""
    try:
        return stream.read_chunk(_READ_SIZE)
    except Unavailable:
        if stopping.is_set():
            return b""
        raise


def _pod_log(client: KubeClient, pod: Mapping[str, Any], container: str | None) -> str:
    if (pod.get("status") or {}).get("phase") == "Pending":
        return ""
    metadata = pod["metadata"]
    try:
        return client.read_text(PODS, metadata["name"], metadata["namespace"], subresource="log",
                                query={"container": container} if container is not None else None)
    except ApiError as exc:
        raise refused(exc, f"read the log of pod {metadata['namespace']}/{metadata['name']}"
                      ) from exc


def _follow_response(client: KubeClient, pod: Mapping[str, Any], container: str | None
                     ) -> ByteStream:
    """The answer to a request to follow the pod's log, its body not yet read, with a read
    timeout fit for a program that is silent for a while."""
    metadata = pod["metadata"]
    query: dict[str, Any] = {"follow": True}
    if container is not None:
        query["container"] = container
    try:
        return client.open_stream(PODS, metadata["name"], metadata["namespace"],
                                  subresource="log", query=query,
                                  read_timeout_s=_FOLLOW_READ_TIMEOUT_S)
    except ApiError as exc:
        raise refused(exc, f"follow the log of pod {metadata['namespace']}/{metadata['name']}"
                      ) from exc
