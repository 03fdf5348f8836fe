"""The pods and headless services the engine creates, and the names and labels they carry.

Field notes, stories 1 and 9: the pod labels, the service selector and the claim
selector come from one place; every pod carries our controller reference and
the tracking finalizer; the machine's env reaches the main container only.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    JOB_UID_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    RESTART_ATTEMPT_LABEL,
    TRACKING_FINALIZER,
    ReplicaId,
    attempt_of,
    child_labels,
    child_name,
    controller_uid,
    owner_reference,
    replica_of,
    replica_selector,
)
from engine.controller.reconcile.jobspec import ReplicaTypeSpec, read_job_spec
from engine.controller.reconcile.manifests import (
    build_pod,
    build_service,
    cluster_spec,
    main_container_name,
)
from engine.controller.reconcile.observe import MISSING
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import (
    common_variables,
    replica_summary,
    replica_variables,
)
from engine.definition import (
    CompiledDefinition,
    PodDecorations,
    load_definitions,
    render_pod_decorations,
)
from engine.definition.cel import CelEvaluationError
from engine.definition.rendering import render_restart_policy
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, pytorch_job, tf_job, worker

PYTORCH = DEFINITIONS["PyTorchJob"]
TFJOB = DEFINITIONS["TFJob"]
NO_DECORATIONS = PodDecorations({}, {}, {})
OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "mnist",
    "uid": "uid-mnist",
    "controller": True,
    "blockOwnerDeletion": True,
}


@pytest.fixture(scope="module")
def custom(tmp_path_factory: pytest.TempPathFactory) -> CompiledDefinition:
    """machines/job.yaml with a pod restartPolicy, decorations and a Launcher-only service."""
    text = (MACHINES / "job.yaml").read_text()
    text = text.replace(
        "    restartPolicy: \"policy in ['OnFailure', 'Always'] ? policy : 'Never'\"\n    env:\n",
        "    restartPolicy: OnFailure\n"
        "    labels: {team: \"'ml'\"}\n"
        "    annotations: {example.com/type: 'replica.type'}\n"
        "    env:\n",
    )
    text = text.replace(
        '    - replicaTypes: ["*"]',
        "    - replicaTypes: [Launcher]\n      ports: [{name: ssh, port: 2222}]",
    )
    assert "restartPolicy: OnFailure" in text and "Launcher" in text
    path = tmp_path_factory.mktemp("machines") / "custom.yaml"
    path.write_text(text)
    (compiled,) = load_definitions([path])
    return compiled


def replica_type(
    name: str = "Worker",
    *,
    containers: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    template_policy: str | None = None,
) -> ReplicaTypeSpec:
    spec: dict[str, Any] = {
        "containers": containers or [{"name": "pytorch", "image": "example/train:1"}]
    }
    if template_policy is not None:
        spec["restartPolicy"] = template_policy
    template = {"metadata": metadata or {}, "spec": spec}
    return ReplicaTypeSpec(name, 2, template, "OnFailure", template_policy)


# Pods ----------------------------------------------------------------------------------------


def test_a_pod_is_named_labelled_owned_and_tracked() -> None:
    job = pytorch_job()
    pod = build_pod(job, PYTORCH, replica_type(), worker(1), NO_DECORATIONS)
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    metadata = pod["metadata"]
    assert (metadata["name"], metadata["namespace"]) == ("mnist-worker-1", "team")
    assert metadata["labels"] == {
        JOB_NAME_LABEL: "mnist",
        JOB_UID_LABEL: "uid-mnist",
        REPLICA_TYPE_LABEL: "Worker",
        REPLICA_INDEX_LABEL: "1",
        RESTART_ATTEMPT_LABEL: "0",
    }
    assert metadata["ownerReferences"] == [OWNER]
    assert metadata["finalizers"] == [TRACKING_FINALIZER]


def test_a_pod_is_labelled_with_the_jobs_restart_attempt() -> None:
    pod = build_pod(pytorch_job(), PYTORCH, replica_type(), worker(1), NO_DECORATIONS,
                    attempt=3)
    assert pod["metadata"]["labels"][RESTART_ATTEMPT_LABEL] == "3"
    assert attempt_of(pod) == 3


@pytest.mark.parametrize(
    ("labels", "attempt"),
    [({}, 0), ({RESTART_ATTEMPT_LABEL: "0"}, 0), ({RESTART_ATTEMPT_LABEL: "12"}, 12),
     ({RESTART_ATTEMPT_LABEL: "x"}, -1), ({RESTART_ATTEMPT_LABEL: "-1"}, -1)],
    ids=["unlabelled", "zero", "twelve", "garbage", "negative"],
)
def test_the_attempt_of_a_pod_comes_from_its_label(labels: dict[str, str], attempt: int) -> None:
    assert attempt_of({"metadata": {"labels": labels}}) == attempt


def test_template_labels_and_annotations_are_kept_but_ours_win() -> None:
    template_metadata = {
        "labels": {"app": "mnist", JOB_NAME_LABEL: "spoofed", "team": "template"},
        "annotations": {"sidecar.istio.io/inject": "false", "note": "template"},
    }
    decorations = PodDecorations({}, {"team": "machine"}, {"note": "machine"})
    pod = build_pod(pytorch_job(), PYTORCH, replica_type(metadata=template_metadata),
                    worker(0), decorations)
    labels = pod["metadata"]["labels"]
    assert labels["app"] == "mnist"
    assert labels["team"] == "machine"
    assert labels[JOB_NAME_LABEL] == "mnist"
    assert pod["metadata"]["annotations"] == {
        "sidecar.istio.io/inject": "false", "note": "machine"
    }


@pytest.mark.parametrize(("policy", "pod_policy"), [
    ("OnFailure", "OnFailure"), ("Always", "Always"), ("ExitCode", "Never"), ("Never", "Never"),
])
def test_the_shipped_machines_let_the_kubelet_restart_on_failure_and_always_pods(
    policy: str, pod_policy: str
) -> None:
    assert render_restart_policy(PYTORCH, {"policy": policy}) == pod_policy


def test_a_restart_policy_written_out_is_used_as_it_is(custom: CompiledDefinition) -> None:
    assert render_restart_policy(custom, {"policy": "Never"}) == "OnFailure"


def test_the_pod_gets_the_machines_restart_policy_not_its_templates() -> None:
    decorations = PodDecorations({}, {}, {}, restart_policy="OnFailure")
    pod = build_pod(pytorch_job(), PYTORCH, replica_type(template_policy="Never"), worker(0),
                    decorations)
    assert pod["spec"]["restartPolicy"] == "OnFailure"


def test_env_goes_to_the_main_container_only_and_the_machines_values_win() -> None:
    containers: list[dict[str, Any]] = [
        {"name": "istio-proxy", "image": "proxy", "env": [{"name": "RANK", "value": "side"}]},
        {"name": "pytorch", "image": "train", "env": [
            {"name": "DATA", "value": "/data"},
            {"name": "RANK", "value": "99"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ]},
    ]
    decorations = PodDecorations({"RANK": "2", "WORLD_SIZE": "3"}, {}, {})
    kind = replica_type(containers=containers)
    pod = build_pod(pytorch_job(), PYTORCH, kind, worker(1), decorations)
    sidecar, main = pod["spec"]["containers"]
    assert sidecar["env"] == [{"name": "RANK", "value": "side"}]
    assert main["env"] == [
        {"name": "DATA", "value": "/data"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RANK", "value": "2"},
        {"name": "WORLD_SIZE", "value": "3"},
    ]
    assert kind.template["spec"]["containers"] == containers


def test_a_definition_without_a_main_container_decorates_the_first(
    custom: CompiledDefinition,
) -> None:
    containers = [{"name": "trainer", "image": "t"}, {"name": "sidecar", "image": "s"}]
    pod = build_pod(pytorch_job(), custom, replica_type(containers=containers), worker(0),
                    PodDecorations({"JOB_NAME": "mnist"}, {}, {}))
    assert [c.get("env") for c in pod["spec"]["containers"]] == [
        [{"name": "JOB_NAME", "value": "mnist"}], None
    ]


def test_building_a_pod_leaves_the_template_alone() -> None:
    kind = replica_type(metadata={"labels": {"app": "x"}}, template_policy="Always")
    before = copy.deepcopy(dict(kind.template))
    build_pod(pytorch_job(), PYTORCH, kind, worker(0), PodDecorations({"A": "1"}, {"b": "2"}, {}))
    assert kind.template == before


def test_the_pytorch_machines_env_reaches_the_pytorch_container() -> None:
    job = pytorch_job(workers=2)
    spec = read_job_spec(job, PYTORCH)
    record = MachineRecord()
    common = common_variables(job, spec, record,
                              replica_summary(spec, record, {}, PYTORCH.replica))
    variables = replica_variables(common, worker(1), desired=2, policy="OnFailure",
                                  record=record, facts=MISSING)
    decorations = render_pod_decorations(PYTORCH, variables)
    kind = spec.replica_type("Worker")
    assert kind is not None
    pod = build_pod(job, PYTORCH, kind, worker(1), decorations)
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "mnist-master-0"
    assert env["MASTER_PORT"] == "23456"
    assert (env["WORLD_SIZE"], env["RANK"]) == ("3", "2")


@pytest.mark.parametrize(
    ("replicas", "master"),
    [({"Chief": 1, "Worker": 2}, "Chief-0"), ({"Master": 1, "Worker": 2}, "Master-0"),
     ({"Worker": 2, "PS": 1}, "Worker-0")],
    ids=["chief", "master", "workers-only"],
)
def test_a_tfjobs_master_role_is_kubeflows(replicas: dict[str, int], master: str) -> None:
    """As Kubeflow's IsMasterRole: the Chief or Master, else Worker-0 (the v1 SDK reads a
    TFJob's logs from the pod labelled job-role=master)."""
    job = tf_job(replicas=replicas)
    spec = read_job_spec(job, TFJOB)
    record = MachineRecord()
    common = common_variables(job, spec, record,
                              replica_summary(spec, record, {}, TFJOB.replica))
    roles = {}
    for replica_type, count in replicas.items():
        for index in range(count):
            replica = ReplicaId(replica_type, index)
            variables = replica_variables(common, replica, desired=count, policy="OnFailure",
                                          record=record, facts=MISSING)
            role = TFJOB.pod_labels["training.kubeflow.org/job-role"]
            roles[str(replica)] = role.evaluate(variables)
    assert {r for r, role in roles.items() if role == "master"} == {master}


