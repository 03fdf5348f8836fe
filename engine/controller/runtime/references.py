"""The objects jobs name through their machine's governs.references: found, watched, requeued.

A TrainJob reads its runtime (a ClusterTrainingRuntime or TrainingRuntime) to build its
JobSet. The engine watches each kind some job names, from the first time one does (the
kinds are CEL over the job, so they are known only then), keeps every object of it in a
cache, and remembers which jobs named which object: any change to that object (its
creation too, for a job that waits for it) queues those jobs again.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from loguru import logger

from engine.controller.reconcile.children import JobKey
from engine.definition import ReferenceTarget
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.informer import Informer
from engine.kube.resources import Resource

Obj = Mapping[str, Any]
KindKey = tuple[str, str]
"""(apiVersion, kind)."""
ObjectKey = tuple[str, str, str, str]
"""(apiVersion, kind, namespace or '', name)."""

_FIRST_LIST_S = 10.0
"""How long the first reconcile that names a kind waits for that kind's first list."""


class ReferenceWatches:
    """Finds the objects jobs name, watching each kind from its first use; thread-safe."""

    def __init__(
        self, client: KubeClient, *, namespace: str | None,
        resources: Callable[[], Mapping[KindKey, Resource]],
        enqueue: Callable[[JobKey], None],
    ) -> None:
        """`namespace`: the engine's (None: all), where namespaced objects are watched;
        `resources` says which resource serves each (apiVersion, kind) now; `enqueue`
        queues a job whose named object changed."""
        self._client = client
        self._namespace = namespace
        self._resources = resources
        self._enqueue = enqueue
        self._lock = threading.Lock()
        self._watches: dict[KindKey, tuple[Informer, Cache]] = {}
        self._named: dict[JobKey, frozenset[ObjectKey]] = {}
        self._naming: defaultdict[ObjectKey, set[JobKey]] = defaultdict(set)

    def resolve(
        self, key: JobKey, targets: Mapping[str, ReferenceTarget | str]
    ) -> dict[str, Obj]:
        """Each reference of the job as last seen, `{}` while absent (or not nameable: why
        is logged); from now on a change to any of them queues the job."""
        log = logger.bind(job=str(key))
        found: dict[str, Obj] = {}
        named: set[ObjectKey] = set()
        for name, target in targets.items():
            if isinstance(target, str):
                log.warning(f"reference {name} cannot be named: {target}")
                found[name] = {}
                continue
            named.add(_object_key(target))
            cache = self._cache(target, log)
            seen = None if cache is None else cache.get(target.namespace, target.name)
            found[name] = seen if seen is not None else {}
        self._remember(key, frozenset(named))
        return found

    def forget(self, key: JobKey) -> None:
        """The job is gone: its references no longer queue it."""
        self._remember(key, frozenset())

    def stop(self) -> None:
        """Stop every watch."""
        with self._lock:
            watches = list(self._watches.values())
            self._watches.clear()
        for informer, _ in watches:
            informer.stop()

    def _remember(self, key: JobKey, named: frozenset[ObjectKey]) -> None:
        with self._lock:
            before = self._named.pop(key, frozenset())
            for obj in before - named:
                jobs = self._naming.get(obj)
                if jobs is not None:
                    jobs.discard(key)
                    if not jobs:
                        del self._naming[obj]
            for obj in named:
                self._naming[obj].add(key)
            if named:
                self._named[key] = named

    def _cache(self, target: ReferenceTarget, log: Any) -> Cache | None:
        """The cache of the target's kind, its watch started on first use; None when no
        resource serves the kind (yet)."""
        kind: KindKey = (target.api_version, target.kind)
        with self._lock:
            known = self._watches.get(kind)
            if known is None:
                resource = self._resources().get(kind)
                if resource is None:
                    log.warning(f"cannot find {target}: the API server serves no "
                                f"{target.kind} in {target.api_version}")
                    return None
                cache = Cache()
                informer = Informer(
                    self._client, resource, cache=cache, handler=self._changed(kind),
                    namespace=self._namespace if resource.namespaced else None,
                    name=f"informer-references-{resource.plural}")
                informer.start()
                known = (informer, cache)
                self._watches[kind] = known
                logger.info(f"watching {resource.kind} ({resource.plural}.{resource.group}): "
                            f"jobs name them in their machine's references")
        informer, cache = known
        if not informer.wait_synced(_FIRST_LIST_S):
            log.warning(f"{target.kind} objects were not listed within {_FIRST_LIST_S:.0f}s; "
                        f"{target} is taken as absent for now")
        return cache

    def _changed(self, kind: KindKey) -> Callable[[str, Obj | None, Obj | None], None]:
        def handle(_event: str, old: Obj | None, new: Obj | None) -> None:
            obj = new or old
            if obj is None:
                return
            metadata = obj["metadata"]
            key = (*kind, metadata.get("namespace") or "", metadata["name"])
            with self._lock:
                jobs = list(self._naming.get(key, ()))
            for job in jobs:
                self._enqueue(job)

        return handle


def _object_key(target: ReferenceTarget) -> ObjectKey:
    return (target.api_version, target.kind, target.namespace or "", target.name)
