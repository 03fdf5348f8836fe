"""The web view's HTTP server: its routes, the login, and running it beside `up` or `run`.

aiohttp on an event loop of its own in a background thread (`up` and the engine are
threads, not asyncio). Every call to the API server (token checks, log tails,
pictures) runs in a worker thread, so one slow answer never holds other pages up.
Every page and stream needs a token the API server accepts; without one the answer is
401 and the login form, never data.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import quote

from aiohttp import web
from loguru import logger

from engine.app.web import assets, job_page, list_page, markup, pages, script
from engine.app.web.auth import ApiReviews, Gate, Sessions, bearer_token, safe_next
from engine.app.web.follow import Follower
from engine.app.web.job_page import JobDetail
from engine.app.web.list_page import ListView
from engine.app.web.logs import LogTails, whole_log
from engine.app.web.picture import Pictures
from engine.app.web.state import Change, Job, JobKey, LiveJobs
from engine.app.web.stream import Denied, Gone, Streams, Update
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import EVENTS, PODS, Resource
from engine.loop_thread import run_on, running_loop

T = TypeVar("T")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

LIST_TICK_S = 5.0
"""The job list is redrawn at least this often (ages move on)."""
JOB_TICK_S = 2.0
"""A job's page is redrawn at least this often (ages, and the log tails of running pods)."""
_SHUTDOWN_S = 5.0
_START_TIMEOUT_S = 30.0
_FIRST_LIST_S = 10.0
"""The first viewer's page waits this long at most for the watches' first lists."""

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


@dataclass(frozen=True)
class WebOptions:
    """Where the web view listens and what it follows."""

    address: str = "127.0.0.1"
    """Loopback unless told otherwise, as every port jobmachine opens."""
    port: int = 0
    """0: a free port."""
    system_namespace: str = "jobmachine-system"
    """Where the engine keeps machine revisions (a job's picture is drawn from its own)."""
    namespace: str | None = None
    """Follow jobs of this namespace only (None: all)."""
    idle_s: float = 300.0
    """Stop watching the cluster once nobody has asked for a page or held a stream open
    for this long (the next viewer's page lists everything again)."""


@dataclass(frozen=True)
class RunningWebView:
    """A web view being served, at `url`."""

    url: str

    def login_link(self, token: str) -> str:
        """The address that logs a browser in with `token` and opens the job list."""
        return f"{self.url}/?token={quote(token, safe='')}"


@dataclass(frozen=True)
class Viewer:
    """Who a request comes from: a token the API server accepted, and whose it is."""

    token: str
    user: str


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8",
                        headers={"Cache-Control": "no-store"})


async def _blocking(call: Callable[[], T]) -> T:
    return await asyncio.to_thread(call)


def _unless_failing(parts: Callable[[], Update]) -> Update:
    """A stream's redraw; while the API server fails, nothing changes (the next tries
    again), and a token it stopped accepting ends the stream."""
    try:
        return parts()
    except ApiError as exc:
        if exc.status == 401:
            return Denied()
        logger.debug(f"web view: a redraw waits for the API server: {exc}")
        return {}


