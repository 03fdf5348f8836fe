"""The generated CRD schemas, applied as the API server applies them, judge like the models.

Uses the embedded API server's schema engine (prune, default, validate, CEL), so a
manifest the models reject is rejected by `kubectl apply` too, where a schema can
say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from engine.cluster.apiserver.schema.schema_validation import CompiledSchema, check_crd_schema
from tests.unit.api.cases import INVALID, Invalid, changed, example
from tests.unit.api.conftest import schema_of

REPO = Path(__file__).parents[3]
MACHINES = sorted((REPO / "machines").glob("*.yaml"))
UPSTREAM = sorted((REPO / "examples" / "kubeflow" / "upstream").rglob("*.yaml"))


@pytest.fixture(scope="module")
def compiled(crds: dict[str, dict[str, Any]]) -> dict[str, CompiledSchema]:
    return {kind: CompiledSchema(schema_of(crd)) for kind, crd in crds.items()}


@pytest.mark.parametrize("kind", ["StateMachine", "MachineJob", "PyTorchJob", "TFJob",
                                  "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"])
def test_the_api_server_takes_the_schema(crds: dict[str, dict[str, Any]], kind: str) -> None:
    assert check_crd_schema(schema_of(crds[kind]), "openAPIV3Schema") == []


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "MachineJob"])
def test_examples_are_accepted_whole(compiled: dict[str, CompiledSchema], kind: str) -> None:
    result = compiled[kind].apply(example(kind))

    assert result.causes == []
    assert result.pruned == []


@pytest.mark.parametrize("path", UPSTREAM, ids=lambda p: p.name)
def test_kubeflows_own_examples_are_accepted(
    compiled: dict[str, CompiledSchema], path: Path
) -> None:
    document = YAML(typ="safe", pure=True).load(path.read_text())
    result = compiled[document["kind"]].apply(document)

    assert result.causes == []


def test_defaults_are_filled_in(compiled: dict[str, CompiledSchema]) -> None:
    doc = changed(
        example("PyTorchJob"),
        "spec.pytorchReplicaSpecs.Worker",
        {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}},
    )
    doc = changed(doc, "spec.runPolicy", {"backoffLimit": 3})

    result = compiled["PyTorchJob"].apply(doc)

    assert result.causes == []
    assert result.obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1
    assert result.obj["spec"]["runPolicy"] == {"backoffLimit": 3, "suspend": False}


def test_a_null_optional_field_reads_as_unset(compiled: dict[str, CompiledSchema]) -> None:
    doc = changed(
        example("MachineJob"),
        "spec.failureRules",
        [{"action": "FailJob", "onReasons": ["Evicted"], "onExitCodes": None}],
    )

    result = compiled["MachineJob"].apply(doc)

    assert result.causes == []
    assert "onExitCodes" not in result.obj["spec"]["failureRules"][0]


def test_the_engines_status_fields_are_kept(compiled: dict[str, CompiledSchema]) -> None:
    status = {"phase": "Running", "restarts": 1, "history": [{"to": "Running"}], "attempt": 1}

    result = compiled["TFJob"].apply(changed(example("TFJob"), "status", status))

    assert result.causes == []
    assert result.obj["status"] == status


def test_managed_by_cannot_change(compiled: dict[str, CompiledSchema]) -> None:
    old = changed(example("MachineJob"), "spec.runPolicy.managedBy", "kueue.x-k8s.io/multikueue")

    result = compiled["MachineJob"].apply(example("MachineJob"), old=old)

    assert [c.field for c in result.causes] == ["spec.runPolicy.managedBy"]
    assert "immutable" in result.causes[0].message


@pytest.mark.parametrize("case", [c for c in INVALID if c.server_too], ids=lambda c: c.id)
def test_invalid_manifests_are_rejected(compiled: dict[str, CompiledSchema], case: Invalid) -> None:
    causes = compiled[case.kind].apply(case.document()).causes

    assert causes
    assert any(case.message in f"{c.field}: {c.message}" for c in causes), causes


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_machine_files_apply_as_state_machines(
    compiled: dict[str, CompiledSchema], path: Path
) -> None:
    for document in YAML(typ="safe", pure=True).load_all(path.read_text()):
        result = compiled["StateMachine"].apply(document)

        assert result.causes == []
        assert result.pruned == []
