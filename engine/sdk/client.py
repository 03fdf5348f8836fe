"""`JobClient`: create, find, wait for, read the logs of and delete jobs of any governed kind.

Modelled on Kubeflow's `TrainingClient`, but no kind is known to the code: each call
asks the cluster which kinds its machines govern (the six Kubeflow kinds, MachineJob,
and any kind added at run time as a CRD and a StateMachine), so a new kind works here
the moment the engine governs it. Requests go through the engine's own `KubeClient`;
its typed errors become the `JobClientError`s of `engine.sdk.errors`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any, Literal, Self, overload

from loguru import logger

from engine.app import job_graph
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, NotFound
from engine.kube.resources import Resource
from engine.sdk.builder import JobBuilder
from engine.sdk.documents import JobInput, job_document
from engine.sdk.errors import JobClientError, JobNotFoundError, describe, refused
from engine.sdk.kinds import Kinds
from engine.sdk.logs import Line, Selection, follow_logs, read_logs
from engine.sdk.machines import cluster_definition
from engine.sdk.progress import progress_display
from engine.sdk.replicas import replica_states
from engine.sdk.waiting import wait_for_conditions
from engine.settings import EngineSettings

USER_AGENT = "jobmachine-sdk"
"""How the client names itself to the API server (its audit log tells it from the engine)."""

Obj = dict[str, Any]


class JobClient:
    """Jobs of every kind the cluster's machines govern, for Python programs and notebooks.

    `kubeconfig` defaults to $KUBECONFIG (else ~/.kube/config); a `client` given instead
    is used as it is and left open by `close()`, which closes only a client made here.
    `namespace` is where calls that name none look; `system_namespace` is the engine's
    (where it keeps machine revisions), by default as the engine's settings say.
    """

    def __init__(
        self, kubeconfig: str | Path | None = None, *, namespace: str = "default",
        client: KubeClient | None = None, system_namespace: str | None = None,
    ) -> None:
        self._owns_client = client is None
        # Read here, not left to the kubernetes package: it reads $KUBECONFIG once, when
        # imported, and a notebook often sets it later.
        path = kubeconfig if kubeconfig is not None else os.environ.get("KUBECONFIG")
        self._client = client or KubeClient.from_kubeconfig(
            Path(path) if path else None, user_agent=USER_AGENT)
        self.namespace = namespace
        self.system_namespace = (system_namespace
                                 or EngineSettings.from_env().system_namespace)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections of the client this JobClient made."""
        if self._owns_client:
            self._client.close()

    def create_job(self, job: JobInput, namespace: str | None = None) -> Obj:
        """Create the job (a dict, a YAML file's path, or a `JobBuilder`); the object created.

        Its kind must be governed by a machine on the cluster (UnknownKindError).
        """
        document = job_document(job, namespace, default=self.namespace)
        resource = Kinds.of_cluster(self._client).of_document(document)
        try:
            created = self._client.create(resource, document, document["metadata"]["namespace"])
        except AlreadyExists as exc:
            raise refused(exc, f"create {describe(document)}: it exists already") from exc
        except ApiError as exc:
            raise refused(exc, f"create {describe(document)}") from exc
        logger.debug(f"created {describe(created)}")
        return created

    def get_job(self, name: str, namespace: str | None = None, kind: str | None = None) -> Obj:
        """The job; with no `kind`, the one job of that name among every governed kind."""
        return self._find(name, namespace, kind)[0]

    def list_jobs(self, namespace: str | None = None, kind: str | None = None) -> list[Obj]:
        """The jobs in the namespace of `kind`, or of every governed kind, by kind and name."""
        namespace = namespace or self.namespace
        found: list[Obj] = []
        for resource in Kinds.of_cluster(self._client).searched(kind).values():
            try:
                found += self._client.list(resource, namespace)[0]
            except ApiError as exc:
                raise refused(exc, f"list {resource.plural} in {namespace}") from exc
        return sorted(found, key=lambda job: (job["kind"], job["metadata"]["name"]))

    def wait_for_job_conditions(
        self, name: str, namespace: str | None = None, kind: str | None = None, *,
        expected_conditions: frozenset[str] = frozenset({"Succeeded"}),
        timeout: float = 600.0, progress: bool | None = None,
    ) -> Obj:
        """The job once one of `expected_conditions` is True, watched as it changes.

        Raises JobFailedError when it fails (unless "Failed" is expected) and
        JobTimeoutError after `timeout` seconds. `progress`: a live one-line display of
        its state, restarts and replicas on stdout (None: only when stdout is a terminal).
        """
        job, resource = self._find(name, namespace, kind)
        display = progress_display(progress, sys.stdout)
        try:
            return wait_for_conditions(
                self._client, resource, job, expected=frozenset(expected_conditions),
                timeout=timeout, on_version=display.show if display is not None else None)
        finally:
            if display is not None:
                display.close()

    def get_replica_states(self, name: str, namespace: str | None = None,
                           kind: str | None = None) -> dict[str, str]:
        """What each replica is, by replica ("Worker-1"): its machine's state, or for a job
        that ended before it did, what `kubectl describe` and the web view say of it
        (`Running, stopped at job end (pod deleted)`)."""
        job = self._find(name, namespace, kind)[0]
        return {str(replica): words for replica, words in replica_states(job).items()}

    @overload
    def get_job_logs(
        self, name: str, namespace: str | None = ..., kind: str | None = ..., *,
        replica_type: str | None = ..., replica_index: int | None = ...,
        container: str | None = ..., follow: Literal[False] = ...,
    ) -> dict[str, str]: ...

    @overload
    def get_job_logs(
        self, name: str, namespace: str | None = ..., kind: str | None = ..., *,
        replica_type: str | None = ..., replica_index: int | None = ...,
        container: str | None = ..., follow: Literal[True],
    ) -> Generator[Line, None, None]: ...

    def get_job_logs(
        self, name: str, namespace: str | None = None, kind: str | None = None, *,
        replica_type: str | None = None, replica_index: int | None = None,
        container: str | None = None, follow: bool = False,
    ) -> dict[str, str] | Generator[Line, None, None]:
        """The logs of the job's replicas (all, or of a type, or one), by replica ("Worker-1").

        With `follow`, a generator of (replica, line) as the pods write them, ending when
        they end (or when closed); replicas whose pods are not running yet are waited for.
        """
        job, resource = self._find(name, namespace, kind)
        selection = Selection(replica_type, replica_index, container)
        if not follow:
            try:
                return read_logs(self._client, job, selection)
            except ApiError as exc:
                raise refused(exc, f"list the pods of {describe(job)}") from exc
        metadata = job["metadata"]

        def reread() -> Obj | None:
            try:
                return self._client.get(resource, metadata["name"], metadata["namespace"])
            except NotFound:
                return None

        return follow_logs(self._client, job, selection, reread)

    def delete_job(self, name: str, namespace: str | None = None, kind: str | None = None
                   ) -> None:
        """Delete the job; the engine then stops its pods and removes them with it."""
        job, resource = self._find(name, namespace, kind)
        metadata = job["metadata"]
        try:
            self._client.delete(resource, metadata["name"], metadata["namespace"],
                                uid=metadata["uid"])
        except NotFound as exc:
            raise JobNotFoundError(f"{describe(job)} is gone already") from exc
        except ApiError as exc:
            raise refused(exc, f"delete {describe(job)}") from exc
        logger.debug(f"deleted {describe(job)}")

    def job_picture(self, name: str, namespace: str | None = None, fmt: str = "svg") -> bytes:
        """The job's machine (the revision it runs with) with the path it took highlighted.

        `fmt`: svg, png, dot or mermaid, as `jobmachine graph --job` draws it.
        """
        namespace = namespace or self.namespace
        try:
            return job_graph.job_picture(self._client, namespace, name, fmt=fmt,
                                         system_namespace=self.system_namespace)
        except job_graph.JobNotFoundError as exc:
            raise JobNotFoundError(str(exc)) from exc
        except ApiError as exc:
            raise refused(exc, f"draw job {namespace}/{name}") from exc

    def job_builder(self, kind: str, name: str, namespace: str | None = None) -> JobBuilder:
        """A builder laid out by the machine revision the cluster starts new `kind` jobs with:
        for kinds added at run time, which no shipped machine describes."""
        definition = cluster_definition(self._client, kind, self.system_namespace)
        return JobBuilder(kind, name, namespace, definition)

    def _find(self, name: str, namespace: str | None, kind: str | None
              ) -> tuple[Obj, Resource]:
        """The job and its resource: of `kind`, else the only governed kind that has it."""
        namespace = namespace or self.namespace
        searched = Kinds.of_cluster(self._client).searched(kind)
        found: list[tuple[Obj, Resource]] = []
        for resource in searched.values():
            try:
                found.append((self._client.get(resource, name, namespace), resource))
            except NotFound:
                continue
            except ApiError as exc:
                raise refused(exc, f"read {resource.kind} {namespace}/{name}") from exc
        if not found:
            raise JobNotFoundError(
                f"no job {namespace}/{name} of the kinds {', '.join(sorted(searched)) or '(none)'}"
            )
        if len(found) > 1:
            kinds = ", ".join(sorted(resource.kind for _, resource in found))
            raise JobClientError(f"jobs of several kinds are named {namespace}/{name} ({kinds}): "
                                 "say which with kind=")
        return found[0]
