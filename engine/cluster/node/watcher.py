"""List-then-watch of one resource type, in a thread, that survives the server going away.

Keeps the last version of every object it has seen (or the part of it `keep`
returns, as client-go's informer transforms do) and tells a handler about each
change. A watch that ends is resumed from the last resourceVersion (kept
fresh by bookmarks); a 410 Expired, or any other failure, leads to a relist
after a back-off, and the relist reports what changed or vanished meanwhile as
ordinary events, so the handler never needs to know.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from loguru import logger

from engine.cluster.node.api import ApiError, NodeApi, WatchStream

Handler = Callable[[str, dict[str, Any]], None]
Keep = Callable[[dict[str, Any]], dict[str, Any]]
Key = tuple[str, str]

_WATCH_SECONDS = 300
_BACKOFF_START_S = 0.2
_BACKOFF_CAP_S = 10.0


class _ExpiredError(Exception):
    """The server no longer has the history to resume from: relist."""


def _key(obj: dict[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name"))


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Watcher:
    """Watches `path` (a collection such as /api/v1/pods) and calls `handler(type, object)`."""

    def __init__(self, api: NodeApi, path: str, handler: Handler, *, name: str,
                 keep: Keep | None = None) -> None:
        """`keep`: what of each object to cache and hand to `handler` (all of it when None);
        it runs under the watcher's lock, so it must not call the watcher."""
        self._api = api
        self._path = path
        self._handler = handler
        self._keep = keep
        self._objects: dict[Key, dict[str, Any]] = {}
        self._listed = threading.Event()
        self._stopping = threading.Event()
        self._stream: WatchStream | None = None
        self._lock = threading.Lock()
        self._log = logger.bind(component="node.watch", resource=path)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread.is_alive():
            self._thread.join(10)

    def objects(self) -> list[dict[str, Any]]:
        """The objects as last seen (safe from any thread)."""
        with self._lock:
            return list(self._objects.values())

    def keep_again(self, key: Key) -> None:
        """Apply `keep` again to the cached object at `key` (what to keep of it changed)."""
        if self._keep is None:
            return
        with self._lock:
            obj = self._objects.get(key)
            if obj is not None:
                self._objects[key] = self._keep(obj)

    @property
    def listed(self) -> bool:
        """Whether a list has succeeded, so `objects` is every object there is (give or take
        the changes on their way)."""
        return self._listed.is_set()

    def _run(self) -> None:
        delay = _BACKOFF_START_S
        version: str | None = None
        while not self._stopping.is_set():
            try:
                if version is None:
                    version = self._relist()
                version = self._watch(version)
                delay = _BACKOFF_START_S
            except _ExpiredError:
                version = None
            except Exception as exc:
                if self._stopping.is_set():
                    return
                if isinstance(exc, ApiError | ValueError):
                    self._log.warning(f"watch failed, relisting in {delay:.1f}s: {exc}")
                else:
                    self._log.exception(f"watch failed, relisting in {delay:.1f}s")
                version = None
                self._stopping.wait(delay)
                delay = min(_BACKOFF_CAP_S, delay * 2)

    def _relist(self) -> str:
        listed = self._api.get(self._path)
        with self._lock:
            fresh = {_key(item): self._kept(item) for item in listed.get("items") or ()}
            old, self._objects = self._objects, dict(fresh)
        self._listed.set()
        for key, obj in old.items():
            if key not in fresh:
                self._deliver("DELETED", obj)
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                self._deliver("ADDED", obj)
            elif _version(before) != _version(obj):
                self._deliver("MODIFIED", obj)
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    def _watch(self, version: str) -> str:
        query = {"resourceVersion": version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(_WATCH_SECONDS)}
        stream = self._api.watch(self._path, query)
        with self._lock:
            self._stream = stream
        if self._stopping.is_set():
            stream.close()
        try:
            for event in stream:
                version = self._apply(event) or version
                if self._stopping.is_set():
                    break
        finally:
            with self._lock:
                self._stream = None
            stream.close()
        return version

    def _apply(self, event: dict[str, Any]) -> str | None:
        kind, obj = str(event.get("type")), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _ExpiredError()
            raise ApiError(int(obj.get("code") or 0), str(obj.get("reason")),
                           str(obj.get("message")))
        if kind == "BOOKMARK":
            return _version(obj) or None
        with self._lock:
            # Under the lock, so a `keep_again` cannot be overtaken by an older decision.
            obj = self._kept(obj)
            if kind == "DELETED":
                self._objects.pop(_key(obj), None)
            else:
                self._objects[_key(obj)] = obj
        self._deliver(kind, obj)
        return _version(obj) or None

    def _kept(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj if self._keep is None else self._keep(obj)

    def _deliver(self, kind: str, obj: dict[str, Any]) -> None:
        try:
            self._handler(kind, obj)
        except Exception:
            namespace, name = _key(obj)
            self._log.bind(pod=f"{namespace}/{name}").exception(f"handling {kind} failed")
