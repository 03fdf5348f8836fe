"""kube-controller-manager's root-ca-cert-publisher: a `kube-root-ca.crt` ConfigMap in every
namespace that is not terminating, so the kube-api-access volume of every pod
(`service_account_admission.py`) can project the CA that verifies this server.

The ConfigMap is recreated when deleted and its `ca.crt` restored when edited, as
upstream does (the description annotation is put back only when missing or empty). A
server without TLS has no CA: it publishes an empty `ca.crt`, so pods still mount their
credentials (a missing ConfigMap would hold them in ContainerCreating); an in-cluster
client needs an HTTPS server anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.cluster.apiserver.admission.service_account_admission import (
    ROOT_CA_CONFIGMAP,
    ROOT_CA_KEY,
)
from engine.cluster.apiserver.controllers.access_controllers import NamespaceKeeper
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS
from engine.cluster.apiserver.storage.objects import Entry, Obj

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
_MANAGER = "kube-controller-manager"


class RootCaPublisher(NamespaceKeeper):
    """Keeps `kube-root-ca.crt` with the server's CA (PEM, "" without TLS) in every namespace."""

    def __init__(self, store: Store, root_ca: str) -> None:
        self._data = {ROOT_CA_KEY: root_ca}
        super().__init__(store, CONFIGMAPS, ROOT_CA_CONFIGMAP, ("MODIFIED", "DELETED"),
                         "apiserver.rootca")

    def _keep(self, namespace: str, entry: Entry | None) -> None:
        if entry is None:
            self._store.create(CONFIGMAPS, namespace, self._published(), field_manager=_MANAGER)
        elif self._stale(entry.obj):
            self._store.update(CONFIGMAPS, namespace, ROOT_CA_CONFIGMAP,
                               self._restored(entry.obj), field_manager=_MANAGER)

    def _published(self) -> Obj:
        return {"metadata": {"name": ROOT_CA_CONFIGMAP,
                             "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                "data": dict(self._data)}

    def _stale(self, config_map: Obj) -> bool:
        annotations = config_map["metadata"].get("annotations") or {}
        return config_map.get("data") != self._data or not annotations.get(DESCRIPTION_ANNOTATION)

    def _restored(self, config_map: Obj) -> Obj:
        metadata = config_map["metadata"]
        annotations = {**(metadata.get("annotations") or {}), DESCRIPTION_ANNOTATION: DESCRIPTION}
        return {**config_map, "metadata": {**metadata, "annotations": annotations},
                "data": dict(self._data)}
