"""One informer per resource: list, then watch from the list's resourceVersion, forever.

It keeps a `Cache` current and tells a handler what changed, as client-go's reflector
does: bookmarks advance the resume point, an expired resourceVersion (410) means relist
(whose differences reach the handler as synthetic events), and any other failure backs
off and resumes the watch where it stopped. While the API server is unreachable the
client's `ApiHealth` has said so once; the failures are logged at DEBUG only, and the
back-off stays short enough that the watch resumes within seconds of the server's return.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from loguru import logger

from engine.kube.cache import Cache
from engine.kube.client import KubeClient, WatchStream
from engine.kube.errors import ApiError, Forbidden, Gone
from engine.kube.outage import unreachable
from engine.kube.refusals import classify
from engine.kube.resources import Resource

Obj = dict[str, Any]
Handler = Callable[[str, Obj | None, Obj | None], None]

_BACKOFF_START_S = 0.2
_BACKOFF_CAP_S = 5.0
"""Also the longest a watch stays down after the server is back (client-go: 30 s)."""
_STOP_JOIN_S = 30.0
"""stop() ends a watch at once; this bounds the wait for a list or request in flight."""


class Informer:
    """Keeps `cache` in step with one resource (in one namespace, or all) on its own thread."""

    def __init__(
        self, client: KubeClient, resource: Resource, *, namespace: str | None = None,
        cache: Cache, handler: Handler, label_selector: str | None = None,
        watch_timeout_s: int = 300, name: str | None = None,
    ) -> None:
        """`handler(event_type, old, new)` is told of every change, with the cache's views
        (`new` None after a delete); `name` names the thread (default
        `informer-<plural>`)."""
        self._client = client
        self._resource = resource
        self._namespace = namespace
        self._cache = cache
        self._handler = handler
        self._label_selector = label_selector
        self._watch_timeout_s = watch_timeout_s
        self._stopping = threading.Event()
        self._synced = threading.Event()
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self._resource_version: str | None = None
        self._name = name or f"informer-{resource.plural}"
        self._log = logger.bind(resource=resource.plural, namespace=namespace or "*")
        self._progressed_at: float | None = None

    def start(self) -> None:
        """Start listing and watching on a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("an informer starts once")
        self._thread = threading.Thread(
            target=self._run, name=self._name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (an open watch ends at once) and wait for the thread to finish."""
        self._stopping.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None:
            self._thread.join(_STOP_JOIN_S)
            if self._thread.is_alive():
                self._log.warning("informer thread still busy after {}s", _STOP_JOIN_S)

    def wait_synced(self, timeout: float) -> bool:
        """Whether the first list reached the cache within `timeout` seconds."""
        return self._synced.wait(timeout)

    @property
    def has_synced(self) -> bool:
        """Whether the first list reached the cache (readiness)."""
        return self._synced.is_set()

    @property
    def resource(self) -> Resource:
        """What this informer lists and watches."""
        return self._resource

    @property
    def progressed_at(self) -> float | None:
        """When (time.monotonic) a page of a list last arrived; None before the first. A
        cache of a hundred thousand objects fills in hundreds of pages: this tells a list
        that is slow from one that is stuck."""
        return self._progressed_at

    def _page_arrived(self, _listed: int) -> None:
        self._progressed_at = time.monotonic()

    def _run(self) -> None:
        backoff = _BACKOFF_START_S
        while not self._stopping.is_set():
            try:
                self._watch(self._resource_version or self._relist())
                backoff = _BACKOFF_START_S
                continue
            except Gone as exc:
                self._log.info("resourceVersion {} expired ({}); relisting",
                               self._resource_version, exc)
                self._resource_version = None
                continue
            except Forbidden as exc:
                self._refused(exc, backoff)
            except ApiError as exc:
                self._log.log("DEBUG" if unreachable(exc) else "WARNING",
                              "{} failed: {}; retrying in {:.1f}s",
                              "watch" if self._resource_version else "list", exc, backoff)
            except Exception:
                self._log.exception("informer failed; retrying in {:.1f}s", backoff)
            self._stopping.wait(backoff)
            backoff = min(backoff * 2, _BACKOFF_CAP_S)

    def _refused(self, exc: Forbidden, backoff: float) -> None:
        """Advise granting a permission only when the authorizer refused (reads pass no
        admission, but a proxy or an aggregated API server may refuse in its own words)."""
        verb = "watch" if self._resource_version else "list"
        if classify(exc).rbac:
            self._log.error("{} refused: {}; grant the engine's service account this "
                            "permission (see deploy/base/rbac.yaml); retrying in {:.1f}s",
                            verb, exc, backoff)
        else:
            self._log.warning("{} refused: {}; retrying in {:.1f}s", verb, exc, backoff)

    def _relist(self) -> str:
        epoch = self._cache.epoch
        views, resource_version = self._client.list(
            self._resource, self._namespace, label_selector=self._label_selector,
            on_page=self._page_arrived, transform=self._cache.view,
        )
        for event_type, old, new in self._cache.replace(views, views_since=epoch):
            self._notify(event_type, old, new)
        self._resource_version = resource_version
        self._synced.set()
        self._log.debug("listed {} objects at resourceVersion {}", len(views), resource_version)
        return resource_version

    def _watch(self, resource_version: str) -> None:
        stream = self._client.watch(
            self._resource, self._namespace, resource_version=resource_version,
            timeout_seconds=self._watch_timeout_s, label_selector=self._label_selector,
        )
        with self._lock:
            self._stream = stream
        try:
            if self._stopping.is_set():
                return
            for event in stream:
                self._on_event(event)
        finally:
            with self._lock:
                self._stream = None
            stream.close()

    def _on_event(self, event: Obj) -> None:
        event_type = event.get("type")
        obj = event.get("object") or {}
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            old, new = self._cache.apply(event_type, obj)
            self._notify(event_type, old, new)
        elif event_type != "BOOKMARK":
            self._log.warning("ignoring a watch event of type {}", event_type)
            return
        if resource_version:
            self._resource_version = resource_version

    def _notify(self, event_type: str, old: Obj | None, new: Obj | None) -> None:
        try:
            self._handler(event_type, old, new)
        except Exception:
            self._log.exception("the {} handler failed", event_type)