def test_main_container_name() -> None:
    assert main_container_name(PYTORCH, {}) == "pytorch"
    assert main_container_name(TFJOB, {}) == "tensorflow"


def test_main_container_name_defaults_to_the_first(custom: CompiledDefinition) -> None:
    template = {"spec": {"containers": [{"name": "trainer"}, {"name": "sidecar"}]}}
    assert main_container_name(custom, template) == "trainer"
    assert main_container_name(custom, {"spec": {}}) is None


# Services ------------------------------------------------------------------------------------


def test_a_service_is_headless_owned_and_selects_exactly_its_replicas_pod() -> None:
    job = pytorch_job()
    service = build_service(job, PYTORCH, replica_type(), worker(1))
    assert service is not None
    assert service["kind"] == "Service"
    assert service["metadata"]["name"] == "mnist-worker-1"
    assert service["metadata"]["labels"] == child_labels(job, worker(1))
    assert service["metadata"]["ownerReferences"] == [OWNER]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == replica_selector("mnist", worker(1))
    assert service["spec"]["ports"] == [
        {"name": "pytorchjob-port", "port": 23456, "targetPort": 23456, "protocol": "TCP"}
    ]
    pod = build_pod(job, PYTORCH, replica_type(), worker(1), NO_DECORATIONS)
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    other = build_pod(job, PYTORCH, replica_type(), worker(0), NO_DECORATIONS)
    assert not service["spec"]["selector"].items() <= other["metadata"]["labels"].items()


