"""The generated CRDs: structural schemas, names, scope, subresources and columns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.api.conftest import schema_of

JOB_KINDS = ["MachineJob", "PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"]
KINDS = ["StateMachine", *JOB_KINDS, "JobSet"]


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node that describes data, with its path."""
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}.*")


def untyped_allowed(node: dict[str, Any]) -> bool:
    return bool(
        node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
    )


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_structural(crds: dict[str, dict[str, Any]], kind: str) -> None:
    for path, node in nodes(schema_of(crds[kind])):
        assert "$ref" not in node and "$defs" not in node, path
        assert "type" in node or untyped_allowed(node), path
        assert not ({"anyOf", "oneOf", "allOf", "not"} & set(node)), path
        assert "const" not in node and "title" not in node, path
        assert node.get("additionalProperties") is not False, path
        assert not ("properties" in node and "additionalProperties" in node), path
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, path


@pytest.mark.parametrize("kind", [*JOB_KINDS, "JobSet"])
def test_every_job_field_is_described(crds: dict[str, dict[str, Any]], kind: str) -> None:
    fields = [(p, n) for p, n in nodes(schema_of(crds[kind])) if p and not p.endswith(("[]", "*"))]

    undescribed = [p for p, n in fields if "description" not in n]

    assert undescribed == [".metadata"]


NAMES = [
    ("StateMachine", "statemachines.jobmachine.dev", "statemachines", ["sm"], "Cluster"),
    ("MachineJob", "machinejobs.jobmachine.dev", "machinejobs", ["mjob"], "Namespaced"),
    ("PyTorchJob", "pytorchjobs.kubeflow.org", "pytorchjobs", None, "Namespaced"),
    ("TFJob", "tfjobs.kubeflow.org", "tfjobs", None, "Namespaced"),
    ("XGBoostJob", "xgboostjobs.kubeflow.org", "xgboostjobs", None, "Namespaced"),
    ("PaddleJob", "paddlejobs.kubeflow.org", "paddlejobs", None, "Namespaced"),
    ("JAXJob", "jaxjobs.kubeflow.org", "jaxjobs", None, "Namespaced"),
    ("MPIJob", "mpijobs.kubeflow.org", "mpijobs", None, "Namespaced"),
]


@pytest.mark.parametrize("names", NAMES, ids=lambda n: n[0])
def test_names_and_scope(
    crds: dict[str, dict[str, Any]], names: tuple[str, str, str, list[str] | None, str]
) -> None:
    kind, name, plural, short, scope = names
    crd = crds[kind]

    assert crd["metadata"]["name"] == name
    assert crd["spec"]["names"]["plural"] == plural
    assert crd["spec"]["names"].get("shortNames") == short
    assert crd["spec"]["names"]["listKind"] == f"{kind}List"
    assert crd["spec"]["scope"] == scope


