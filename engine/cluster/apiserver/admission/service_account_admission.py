"""The ServiceAccount admission plugin: every pod runs as a service account and, unless it
opts out, gets that account's API credentials mounted, as kube-apiserver admits pods.

On pod create (mirror pods excepted) an empty `spec.serviceAccountName` becomes `default`,
the account must exist (else 403, worded as upstream), the account's image pull secrets
are copied to a pod that names none, and when automounting (pod's choice, else the
account's, else true) a `kube-api-access-xxxxx` projected volume (token, `kube-root-ca.crt`,
namespace) is added and mounted at /var/run/secrets/kubernetes.io/serviceaccount in every
container and init container that mounts nothing there (ephemeral containers never: they
are added later, through their own subresource, which upstream leaves alone). Updates are
not touched: the stored pod keeps its volume. Mirror pods are left as sent but may not
reference accounts, secrets or token projections.

The `default` account is created by a controller (`access_controllers.py`) on the event
loop right after its namespace, so a pod created in the same breath can come first.
Upstream retries the lookup of `default` for about a second while its controller catches
up; here the controller cannot run while this request holds the loop, so a missing
`default` (the namespace is live: the store checked it before admission) is admitted as
the account the controller is about to create: no automount opinion, no pull secrets.
Any other missing account is refused.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from engine.cluster.apiserver.errors import forbidden_resource
from engine.cluster.apiserver.storage.objects import Obj

DEFAULT_ACCOUNT = "default"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 s, the signal on which
# TokenRequest extends a pod's token (`token_request.py`).
TOKEN_EXPIRATION_S = 60 * 60 + 7
_PROJECTED_MODE = 0o644
# utilrand.String's alphabet: no vowels, no easily confused digits.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

# (namespace, name) -> the stored ServiceAccount or None.
Accounts = Callable[[str, str], Obj | None]


def random_suffix() -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def token_volume_source() -> dict[str, Any]:
    """The projected source of the kube-api-access volume (upstream's TokenVolumeSource)."""
    return {
        "defaultMode": _PROJECTED_MODE,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_S, "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIGMAP,
                           "items": [{"key": ROOT_CA_KEY, "path": ROOT_CA_KEY}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    }


def admit_pod(pod: Obj, accounts: Accounts, *, namespace: str, name: str,
              suffix: Callable[[], str] = random_suffix) -> Obj:
    """`pod` (being created) with its service account set and its credentials mounted.

    `name` is how refusals name the pod: its name, else its generateName, since upstream
    admits before a name is generated.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    annotations = pod.get("metadata", {}).get("annotations") or {}
    if MIRROR_ANNOTATION in annotations:
        _check_mirror(spec, name)
        return pod
    account_name = str(spec.get("serviceAccountName") or "") or DEFAULT_ACCOUNT
    account = accounts(namespace, account_name)
    if account is None and account_name != DEFAULT_ACCOUNT:
        raise forbidden_resource(
            "", "pods", name,
            f"error looking up service account {namespace}/{account_name}: "
            f'serviceaccount "{account_name}" not found',
        )
    account = account or {}
    spec = {**spec, "serviceAccountName": account_name, "serviceAccount": account_name}
    if _automount(spec, account):
        spec = _mounted(spec, suffix)
    pull_secrets = [{"name": s.get("name", "")} for s in account.get("imagePullSecrets") or ()
                    if isinstance(s, dict)]
    if not spec.get("imagePullSecrets") and pull_secrets:
        spec["imagePullSecrets"] = pull_secrets
    return {**pod, "spec": spec}


def _automount(spec: dict[str, Any], account: Obj) -> bool:
    """The pod's preference, else the account's, else true."""
    for choice in (spec.get("automountServiceAccountToken"),
                   account.get("automountServiceAccountToken")):
        if isinstance(choice, bool):
            return choice
    return True


def _mounted(spec: dict[str, Any], suffix: Callable[[], str]) -> dict[str, Any]:
    """Every container and init container without a mount at the token path mounts the
    kube-api-access volume (an existing one is reused), which is added when needed."""
    volumes = [v for v in spec.get("volumes") or () if isinstance(v, dict)]
    existing = next((str(v["name"]) for v in volumes
                     if str(v.get("name") or "").startswith(VOLUME_PREFIX)), None)
    volume_name = existing or VOLUME_PREFIX + suffix()
    mount = {"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    needed = False
    spec = dict(spec)
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        lacking = [isinstance(c, dict) and not _mounts_token_path(c) for c in containers]
        spec[key] = [{**c, "volumeMounts": [*(c.get("volumeMounts") or ()), mount]} if lacks
                     else c for c, lacks in zip(containers, lacking, strict=True)]
        needed = needed or any(lacking)
    if needed and existing is None:
        spec["volumes"] = [*(spec.get("volumes") or ()),
                           {"name": volume_name, "projected": token_volume_source()}]
    return spec


def _mounts_token_path(container: dict[str, Any]) -> bool:
    return any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH
               for m in container.get("volumeMounts") or ())


def _check_mirror(spec: dict[str, Any], name: str) -> None:
    """A mirror pod (the kubelet's copy of a static pod) may not reference accounts,
    secrets or token projections, since nothing would provide them."""
    why = None
    if spec.get("serviceAccountName"):
        why = "a mirror pod may not reference service accounts"
    elif any(True for _ in _secret_names(spec)):
        why = "a mirror pod may not reference secrets"
    elif any(isinstance(p, dict) and p.get("serviceAccountToken") is not None
             for v in spec.get("volumes") or () if isinstance(v, dict)
             for p in (v.get("projected") or {}).get("sources") or ()):
        why = "a mirror pod may not use ServiceAccountToken volume projections"
    if why is not None:
        raise forbidden_resource("", "pods", name, why)


def _secret_names(spec: dict[str, Any]) -> Iterable[str]:
    """The secrets a pod spec names (the common part of upstream's VisitPodSecretNames)."""
    for ref in spec.get("imagePullSecrets") or ():
        if isinstance(ref, dict) and ref.get("name"):
            yield str(ref["name"])
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, dict):
                continue
            for source in container.get("envFrom") or ():
                if isinstance(source, dict) and (source.get("secretRef") or {}).get("name"):
                    yield str(source["secretRef"]["name"])
            for env in container.get("env") or ():
                ref = ((env or {}).get("valueFrom") or {}).get("secretKeyRef") or {}
                if ref.get("name"):
                    yield str(ref["name"])
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, dict):
            continue
        if (volume.get("secret") or {}).get("secretName"):
            yield str(volume["secret"]["secretName"])
        for projection in (volume.get("projected") or {}).get("sources") or ():
            if isinstance(projection, dict) and (projection.get("secret") or {}).get("name"):
                yield str(projection["secret"]["name"])
