"""A child object made once (`spec.objects[].update: Never`): created while missing, then never
rendered or written again while it is the job's, as Trainer makes its immutable MPI SSH
Secret; a `when` that turns false still removes it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.controller.reconcile.children import JobKey
from engine.controller.reconcile.objects import READY, ObjectRun, build_object, sync_objects
from engine.controller.runtime.projections import project_child_object
from engine.kube.cache import Cache
from engine.kube.resources import CONFIGMAPS
from tests.unit.controller.test_objects import (
    JOB,
    MPI,
    VARIABLES,
    RecordingClient,
    RecordingRecorder,
    _rendered,
)
from tests.unit.controller.test_objects import run as sync

ONCE = replace(MPI, objects=tuple(replace(o, update="Never") for o in MPI.objects))


def run(cache: Cache, client: RecordingClient, variables: dict[str, Any] = VARIABLES) -> bool:
    """Whether the objects of the machine whose ConfigMap is made once are ready."""
    key = (CONFIGMAPS.api_version, CONFIGMAPS.kind)
    return sync_objects(ObjectRun(
        client=client, recorder=RecordingRecorder(), key=JobKey("MPIJob", "ml", "ring"),
        job=JOB, definition=ONCE, variables=variables,
        resources={key: CONFIGMAPS}, caches={key: cache},
    )) == READY


def test_a_missing_object_made_once_is_created() -> None:
    client = RecordingClient()
    assert run(Cache(project_child_object), client) is True
    assert client.writes == [("create", "ring-config")]


def test_an_existing_object_made_once_is_neither_rendered_nor_rewritten() -> None:
    cache = Cache(project_child_object)
    current = build_object(JOB, _rendered(VARIABLES))
    current["metadata"].update(resourceVersion="7", uid="cm-uid")
    cache.apply("ADDED", current)
    client = RecordingClient()

    # What it would render to now differs (one Worker less): a Replace object is replaced...
    fewer = {**VARIABLES, "hosts": {**VARIABLES["hosts"], "Worker": ["ring-worker-0"]}}
    assert sync(cache, client, RecordingRecorder(), fewer) is True
    assert client.writes == [("replace", "ring-config")]

    # ...one made once is left as it is, and is not even rendered: variables its fields
    # cannot be computed from (no hosts) make no warning and keep the pods waiting for nothing.
    client = RecordingClient()
    assert run(cache, client, fewer) is True
    no_hosts = {k: v for k, v in VARIABLES.items() if k != "hosts"}
    assert run(cache, client, no_hosts) is True
    assert client.writes == []
