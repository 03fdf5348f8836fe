"""`jobmachine manifests install`: the whole in-cluster install as one stream of objects.

The kustomizations in deploy/ are the one description of the install (`kubectl apply -k`
reads them too); this renders the part of kustomize they use (resources, components and
JSON 6902 patches), puts the CRDs first and the shipped machines (StateMachine objects)
last, so an admin without kustomize gets the same objects, and the engine finds its
machines. Anything else in a kustomization is refused by name, never ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engine import yaml_documents
from engine.cluster.apiserver.patch.patch import json_patch
from engine.cluster.apiserver.patch.values import PatchError

Obj = dict[str, Any]

_KNOWN_FIELDS = {"apiVersion", "kind", "resources", "components", "patches"}
_KNOWN_TARGET = {"group", "version", "kind", "name", "namespace"}


class ManifestError(Exception):
    """A kustomization this renderer cannot read, said with the file and the field."""


def _documents(path: Path) -> list[Obj]:
    return [doc for doc in yaml_documents.load_all(path.read_text()) if doc]


def _kustomization(directory: Path) -> Obj:
    path = directory / "kustomization.yaml"
    if not path.is_file():
        raise ManifestError(f"{directory}: no kustomization.yaml")
    found = yaml_documents.load(path.read_text()) or {}
    unknown = sorted(set(found) - _KNOWN_FIELDS)
    if unknown:
        raise ManifestError(f"{path}: {', '.join(unknown)} not supported here (only "
                            f"{', '.join(sorted(_KNOWN_FIELDS))}); render it with "
                            "`kubectl kustomize` instead")
    return dict(found)


def _matches(obj: Obj, target: Obj) -> bool:
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    wanted = {"group": group, "version": version, "kind": obj.get("kind"),
              "name": (obj.get("metadata") or {}).get("name"),
              "namespace": (obj.get("metadata") or {}).get("namespace")}
    return all(wanted[key] == value for key, value in target.items())


def _patched(objects: list[Obj], patch: Obj, where: Path) -> list[Obj]:
    target = patch.get("target") or {}
    unknown = sorted(set(target) - _KNOWN_TARGET) + sorted(set(patch) - {"target", "patch"})
    if unknown or not isinstance(patch.get("patch"), str):
        raise ManifestError(f"{where}: a patch here is `target` and an inline JSON 6902 "
                            f"`patch`; not supported: {', '.join(unknown) or 'its form'}")
    operations = yaml_documents.load(patch["patch"])
    try:
        return [json_patch(obj, operations) if _matches(obj, target) else obj
                for obj in objects]
    except PatchError as exc:
        raise ManifestError(f"{where}: patch of {target}: {exc}") from None


def render_kustomization(directory: Path) -> list[Obj]:
    """The objects `kubectl kustomize directory` gives, for the features deploy/ uses."""
    found = _kustomization(directory)
    where = directory / "kustomization.yaml"
    if found.get("kind") == "Component" and found.get("patches"):
        raise ManifestError(f"{where}: a component's patches (which apply to the including "
                            "kustomization) are not supported here")
    objects: list[Obj] = []
    entries = [*(found.get("resources") or ()), *(found.get("components") or ())]
    for entry in entries:
        path = (directory / str(entry)).resolve()
        objects += render_kustomization(path) if path.is_dir() else _documents(path)
    for patch in found.get("patches") or ():
        objects = _patched(objects, patch, where)
    return objects


def install_objects(deploy: Path, crds: Iterable[Path], *, overlay: str,
                    service_monitor: bool, machines: Iterable[Path] = (),
                    image: str | None = None) -> list[Obj]:
    """The CRDs, then the overlay's objects (and the ServiceMonitor component when asked),
    then the StateMachine objects of the `machines` files; `image` replaces the engine's
    image in the Deployment."""
    overlays = deploy / "overlays"
    if not (overlays / overlay).is_dir():
        choices = ", ".join(sorted(p.name for p in overlays.iterdir() if p.is_dir()))
        raise ManifestError(f"no overlay {overlay!r} in {overlays} (there are: {choices})")
    objects = [doc for path in crds for doc in _documents(path)]
    objects += render_kustomization(overlays / overlay)
    if service_monitor:
        objects += render_kustomization(deploy / "components" / "service-monitor")
    objects += [doc for path in machines for doc in _documents(path)
                if doc.get("kind") == "StateMachine"]
    return objects if image is None else [_with_image(obj, image) for obj in objects]


def _with_image(obj: Obj, image: str) -> Obj:
    """A Deployment with `image` in every container (the engine's is its only one)."""
    if obj.get("kind") != "Deployment":
        return obj
    operations = [{"op": "replace", "path": f"/spec/template/spec/containers/{index}/image",
                   "value": image}
                  for index, _ in enumerate(obj["spec"]["template"]["spec"]["containers"])]
    patched: Obj = json_patch(obj, operations)
    return patched


def object_file_name(number: int, obj: Obj) -> str:
    """`NN-kind-name.yaml`: files in the order they must be applied."""
    name = str((obj.get("metadata") or {}).get("name", "")).replace(".", "-")
    return f"{number:02d}-{str(obj.get('kind', '')).lower()}-{name}.yaml"