def test_a_named_container_port_on_the_main_container_is_used() -> None:
    containers = [
        {"name": "sidecar", "image": "s", "ports": [{"name": "pytorchjob-port",
                                                     "containerPort": 1111}]},
        {"name": "pytorch", "image": "t", "ports": [{"name": "pytorchjob-port",
                                                     "containerPort": 29500}]},
    ]
    service = build_service(pytorch_job(), PYTORCH, replica_type(containers=containers),
                            worker(0))
    assert service is not None
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (29500, 29500)


def test_types_the_definition_gives_no_service_get_none(custom: CompiledDefinition) -> None:
    assert build_service(pytorch_job(), custom, replica_type(), worker(0)) is None
    launcher = build_service(pytorch_job(), custom, replica_type("Launcher"),
                             ReplicaId("Launcher", 0))
    assert launcher is not None
    assert launcher["spec"]["ports"][0]["port"] == 2222


def test_cluster_spec_lists_every_replicas_service_address_for_tf_config() -> None:
    job = tf_job(replicas={"PS": 2, "Worker": 3})
    workers = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    workers[0]["ports"] = [{"name": "tfjob-port", "containerPort": 2223}]
    spec = read_job_spec(job, TFJOB)
    assert cluster_spec(job, TFJOB, spec.replica_types) == {
        "ps": ["dist-mnist-ps-0.team.svc:2222", "dist-mnist-ps-1.team.svc:2222"],
        "worker": [
            "dist-mnist-worker-0.team.svc:2223",
            "dist-mnist-worker-1.team.svc:2223",
            "dist-mnist-worker-2.team.svc:2223",
        ],
    }