class WebView:
    """The routes of the web view over one live model and one API server."""

    def __init__(self, model: LiveJobs, reviews: ApiReviews, pictures: Pictures, *,
                 cookie: str, follow: Callable[[], object], pause: Callable[[], object],
                 idle_s: float) -> None:
        """`follow` starts watching the cluster (and waits for the first lists), `pause`
        stops it; both block, so they run on worker threads. They are called when the
        first viewer asks for a page, and when nobody has for `idle_s` seconds."""
        self._model = model
        self._follow = follow
        self._pause = pause
        self._idle_s = idle_s
        self._following = False
        self._switching = asyncio.Lock()
        self._last_viewer = time.monotonic()
        self._answering = 0
        """Requests being answered (a page's live stream is one for as long as it is open)."""
        self._idle_watch: asyncio.Task[None] | None = None
        self._reviews = reviews
        self._gate = Gate(reviews)
        self._pictures = pictures
        self._sessions = Sessions()
        self._streams = Streams()
        self._cookie = cookie

    def app(self) -> web.Application:
        """The aiohttp application."""
        app = web.Application(middlewares=[self._looking, self._api_errors])
        app.on_response_prepare.append(self._secure)
        app.on_startup.append(self._watch_idleness)
        app.on_shutdown.append(self._close_streams)
        app.on_cleanup.append(self._stop_watching_idleness)
        app.router.add_get("/", self._jobs_page)
        app.router.add_get("/stream", self._jobs_stream)
        app.router.add_get("/jobs/{namespace}/{resource}/{name}", self._job_page)
        app.router.add_get("/jobs/{namespace}/{resource}/{name}/stream", self._job_stream)
        app.router.add_get("/jobs/{namespace}/{resource}/{name}/logs/{pod}", self._pod_log)
        app.router.add_get("/login", self._login_form)
        app.router.add_post("/login", self._login)
        app.router.add_post("/logout", self._logout)
        app.router.add_get(markup.SCRIPT_URL, self._asset(script.SCRIPT, "text/javascript"))
        app.router.add_get(markup.STYLE_URL, self._asset(assets.STYLE, "text/css"))
        for icon in (markup.ICON_URL, "/favicon.ico"):  # browsers ask for the .ico anyway
            app.router.add_get(icon, self._asset(assets.ICON, "image/svg+xml"))
        return app

    # --- who is asking -------------------------------------------------------------------

    async def _viewer(self, request: web.Request) -> Viewer:
        """The request's viewer; raises 401 (the login form) or 503 when there is none."""
        if "token" in request.query:
            raise await self._token_link(request)
        token = bearer_token(request.headers)
        session = request.cookies.get(self._cookie)
        if token is None and session:
            token = self._sessions.token(session)
        if token is None:
            raise self._refused(request, "")
        user = await self._who(token)
        if user is None:
            if session:
                self._sessions.end(session)
            raise self._refused(request, "The API server no longer accepts that token: log "
                                         "in again.")
        await self._watching()
        return Viewer(token, user)

    # --- watching the cluster while someone looks ----------------------------------------

    async def _watching(self) -> None:
        """Watch the cluster from the first viewer's request on (or again after a rest)."""
        if self._following:
            return
        async with self._switching:
            if not self._following:
                await _blocking(self._follow)
                self._following = True

    @web.middleware
    async def _looking(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Count the requests being answered, so the watches never rest under one (a
        page's first request may wait on a worker thread before its stream opens)."""
        self._answering += 1
        try:
            return await handler(request)
        finally:
            self._answering -= 1
            self._last_viewer = time.monotonic()

    async def _rest_if_idle(self) -> None:
        """Stop watching when no request is being answered (no page's stream is open) and
        none was for `idle_s` seconds."""
        async with self._switching:
            if self._answering:  # someone is looking now
                self._last_viewer = time.monotonic()
            idle = time.monotonic() - self._last_viewer
            if not self._following or idle < self._idle_s:
                return
            self._following = False  # a request meanwhile waits for the pause, then follows
            await _blocking(self._pause)
        logger.info(f"web view: nobody looked for {idle:.0f}s: stopped watching the "
                    "cluster until someone does")

    async def _watch_idleness(self, _app: web.Application) -> None:
        async def every_while() -> None:
            while True:
                await asyncio.sleep(self._idle_s / 4)
                await self._rest_if_idle()

        self._idle_watch = asyncio.create_task(every_while())

    async def _stop_watching_idleness(self, _app: web.Application) -> None:
        if self._idle_watch is not None:
            self._idle_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_watch

    async def _who(self, token: str) -> str | None:
        return await _blocking(lambda: self._gate.who(token))

    @web.middleware
    async def _api_errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """A token the server stopped accepting mid-request asks to log in again; any other
        failure of the API server says that it failed."""
        try:
            return await handler(request)
        except ApiError as exc:
            if exc.status == 401:
                raise self._refused(request, "The API server no longer accepts that token: "
                                             "log in again.") from exc
            logger.warning(f"web view: the API server failed a check for {request.path}: {exc}")
            return _html(pages.message_page(
                "API server unavailable", f"The API server could not answer: {exc}"), status=503)

    async def _token_link(self, request: web.Request) -> web.HTTPException:
        """A `?token=` link: a session for the token, and back to the same page without it."""
        clean = str(request.rel_url.with_query(
            [(key, value) for key, value in request.query.items() if key != "token"]))
        token = request.query["token"].strip()
        if not token or await self._who(token) is None:
            return self._refused(request, "The API server did not accept the token in that "
                                          "link.", next_path=clean)
        answer = web.HTTPSeeOther(location=safe_next(clean))
        self._start_session(answer, token)
        return answer

    def _refused(self, request: web.Request, message: str, *,
                 next_path: str | None = None) -> web.HTTPException:
        page = pages.login_page(next_path=safe_next(next_path or request.path_qs),
                                message=message)
        return web.HTTPUnauthorized(text=page, content_type="text/html",
                                    headers={"WWW-Authenticate": 'Bearer realm="jobmachine"'})

    def _start_session(self, response: web.StreamResponse, token: str) -> None:
        response.set_cookie(self._cookie, self._sessions.start(token), httponly=True,
                            samesite="Strict", path="/")

    async def _login_form(self, request: web.Request) -> web.Response:
        return _html(pages.login_page(next_path=safe_next(request.query.get("next"))))

    async def _login(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = str(form.get("token") or "").strip()
        next_path = safe_next(str(form.get("next") or "/"))
        if not token or await self._who(token) is None:
            return _html(pages.login_page(next_path=next_path, message=(
                "The API server did not accept that token.")), status=401)
        answer = web.HTTPSeeOther(location=next_path)
        self._start_session(answer, token)
        raise answer

    async def _logout(self, request: web.Request) -> web.Response:
        session = request.cookies.get(self._cookie)
        if session:
            self._sessions.end(session)
        answer = web.HTTPSeeOther(location="/login")
        answer.del_cookie(self._cookie, path="/")
        raise answer

    # --- the job list --------------------------------------------------------------------

    def _visible_jobs(self, viewer: Viewer) -> list[Job] | None:
        """The jobs the viewer may list; None when they may list jobs of no kind anywhere
        they could be (all namespaces, or a namespace that has jobs)."""
        kinds = self._model.kinds()
        jobs = self._model.jobs()
        places = {(job.resource, job.namespace) for job in jobs}
        allowed = self._gate.visible(viewer.token, places)
        anywhere = any(self._gate.may_list(viewer.token, kind, "") for kind in kinds)
        if kinds and not allowed and not anywhere:
            return None
        return [job for job in jobs if (job.resource, job.namespace) in allowed]

    def _no_jobs_allowed(self, viewer: Viewer) -> web.Response:
        kinds = ", ".join(sorted(kind.kind for kind in self._model.kinds()))
        return _html(pages.message_page("Forbidden", (
            f"{viewer.user} may not list jobs of any kind ({kinds}) in any namespace that "
            "has jobs. Ask for a Role or ClusterRole that allows list on them.")
            , user=viewer.user), status=403)

    async def _jobs_page(self, request: web.Request) -> web.Response:
        viewer = await self._viewer(request)
        jobs = await _blocking(lambda: self._visible_jobs(viewer))
        if jobs is None:
            return self._no_jobs_allowed(viewer)
        view = ListView.from_query(request.query)
        return _html(list_page.jobs_page(jobs, user=viewer.user, now=datetime.now(UTC),
                                         stream="/stream" + view.query().rstrip("?"),
                                         view=view))

    async def _jobs_stream(self, request: web.Request) -> web.StreamResponse:
        viewer = await self._viewer(request)
        view = ListView.from_query(request.query)

        def parts() -> Update:
            if self._gate.who(viewer.token) is None:
                return Denied()
            jobs = self._visible_jobs(viewer)
            return Denied() if jobs is None else list_page.render_jobs_parts(
                jobs, datetime.now(UTC), view)

        async def render() -> Update:
            return await _blocking(lambda: _unless_failing(parts))

        if await _blocking(lambda: self._visible_jobs(viewer)) is None:
            return self._no_jobs_allowed(viewer)
        return await self._streams.serve(
            request, model=self._model, wanted=lambda _key, change: change == "job",
            render=render, tick_s=LIST_TICK_S)

    # --- one job -------------------------------------------------------------------------

    def _job_detail(self, viewer: Viewer, kind: Resource, key: JobKey,
                    logs: LogTails) -> JobDetail | Denied | None:
        """What the job's page shows this viewer; Denied, or None when there is no job."""
        namespace, name = key
        if not self._gate.may_list(viewer.token, kind, namespace):
            return Denied()
        hidden = tuple(what for what, resource in (("pods", PODS), ("events", EVENTS))
                       if not self._gate.may_list(viewer.token, resource, namespace))
        drawn = self._model.job(kind, namespace, name)
        picture = self._pictures.of(drawn) if drawn is not None else None
        # Read after drawing (which can take a moment): the page shows the job as it is now.
        job = self._model.job(kind, namespace, name)
        if job is None or picture is None:
            return None
        pods = [] if "pods" in hidden else self._model.pods_of(job)
        return JobDetail(
            job=job, picture=picture, pods=pods,
            events=[] if "events" in hidden else self._model.events_of(job),
            logs=logs.read(pods), hidden=hidden,
        )

    def _job_target(self, request: web.Request) -> tuple[Resource | None, JobKey]:
        info = request.match_info
        return self._model.kind(info["resource"]), (info["namespace"], info["name"])

    def _job_missing(self, viewer: Viewer, request: web.Request) -> web.Response:
        info = request.match_info
        return _html(pages.message_page("Not found", (
            f"There is no job {info['namespace']}/{info['name']} of the resource "
            f"{info['resource']} (or it was deleted)."), user=viewer.user), status=404)

    def _job_forbidden(self, viewer: Viewer, kind: Resource, namespace: str) -> web.Response:
        return _html(pages.message_page("Forbidden", (
            f"{viewer.user} may not list {kind.plural} in namespace {namespace}. Ask for a "
            "Role that allows list on them."), user=viewer.user), status=403)

    async def _job_page(self, request: web.Request) -> web.Response:
        viewer = await self._viewer(request)
        kind, key = self._job_target(request)
        if kind is None:
            return self._job_missing(viewer, request)
        logs = LogTails(lambda: self._reviews.client_for(viewer.token), key[0])
        detail = await _blocking(lambda: self._job_detail(viewer, kind, key, logs))
        if isinstance(detail, Denied):
            return self._job_forbidden(viewer, kind, key[0])
        if detail is None:
            return self._job_missing(viewer, request)
        return _html(job_page.job_page(detail, user=viewer.user, now=datetime.now(UTC),
                                       stream=request.path + "/stream"))

    async def _job_stream(self, request: web.Request) -> web.StreamResponse:
        viewer = await self._viewer(request)
        kind, key = self._job_target(request)
        if kind is None:
            return self._job_missing(viewer, request)
        logs = LogTails(lambda: self._reviews.client_for(viewer.token), key[0])

        def parts() -> Update:
            if self._gate.who(viewer.token) is None:
                return Denied()
            assert kind is not None
            detail = self._job_detail(viewer, kind, key, logs)
            if detail is None:
                return Gone(f"{key[0]}/{key[1]} was deleted")
            if isinstance(detail, Denied):
                return detail
            return job_page.render_job_parts(detail, datetime.now(UTC))

        async def render() -> Update:
            return await _blocking(lambda: _unless_failing(parts))

        def wanted(changed: JobKey, _change: Change) -> bool:
            return changed == key

        first = await _blocking(lambda: self._job_detail(viewer, kind, key, logs))
        if isinstance(first, Denied):
            return self._job_forbidden(viewer, kind, key[0])
        if first is None:
            return self._job_missing(viewer, request)
        return await self._streams.serve(request, model=self._model, wanted=wanted,
                                         render=render, tick_s=JOB_TICK_S)

    async def _pod_log(self, request: web.Request) -> web.Response:
        """The whole log of one of a job's pods (`?previous=1`: the container's attempt
        before its restart), read as the viewer: as text, or as a file (`?download=1`)."""
        viewer = await self._viewer(request)
        kind, key = self._job_target(request)
        if kind is None:
            return self._job_missing(viewer, request)
        if not await _blocking(lambda: self._gate.may_list(viewer.token, kind, key[0])):
            return self._job_forbidden(viewer, kind, key[0])
        job = self._model.job(kind, *key)
        pod = self._model.pod_of(job, request.match_info["pod"]) if job is not None else None
        if pod is None:
            return self._job_missing(viewer, request)
        previous = request.query.get("previous") == "1"
        read = await _blocking(lambda: whole_log(
            self._reviews.client_for(viewer.token), key[0], pod, previous=previous))
        headers = {"Cache-Control": "no-store"}
        if request.query.get("download") == "1":
            name = f"{pod.name}{'.previous' if previous else ''}.log"
            headers["Content-Disposition"] = f'attachment; filename="{name}"'
        return web.Response(text=read.text, status=read.status, content_type="text/plain",
                            charset="utf-8", headers=headers)

    # --- plumbing ------------------------------------------------------------------------

    @staticmethod
    def _asset(text: str, content_type: str) -> Callable[[web.Request], Awaitable[
            web.Response]]:
        async def serve(_request: web.Request) -> web.Response:
            return web.Response(text=text, content_type=content_type, charset="utf-8")

        return serve

    @staticmethod
    async def _secure(_request: web.Request, response: web.StreamResponse) -> None:
        response.headers.update(_HEADERS)

    async def _close_streams(self, _app: web.Application) -> None:
        self._streams.close_all()


def _bound_socket(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _url(address: str, port: int) -> str:
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(address, address)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


@contextmanager
def serving_web_view(client: KubeClient, options: WebOptions) -> Iterator[RunningWebView]:
    """Follow the cluster through `client` and serve the web view for the `with` block."""
    sock = _bound_socket(options.address, options.port)
    port = int(sock.getsockname()[1])
    model = LiveJobs()
    reviews = ApiReviews(client)
    pictures = Pictures(client, system_namespace=options.system_namespace,
                        drawn=model.picture_drawn)
    follower = Follower(client, model, namespace=options.namespace)
    view = WebView(model, reviews, pictures, cookie=f"jobmachine-session-{port}",
                   follow=lambda: follower.follow(_FIRST_LIST_S), pause=follower.pause,
                   idle_s=options.idle_s)
    try:
        with _serving(view.app(), sock):
            url = _url(options.address, port)
            logger.info(f"web view serving at {url}")
            yield RunningWebView(url)
    finally:
        follower.stop()
        pictures.close()
        reviews.close()


@contextmanager
def _serving(app: web.Application, sock: socket.socket) -> Iterator[None]:
    """Serve `app` on `sock` from a thread with its own event loop, for the `with` block."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_S)

    async def start() -> None:
        await runner.setup()
        await web.SockSite(runner, sock).start()

    try:
        with running_loop("jobmachine-web-view") as loop:
            run_on(loop, start(), timeout_s=_START_TIMEOUT_S, what="starting the web view")
            try:
                yield
            finally:
                run_on(loop, runner.cleanup(), timeout_s=_SHUTDOWN_S + 25,
                       what="stopping the web view")
    finally:
        sock.close()
