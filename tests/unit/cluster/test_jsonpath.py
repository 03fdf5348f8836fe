"""The JSONPath subset of CRD printer columns."""

from __future__ import annotations

import pytest

from engine.cluster.apiserver.printing.jsonpath import find, parse

DOC = {
    "metadata": {"name": "j", "labels": {"app.kubernetes.io/name": "train"}},
    "spec": {
        "replicas": 2,
        "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
    },
    "status": {
        "conditions": [
            {"type": "Created", "status": "True", "count": 1},
            {"type": "Ready", "status": "False", "count": 5},
        ]
    },
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.replicas", [2]),
        ("{.spec.replicas}", [2]),
        ("$.spec.replicas", [2]),
        (".spec.containers[0].image", ["x"]),
        (".spec.containers[-1].name", ["b"]),
        (".spec.containers[*].name", ["a", "b"]),
        (".spec.containers[5].name", []),
        (".spec.missing.deeper", []),
        ('.status.conditions[?(@.type=="Ready")].status', ["False"]),
        (".status.conditions[?(@.type=='Created')].status", ["True"]),
        ('.status.conditions[?(@.type!="Ready")].type', ["Created"]),
        (".status.conditions[?(@.count>2)].type", ["Ready"]),
        (".status.conditions[?(@.count)].type", ["Created", "Ready"]),
        (".metadata.labels['app.kubernetes.io/name']", ["train"]),
        ('.metadata.labels["app.kubernetes.io/name"]', ["train"]),
        (".metadata.*", ["j", {"app.kubernetes.io/name": "train"}]),
        # Slices, as Python's: Kubeflow Trainer's State column is the newest condition's type.
        (".status.conditions[-1:].type", ["Ready"]),
        (".status.conditions[0:1].type", ["Created"]),
        (".status.conditions[:].type", ["Created", "Ready"]),
        (".status.conditions[::-1].type", ["Ready", "Created"]),
        (".spec.replicas[-1:]", []),
    ],
)
def test_find(path: str, expected: list[object]) -> None:
    assert find(path, DOC) == expected


@pytest.mark.parametrize(
    "path", ["", ".", ".spec[", ".spec[?(@.a==)]", "spec..x", ".a[abc]", ".a[::0]"])
def test_invalid_paths_are_rejected(path: str) -> None:
    with pytest.raises(ValueError):
        parse(path)


def test_scalars_and_wrong_shapes_match_nothing() -> None:
    assert find(".spec.replicas.x", DOC) == []
    assert find(".spec[0]", DOC) == []
    assert find(".spec.replicas[?(@.a)]", DOC) == []
