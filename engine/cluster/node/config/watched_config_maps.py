"""The ConfigMaps the node's containers read, kept from a watch as a kubelet keeps them.

A kubelet at its default (`configMapAndSecretChangeDetectionStrategy: Watch`) reads the
ConfigMaps a pod uses from a watch-fed cache, not from the API server at each container
start. The local node did one GET per container start (every pod's token volume reads
`kube-root-ca.crt`), about 2% of the server's requests in a wide job and 6% of the
node's CPU. `WatchedConfigMaps` keeps every ConfigMap's data from one informer; a
ConfigMap it does not hold (not listed yet, created a moment ago, or truly missing) is
read from the server as before, so a container still waits for a missing ConfigMap and
starts once it exists. What a container sees of a ConfigMap changed a moment before it
starts is what the watch has delivered, as on a kubelet.
"""

from __future__ import annotations

from typing import Any

from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.informer import Informer
from engine.kube.resources import CONFIGMAPS

Obj = dict[str, Any]


def _view(obj: Obj) -> Obj:
    """What a container reads of a ConfigMap (its data), and what the cache files it under."""
    metadata = obj.get("metadata") or {}
    view: Obj = {"metadata": {k: metadata[k] for k in ("namespace", "name", "resourceVersion")
                              if k in metadata}}
    for key in ("data", "binaryData"):
        if key in obj:
            view[key] = obj[key]
    return view


def _ignore(_event_type: str, _old: Obj | None, _new: Obj | None) -> None:
    """Nothing to do on a change: the next container start reads the cache."""


class WatchedConfigMaps:
    """Every ConfigMap's data, from an informer of the node's own."""

    def __init__(self, api: KubeClient, node_name: str) -> None:
        self._cache = Cache(_view)
        self._informer = Informer(api, CONFIGMAPS, cache=self._cache, handler=_ignore,
                                  name=f"{node_name} configmaps")

    def start(self) -> None:
        self._informer.start()

    def stop(self) -> None:
        self._informer.stop()

    def get(self, namespace: str, name: str) -> Obj | None:
        """The ConfigMap as the watch last delivered it; None when the cache does not hold
        it (the caller reads the server)."""
        if not self._informer.has_synced:
            return None
        return self._cache.get(namespace, name)
