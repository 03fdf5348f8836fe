"""Installing CRDs, machines and the shipped manifests through a fake API, as `jobmachine
up` and `run --machines` do: an existing object replaced at its current resourceVersion,
only StateMachine documents applied as machines, and one bad file, refused document or
unserved kind logged and skipped without keeping the others out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from engine.controller.machines.install import (
    apply_machines,
    apply_manifests,
    create_or_replace,
    install_crds,
)
from engine.controller.machines.served import CRDS
from engine.kube.errors import AlreadyExists, Invalid, NotFound
from engine.kube.resources import CONFIGMAPS, STATE_MACHINES, Resource

DEMO_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: demojobs.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: DemoJob, plural: demojobs}
  versions: [{name: v1, served: true, storage: true}]
status:
  conditions: [{type: Established, status: "True"}]
"""


class FakeClient:
    """Objects by (plural, namespace, name); every write in order; names it refuses."""

    def __init__(self, *, existing: list[tuple[Resource, str | None, dict[str, Any]]] = (),  # type: ignore[assignment]
                 refuse: tuple[str, ...] = ()) -> None:
        self.objects = {(r.plural, ns, o["metadata"]["name"]): copy.deepcopy(o)
                        for r, ns, o in existing}
        self.refuse = refuse
        self.writes: list[tuple[str, str, str | None, str, dict[str, Any]]] = []

    def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None
               ) -> dict[str, Any]:
        name = body["metadata"]["name"]
        if name in self.refuse:
            raise Invalid(422, "Invalid", f"{res.kind} {name} is invalid", {})
        if (res.plural, namespace, name) in self.objects:
            raise AlreadyExists(409, "AlreadyExists", f"{name} already exists", {})
        self.writes.append(("create", res.plural, namespace, name, body))
        self.objects[(res.plural, namespace, name)] = body
        return body

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if (res.plural, namespace, name) not in self.objects:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        return self.objects[(res.plural, namespace, name)]

    def replace(self, res: Resource, name: str, body: dict[str, Any], *,
                namespace: str | None = None) -> dict[str, Any]:
        self.writes.append(("replace", res.plural, namespace, name, body))
        return body

    def list(self, res: Resource) -> tuple[list[dict[str, Any]], str]:
        return [o for (plural, _, _), o in self.objects.items() if plural == res.plural], "1"


def machine(name: str) -> str:
    return (f"apiVersion: jobmachine.dev/v1alpha1\nkind: StateMachine\nmetadata: {{name: {name}}}\n"
            "spec: {}\n")


def test_a_new_object_is_created_and_an_existing_one_replaced_at_its_version() -> None:
    stored = {"metadata": {"name": "cm", "resourceVersion": "41"}, "data": {"a": "0"}}
    client = FakeClient(existing=[(CONFIGMAPS, "team", stored)])
    new = {"metadata": {"name": "other"}, "data": {"a": "1"}}
    assert create_or_replace(client, CONFIGMAPS, new, "team") is True  # type: ignore[arg-type]
    changed = {"metadata": {"name": "cm", "labels": {"x": "y"}}, "data": {"a": "2"}}
    assert create_or_replace(client, CONFIGMAPS, changed, "team") is False  # type: ignore[arg-type]
    assert client.writes[-1] == ("replace", "configmaps", "team", "cm", {
        "metadata": {"name": "cm", "labels": {"x": "y"}, "resourceVersion": "41"},
        "data": {"a": "2"}})
    assert changed["metadata"] == {"name": "cm", "labels": {"x": "y"}}


def test_every_crd_file_is_installed_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(DEMO_CRD)
    (tmp_path / "a.yaml").write_text(DEMO_CRD.replace("demojobs.example.com",
                                                      "alphas.example.com"))
    (tmp_path / "notes.txt").write_text("not a CRD")
    client = FakeClient()
    assert install_crds(client, tmp_path) == ["alphas.example.com",  # type: ignore[arg-type]
                                              "demojobs.example.com"]
    assert [(w[0], w[1]) for w in client.writes] == [("create", CRDS.plural)] * 2


def test_only_state_machines_are_applied_and_a_bad_file_or_refusal_is_skipped(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    (tmp_path / "a.yaml").write_text(machine("alpha") + "---\nkind: ConfigMap\n")
    (tmp_path / "b.yaml").write_text("key: [unclosed\n")
    (tmp_path / "c.yaml").write_text(machine("refused") + "---\n" + machine("gamma"))
    client = FakeClient(refuse=("refused",))
    assert apply_machines(client, [tmp_path]) == ["alpha", "gamma"]  # type: ignore[arg-type]
    assert {w[1] for w in client.writes} == {STATE_MACHINES.plural}
    errors = [r["message"] for r in records if r["level"].name == "ERROR"]
    assert any(m.startswith(f"{tmp_path / 'b.yaml'}: not applied, it cannot be read as YAML")
               for m in errors)
    assert any(m.startswith(f"{tmp_path / 'c.yaml'}: StateMachine not applied: ")
               for m in errors)


def test_manifests_go_to_their_kinds_namespace_and_unserved_kinds_are_skipped(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    crd = {"metadata": {"name": "demojobs.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "DemoJob", "plural": "demojobs"},
                    "versions": [{"name": "v1", "served": True}]},
           "status": {"conditions": [{"type": "Established", "status": "True"}]}}
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sdk, namespace: kubeflow}\n---\n"
        "apiVersion: example.com/v1\nkind: DemoJob\nmetadata: {name: demo}\n---\n"
        "apiVersion: example.com/v2\nkind: DemoJob\nmetadata: {name: future}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: refused}\n")
    client = FakeClient(existing=[(CRDS, None, crd)], refuse=("refused",))
    assert apply_manifests(client, tmp_path) == ["ConfigMap/sdk",  # type: ignore[arg-type]
                                                 "DemoJob/demo"]
    assert [(w[1], w[2], w[3]) for w in client.writes] == [
        ("configmaps", "kubeflow", "sdk"), ("demojobs", "default", "demo")]
    errors = [r["message"] for r in records if r["level"].name == "ERROR"]
    assert f"{tmp_path / 'a.yaml'}: DemoJob/future not applied: the server serves no " \
        "DemoJob in example.com/v2" in errors
    assert any(m.startswith(f"{tmp_path / 'a.yaml'}: ConfigMap/refused not applied: ")
               for m in errors)
