"""The web view watches the cluster only once someone looks: `up` serves it by default,
and watches of pods, events and jobs that nobody reads would make the process that serves
them decode every write twice (issue 33). The first viewer's page still shows what is
there (it waits for the first lists)."""

from __future__ import annotations

import html
import threading
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from engine.app.web import WebOptions, serving_web_view
from engine.cluster.apiserver.auth.authorization import INFO_KEY
from engine.cluster.apiserver.endpoints.faults import FaultInjector
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.endpoints.serve import ServerOptions, running_apiserver
from engine.kube.client import KubeClient
from tests.integration.app.web.browsing import request


class SeenRequests(FaultInjector):
    """Serves every request as usual and remembers which resources were listed or watched."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._seen_lock = threading.Lock()
        self.read: set[str] = set()

    def seen(self) -> set[str]:
        with self._seen_lock:
            return set(self.read)

    def middleware(self) -> Middleware:
        @web.middleware
        async def remember(request: web.Request, handler: Handler) -> web.StreamResponse:
            info: RequestInfo | None = request.get(INFO_KEY)
            if info is not None and info.verb in ("list", "watch"):
                with self._seen_lock:
                    self.read.add(info.resource)
            return await handler(request)

        return remember


def test_nothing_is_watched_until_a_viewer_logs_in(tmp_path: Path) -> None:
    users = tmp_path / "users.csv"
    users.write_text("admin-secret,admin,u-1,system:masters\n")
    seen = SeenRequests()
    with running_apiserver(tls=True, options=ServerOptions(faults=seen,
                                                           token_auth_file=users)) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig)
        try:
            with serving_web_view(client, WebOptions()) as view:
                assert request(view.url + "/login").status == 200  # the form asks for nothing
                assert request(view.url + "/", token="wrong-secret").status == 401
                assert not {"pods", "events", "statemachines"} & seen.seen()
                page = request(view.url + "/", token="admin-secret")
                assert page.status == 200, page.body
                assert html.escape("admin") in page.body
                assert {"pods", "events", "statemachines",
                        "customresourcedefinitions"} <= seen.seen()
        finally:
            client.close()
