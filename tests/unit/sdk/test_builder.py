"""`JobBuilder`: a job of any kind, laid out by its machine's `governs` and `pod` blocks.

No kind is written in the builder, so each test names a kind and checks the fields its
machine says: the replica-spec field, the container name, the replica types allowed.
"""

from __future__ import annotations

import pytest

from engine.definition import load_definitions
from engine.sdk import InvalidJobError, JobBuilder, UnknownKindError
from engine.sdk.machines import shipped_definitions
from tests.kinds import MACHINES, REPO

CUSTOM_KIND = REPO / "examples" / "custom-kind"


def pytorch() -> JobBuilder:
    return (JobBuilder(kind="PyTorchJob", name="mnist")
            .replica("Master", 1, image="pytorch:2.3", command=["python3", "train.py"],
                     restart_policy="ExitCode")
            .replica("Worker", 2, image="pytorch:2.3", env={"EPOCHS": "3"}))


def test_a_pytorchjob_keeps_its_replicas_where_its_machine_says() -> None:
    job = pytorch().run_policy(backoff_limit=3, clean_pod_policy="All").build()

    assert job["apiVersion"] == "kubeflow.org/v1"
    assert job["kind"] == "PyTorchJob"
    assert job["metadata"] == {"name": "mnist"}
    assert job["spec"]["runPolicy"] == {"backoffLimit": 3, "cleanPodPolicy": "All"}
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]
    assert master == {
        "replicas": 1,
        "restartPolicy": "ExitCode",
        "template": {"spec": {"containers": [
            {"name": "pytorch", "image": "pytorch:2.3", "command": ["python3", "train.py"]},
        ]}},
    }
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    assert "restartPolicy" not in worker
    assert worker["template"]["spec"]["containers"][0]["env"] == [
        {"name": "EPOCHS", "value": "3"}]


@pytest.mark.parametrize(("kind", "field", "replica_type", "container"), [
    ("TFJob", "tfReplicaSpecs", "Chief", "tensorflow"),
    ("XGBoostJob", "xgbReplicaSpecs", "Master", "xgboost"),
    ("PaddleJob", "paddleReplicaSpecs", "Master", "paddle"),
    ("JAXJob", "jaxReplicaSpecs", "Worker", "jax"),
    ("MachineJob", "replicaSpecs", "Trainer", "main"),
])
def test_each_shipped_kind_is_laid_out_by_its_machine(
        kind: str, field: str, replica_type: str, container: str) -> None:
    job = JobBuilder(kind=kind, name="j").replica(replica_type, 1, image="img").build()

    containers = job["spec"][field][replica_type]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == [container]


def test_a_kind_added_at_run_time_is_laid_out_by_the_definition_given() -> None:
    [sharded] = load_definitions([MACHINES / "kubeflow.yaml",
                                  CUSTOM_KIND / "shardedjob-machine.yaml"])

    job = (JobBuilder(kind="ShardedJob", name="word-count", definition=sharded)
           .replica("Shard", 3, image="python:3.12-slim")
           .set_field("spec.input", "s3://example/books/")
           .build())

    assert job["apiVersion"] == "batch.example.com/v1"
    assert job["spec"]["input"] == "s3://example/books/"
    assert job["spec"]["shards"]["Shard"]["template"]["spec"]["containers"][0]["name"] == "main"


def test_a_kind_with_a_list_of_named_specs_gets_them_as_a_list_in_the_order_added() -> None:
    listed_machine = REPO / "tests" / "unit" / "modelcheck" / "machines" / "listed.yaml"
    [listed] = load_definitions([MACHINES / "kubeflow.yaml", listed_machine])

    job = (JobBuilder(kind="TaskJob", name="ordered", definition=listed)
           .replica("driver", 1, image="img").replica("workers", 4, image="img").build())

    assert [(t["name"], t["replicas"]) for t in job["spec"]["tasks"]] == [
        ("driver", 1), ("workers", 4)]


def test_a_replica_type_the_kind_does_not_have_is_refused_at_once() -> None:
    with pytest.raises(InvalidJobError, match="PyTorchJob has no replica type 'Chief'; it has "
                                              "Master, Worker"):
        JobBuilder(kind="PyTorchJob", name="mnist").replica("Chief", 1, image="img")


def test_build_reports_what_the_engine_would_refuse_with_its_field() -> None:
    with pytest.raises(InvalidJobError, match=r"metadata\.name must be a DNS-1035 label"):
        JobBuilder(kind="PyTorchJob", name="Not_A_Name").replica("Worker", 1, image="i").build()
    with pytest.raises(InvalidJobError, match=r"spec\.pytorchReplicaSpecs: must be a map"):
        JobBuilder(kind="PyTorchJob", name="empty").build()


def test_a_run_policy_field_of_the_wrong_value_is_named_with_its_path() -> None:
    with pytest.raises(InvalidJobError, match=r"^spec\.runPolicy\.backoff_limit: Input should be "
                                              r"greater than or equal to 0$"):
        pytorch().run_policy(backoff_limit=-1)
    with pytest.raises(InvalidJobError, match=r"spec\.runPolicy\.retries: Extra inputs"):
        pytorch().run_policy(retries=3)


def test_run_policy_calls_add_up_and_a_later_value_wins() -> None:
    job = pytorch().run_policy(backoff_limit=3).run_policy(backoff_limit=5, suspend=True).build()

    assert job["spec"]["runPolicy"] == {"backoffLimit": 5, "suspend": True}


def test_each_call_returns_a_new_builder_so_a_half_built_job_can_be_shared() -> None:
    base = JobBuilder(kind="PyTorchJob", name="shared").replica("Master", 1, image="i")

    one = base.replica("Worker", 1, image="i").build()
    four = base.replica("Worker", 4, image="i").build()

    assert one["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1
    assert four["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4
    assert set(base.build()["spec"]["pytorchReplicaSpecs"]) == {"Master"}


def test_pod_annotations_and_namespace_go_where_the_api_wants_them() -> None:
    job = (JobBuilder(kind="MachineJob", name="j", namespace="team")
           .replica("Main", 1, image="i", annotations={"a": "b"}).build())

    assert job["metadata"] == {"name": "j", "namespace": "team"}
    assert job["spec"]["replicaSpecs"]["Main"]["template"]["metadata"] == {
        "annotations": {"a": "b"}}


def test_a_kind_no_shipped_machine_governs_needs_its_definition() -> None:
    with pytest.raises(UnknownKindError, match="no machine in machines/ governs the kind "
                                               "'ShardedJob'") as raised:
        JobBuilder(kind="ShardedJob", name="j")
    assert "PyTorchJob" in raised.value.known


def test_a_definition_of_another_kind_is_refused() -> None:
    tfjob = shipped_definitions()["TFJob"]

    with pytest.raises(InvalidJobError, match="machine tfjob governs TFJob, not PyTorchJob"):
        JobBuilder(kind="PyTorchJob", name="j", definition=tfjob)