# Names, labels and owners --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job_name", "replica", "name"),
    [
        ("mnist", ReplicaId("Master", 0), "mnist-master-0"),
        ("mnist", ReplicaId("Worker", 12), "mnist-worker-12"),
        ("dist", ReplicaId("PS", 1), "dist-ps-1"),
    ],
)
def test_child_name_is_kubeflows(job_name: str, replica: ReplicaId, name: str) -> None:
    assert child_name(job_name, replica) == name


def test_replica_of_reads_the_labels_child_labels_write() -> None:
    labels = child_labels(pytorch_job(), worker(7))
    assert replica_of({"metadata": {"labels": labels}}) == worker(7)


@pytest.mark.parametrize(
    "labels",
    [
        None,
        {},
        {REPLICA_TYPE_LABEL: "Worker"},
        {REPLICA_INDEX_LABEL: "0"},
        {REPLICA_TYPE_LABEL: "", REPLICA_INDEX_LABEL: "0"},
        {REPLICA_TYPE_LABEL: "Worker", REPLICA_INDEX_LABEL: "-1"},
        {REPLICA_TYPE_LABEL: "Worker", REPLICA_INDEX_LABEL: "one"},
    ],
)
def test_replica_of_is_none_when_the_labels_do_not_say(labels: dict[str, str] | None) -> None:
    assert replica_of({"metadata": {"labels": labels}}) is None


def test_owner_reference_is_a_blocking_controller_reference() -> None:
    assert owner_reference(pytorch_job()) == OWNER


@pytest.mark.parametrize(
    ("references", "uid"),
    [
        (None, None),
        ([], None),
        ([{"uid": "a", "controller": False}, {"uid": "b"}], None),
        ([{"uid": "a"}, {"uid": "b", "controller": True}], "b"),
        ([{"uid": "", "controller": True}], None),
    ],
)
def test_controller_uid_is_the_controller_references_uid(
    references: list[dict[str, Any]] | None, uid: str | None
) -> None:
    assert controller_uid({"metadata": {"ownerReferences": references}}) == uid
    assert controller_uid({"metadata": {}}) is None


def test_a_restart_policy_expression_giving_another_value_is_a_clear_error(
    tmp_path: Path,
) -> None:
    text = (MACHINES / "job.yaml").read_text().replace(
        "restartPolicy: \"policy in ['OnFailure', 'Always'] ? policy : 'Never'\"",
        "restartPolicy: \"policy == 'Always' ? 'Sometimes' : 'Never'\"",
    )
    path = tmp_path / "job.yaml"
    path.write_text(text)
    (compiled,) = load_definitions([path])
    assert render_restart_policy(compiled, {"policy": "Never"}) == "Never"
    with pytest.raises(CelEvaluationError, match=r"pod\.restartPolicy gave 'Sometimes', not one "
                                                 r"of Never, OnFailure, Always"):
        render_restart_policy(compiled, {"policy": "Always"})
