"""The web view watches the cluster only while someone looks: `up` serves it by default,
and watches of pods, events and jobs that nobody reads would make the process that serves
them decode every write twice (issue 33). The first viewer's page still shows what is
there (it waits for the first lists), and so does the first after a rest."""

from __future__ import annotations

import html
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from engine.app.web import WebOptions, serving_web_view
from engine.cluster.apiserver.auth.authorization import INFO_KEY
from engine.cluster.apiserver.endpoints.faults import FaultInjector
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.endpoints.serve import ServerOptions, running_apiserver
from engine.controller.machines.served import CRDS
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import STATE_MACHINES
from tests.integration.app.web.browsing import event_stream, request
from tests.polling import eventually


class SeenRequests(FaultInjector):
    """Serves every request as usual and remembers which resources were listed or watched,
    how often each was listed, and how many watches are open."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._seen_lock = threading.Lock()
        self.read: set[str] = set()
        self.lists: Counter[str] = Counter()
        self.open_watches: Counter[str] = Counter()

    def seen(self) -> set[str]:
        with self._seen_lock:
            return set(self.read)

    def listed(self, resource: str) -> int:
        with self._seen_lock:
            return self.lists[resource]

    def watching(self) -> set[str]:
        """The resources with a watch open."""
        with self._seen_lock:
            return {resource for resource, count in self.open_watches.items() if count}

    def middleware(self) -> Middleware:
        @web.middleware
        async def remember(request: web.Request, handler: Handler) -> web.StreamResponse:
            info: RequestInfo | None = request.get(INFO_KEY)
            if info is None or info.verb not in ("list", "watch"):
                return await handler(request)
            with self._seen_lock:
                self.read.add(info.resource)
                self.lists[info.resource] += info.verb == "list"
                self.open_watches[info.resource] += info.verb == "watch"
            try:
                return await handler(request)
            finally:
                with self._seen_lock:
                    self.open_watches[info.resource] -= info.verb == "watch"

        return remember


FOLLOWED = {"statemachines", "customresourcedefinitions", "pods", "events"}
ROOT = Path(__file__).resolve().parents[4]


def _served(client: KubeClient) -> bool:
    try:
        client.list(STATE_MACHINES, None)
    except ApiError:
        return False
    return True


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[KubeClient, SeenRequests]]:
    users = tmp_path / "users.csv"
    users.write_text("admin-secret,admin,u-1,system:masters\n")
    seen = SeenRequests()
    with running_apiserver(tls=True, options=ServerOptions(faults=seen,
                                                           token_auth_file=users)) as running:
        client = KubeClient.from_kubeconfig(running.kubeconfig)
        try:  # so the view's first lists all answer (the page waits for them)
            client.create(CRDS, yaml.safe_load(
                (ROOT / "crds" / "statemachines.jobmachine.dev.yaml").read_text()))
            eventually(lambda: _served(client))
            yield client, seen
        finally:
            client.close()


def test_nothing_is_watched_until_a_viewer_logs_in(
    server: tuple[KubeClient, SeenRequests],
) -> None:
    client, seen = server
    with serving_web_view(client, WebOptions()) as view:
        assert request(view.url + "/login").status == 200  # the form asks for nothing
        assert request(view.url + "/", token="wrong-secret").status == 401
        assert not {"pods", "events"} & seen.seen()
        assert seen.listed("customresourcedefinitions") == 0
        page = request(view.url + "/", token="admin-secret")
        assert page.status == 200, page.body
        assert html.escape("admin") in page.body
        assert {"pods", "events", "statemachines", "customresourcedefinitions"} <= seen.seen()


def test_watching_stops_when_nobody_looks_and_starts_again_for_the_next_viewer(
    server: tuple[KubeClient, SeenRequests],
) -> None:
    client, seen = server
    with serving_web_view(client, WebOptions(idle_s=0.4)) as view:
        assert request(view.url + "/", token="admin-secret").status == 200
        assert seen.listed("pods") == 1
        eventually(lambda: not seen.watching(), timeout=30)  # nobody looked for 0.4 s
        page = request(view.url + "/", token="admin-secret")
        assert page.status == 200, page.body
        assert seen.listed("pods") == 2  # the page after the rest waited for a fresh list
        assert seen.listed("events") == 2


def test_an_open_stream_keeps_the_watches(server: tuple[KubeClient, SeenRequests]) -> None:
    client, seen = server
    with serving_web_view(client, WebOptions(idle_s=0.2)) as view:
        with event_stream(view.url + "/stream", token="admin-secret"):
            eventually(lambda: seen.watching() >= FOLLOWED)
            time.sleep(1.0)  # five idle periods with the stream open: still watching
            assert seen.watching() >= FOLLOWED
            assert seen.listed("pods") == 1
        # The server sees the stream gone at its next redraw (every few seconds).
        eventually(lambda: not seen.watching(), timeout=60)
