"""Which watched child kinds are replicas: only a spec.child kind's objects meet the
engine's expectations (a declared Service carries replica labels too, and must not)."""

from __future__ import annotations

from engine.controller.machines.controller import _child_kinds, _object_kinds
from engine.kube.resources import Resource

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}
JOB = {"apiVersion": "batch/v1", "kind": "Job"}


def test_only_a_spec_child_kind_is_a_replica_kind() -> None:
    documents = [
        {"spec": {"objects": [SERVICE], "child": JOB}},  # JobSet's shape
        {"spec": {"objects": [{"apiVersion": "v1", "kind": "ConfigMap"}]}},
        {"spec": {}},
    ]
    assert _child_kinds(documents) == frozenset({("batch/v1", "Job")})


def test_every_declared_and_child_kind_is_watched_when_served_in_a_namespace() -> None:
    served = {("example.com/v1", "Widget"): Resource("example.com", "v1", "widgets", "Widget"),
              ("batch/v1", "Job"): Resource("batch", "v1", "jobs", "Job"),
              ("example.com/v1", "Cluster"): Resource("example.com", "v1", "clusters", "Cluster",
                                                      namespaced=False)}
    documents = [{"spec": {"objects": [SERVICE, {"apiVersion": "example.com/v1",
                                                  "kind": "Widget"},
                                         {"apiVersion": "example.com/v1", "kind": "Cluster"},
                                         {"apiVersion": "example.com/v1", "kind": "Gone"}],
                           "child": JOB}}]
    assert set(_object_kinds(documents, served)) == {
        ("v1", "Service"), ("batch/v1", "Job"), ("example.com/v1", "Widget")}
