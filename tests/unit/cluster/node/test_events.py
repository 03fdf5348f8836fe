"""Pod events as the kubelet posts them: container events name the container in fieldPath, and an
identical event is counted rather than posted again (against a recording API, no server)."""

from __future__ import annotations

from typing import Any, cast

from engine.cluster.node.events import EventPoster, field_path
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import Resource

POD = {"metadata": {"name": "train", "namespace": "jobs", "uid": "u-1"}}
EVENTS = "/api/v1/namespaces/jobs/events"


class RecordingApi:
    """Records every write; answers 404 for the patch of an event named in `gone`."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, dict[str, Any]]] = []
        self.gone: set[str] = set()

    def create(self, res: Resource, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        self.writes.append(("POST", res.path(namespace), body))
        return body

    def patch(self, res: Resource, name: str, body: dict[str, Any], *,
              namespace: str) -> dict[str, Any]:
        path = res.path(namespace, name)
        self.writes.append(("PATCH", path, body))
        if path.rsplit("/", 1)[-1] in self.gone:
            raise NotFound(404, "NotFound", "gone", {})
        return body


def poster() -> tuple[EventPoster, RecordingApi]:
    api = RecordingApi()
    return EventPoster(cast(KubeClient, api), "node-1"), api


def summary(api: RecordingApi) -> list[tuple[str, Any, Any]]:
    return [(verb, body.get("reason") or path.rsplit("/", 1)[-1], body.get("count"))
            for verb, path, body in api.writes]


def test_field_paths_name_the_container_as_the_kubelet_does() -> None:
    assert field_path("main", init=False) == "spec.containers{main}"
    assert field_path("setup", init=True) == "spec.initContainers{setup}"


def test_identical_events_are_counted_and_different_ones_posted() -> None:
    events, api = poster()
    main = field_path("main", init=False)
    for _ in range(3):
        events.post(POD, "Started", "Started container main", path=main)
    events.post(POD, "Started", "Started container side", path=field_path("side", init=False))
    posted = api.writes[0][2]
    assert posted["involvedObject"]["fieldPath"] == "spec.containers{main}"
    assert (posted["source"], posted["type"]) == (
        {"component": "jobmachine-node", "host": "node-1"}, "Normal")
    name = posted["metadata"]["name"]
    assert summary(api) == [("POST", "Started", 1), ("PATCH", name, 2), ("PATCH", name, 3),
                            ("POST", "Started", 1)]
    assert api.writes[2][1] == f"{EVENTS}/{name}"
    assert set(api.writes[2][2]) == {"count", "lastTimestamp"}


def test_an_event_deleted_meanwhile_is_posted_anew_and_a_forgotten_pod_starts_over() -> None:
    events, api = poster()
    events.post(POD, "BackOff", "Back-off", kind="Warning")
    api.gone.add(api.writes[0][2]["metadata"]["name"])
    events.post(POD, "BackOff", "Back-off", kind="Warning")
    events.forget("u-1")
    events.post(POD, "BackOff", "Back-off", kind="Warning")
    assert [verb for verb, _, _ in api.writes] == ["POST", "PATCH", "POST", "POST"]
    assert "fieldPath" not in api.writes[0][2]["involvedObject"]


def test_a_once_event_is_posted_once() -> None:
    events, api = poster()
    events.post(POD, "ImageIgnored", "ignored", once=True)
    events.post(POD, "ImageIgnored", "ignored", once=True)
    assert summary(api) == [("POST", "ImageIgnored", 1)]
    assert api.writes[0][2]["metadata"]["name"] == "train.u-1.imageignored"