@pytest.mark.parametrize(
    ("kind", "version"),
    [
        ("StateMachine", "v1alpha1"),
        ("MachineJob", "v1alpha1"),
        ("PyTorchJob", "v1"),
        ("TFJob", "v1"),
        ("XGBoostJob", "v1"),
        ("PaddleJob", "v1"),
        ("JAXJob", "v1"),
        ("MPIJob", "v1"),
    ],
)
def test_one_served_stored_version_with_status(
    crds: dict[str, dict[str, Any]], kind: str, version: str
) -> None:
    (entry,) = crds[kind]["spec"]["versions"]

    assert (entry["name"], entry["served"], entry["storage"]) == (version, True, True)
    assert entry["subresources"]["status"] == {}


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_job_printer_columns(crds: dict[str, dict[str, Any]], kind: str) -> None:
    columns = crds[kind]["spec"]["versions"][0]["additionalPrinterColumns"]

    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns] == [
        ("State", "string", ".status.phase"),
        ("Restarts", "integer", ".status.restarts"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]


def test_state_machine_printer_columns(crds: dict[str, dict[str, Any]]) -> None:
    columns = crds["StateMachine"]["spec"]["versions"][0]["additionalPrinterColumns"]

    assert [(c["name"], c["jsonPath"]) for c in columns] == [
        ("Governs", ".spec.governs.kind"),
        ("Accepted", '.status.conditions[?(@.type=="Accepted")].status'),
        ("Revision", ".status.currentRevision"),
        ("Age", ".metadata.creationTimestamp"),
    ]


@pytest.mark.parametrize(("kind", "scaled"), [("PyTorchJob", True), ("PaddleJob", True),
                                             ("JAXJob", True), ("XGBoostJob", False),
                                             ("MPIJob", False), ("TFJob", False)])
def test_kinds_scale_their_workers_as_kubeflow_does(
    crds: dict[str, dict[str, Any]], kind: str, scaled: bool
) -> None:
    subresources = crds[kind]["spec"]["versions"][0]["subresources"]
    assert ("scale" in subresources) == scaled


def test_pytorchjob_scales_its_workers_as_kubeflow_does(crds: dict[str, dict[str, Any]]) -> None:
    scale = crds["PyTorchJob"]["spec"]["versions"][0]["subresources"]["scale"]

    assert scale == {
        "specReplicasPath": ".spec.pytorchReplicaSpecs.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }


@pytest.mark.parametrize(
    ("kind", "specs"),
    [
        ("MachineJob", "replicaSpecs"),
        ("PyTorchJob", "pytorchReplicaSpecs"),
        ("TFJob", "tfReplicaSpecs"),
    ],
)
def test_replica_specs_keep_kubeflows_shape(
    crds: dict[str, dict[str, Any]], kind: str, specs: str
) -> None:
    replica = schema_of(crds[kind])["properties"]["spec"]["properties"][specs][
        "additionalProperties"
    ]
    template = replica["properties"]["template"]

    pools = kind == "MachineJob"
    extensions = {"dependsOn", "completions", "parallelism", "completionMode"} if pools else set()
    assert set(replica["properties"]) == {"replicas", "template", "restartPolicy", *extensions}
    assert replica["properties"]["replicas"]["minimum"] == 0
    # A pool kind leaves replicas without a default: it would clash with completions.
    assert replica["properties"]["replicas"].get("default") == (None if pools else 1)
    assert replica["properties"]["restartPolicy"]["enum"] == [
        "Always",
        "OnFailure",
        "Never",
        "ExitCode",
    ]
    assert template["type"] == "object"
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    assert template["x-kubernetes-embedded-resource"] is False


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_run_policy_has_kubeflows_fields(crds: dict[str, dict[str, Any]], kind: str) -> None:
    run_policy = schema_of(crds[kind])["properties"]["spec"]["properties"]["runPolicy"]

    assert set(run_policy["properties"]) == {
        "cleanPodPolicy",
        "ttlSecondsAfterFinished",
        "activeDeadlineSeconds",
        "backoffLimit",
        "schedulingPolicy",
        "suspend",
        "managedBy",
        # jobmachine's extensions: a replica Pending longer than this fails the job; a
        # failed replica's pod waits the engine's back-off before it is created again.
        "pendingTimeoutSeconds",
        "recreationBackoff",
    }
    assert set(run_policy["properties"]["schedulingPolicy"]["properties"]) == {
        "minAvailable",
        "queue",
        "minResources",
        "priorityClass",
        "scheduleTimeoutSeconds",
    }


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_status_has_kubeflows_fields_and_keeps_the_engines(
    crds: dict[str, dict[str, Any]], kind: str
) -> None:
    status = schema_of(crds[kind])["properties"]["status"]

    assert status["x-kubernetes-preserve-unknown-fields"] is True
    assert {
        "conditions",
        "replicaStatuses",
        "startTime",
        "completionTime",
        "lastReconcileTime",
    } <= set(status["properties"])
    assert set(status["properties"]["conditions"]["items"]["properties"]) == {
        "type",
        "status",
        "reason",
        "message",
        "lastUpdateTime",
        "lastTransitionTime",
    }
    assert set(status["properties"]["replicaStatuses"]["additionalProperties"]["properties"]) == {
        "active",
        "succeeded",
        "failed",
        "labelSelector",
        "selector",
        "unfinished",  # the engine's: replicas that stopped short at the job's end
    }
    unfinished = status["properties"]["replicaStatuses"]["additionalProperties"]["properties"][
        "unfinished"]
    assert unfinished["additionalProperties"] == {"type": "string"}  # else pruned by the server


def test_pytorch_and_tf_specs_have_kubeflows_fields(crds: dict[str, dict[str, Any]]) -> None:
    pytorch = schema_of(crds["PyTorchJob"])["properties"]["spec"]
    tf = schema_of(crds["TFJob"])["properties"]["spec"]

    assert set(pytorch["properties"]) == {
        "pytorchReplicaSpecs",
        "runPolicy",
        "elasticPolicy",
        "nprocPerNode",
        "failureRules",  # jobmachine's extension, beside Kubeflow's fields
    }
    assert set(pytorch["properties"]["elasticPolicy"]["properties"]) == {
        "minReplicas",
        "maxReplicas",
        "rdzvBackend",
        "rdzvPort",
        "rdzvHost",
        "rdzvId",
        "rdzvConf",
        "standalone",
        "nProcPerNode",
        "maxRestarts",
        "metrics",
    }
    assert set(tf["properties"]) == {
        "tfReplicaSpecs",
        "runPolicy",
        "successPolicy",
        "enableDynamicWorker",
        "failureRules",  # jobmachine's extension
    }
    assert pytorch["required"] == ["pytorchReplicaSpecs"]
    assert tf["required"] == ["tfReplicaSpecs"]
