"""What a TrainJob's JobSet and PodGroup are made of (machines/trainjob.yaml), one runtime
feature per test, as Trainer v2.3 builds them: the runtime patches (strategic merge patches
over the runtime's JobSet spec, in turn), the initializers (STORAGE_URI, env, secretRef on
the runtime's initializer jobs) and podGroupPolicy (coscheduling, Volcano); then what its
webhook refuses that needs the runtime, in its words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.controller.reconcile.decide import decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import Surroundings
from engine.definition import render_child_decorations
from engine.definition.rendering import render_objects
from engine.definition.vocabulary import job_value
from tests.kinds import shipped_definitions

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def rjob(name: str, ancestor: str | None, containers: list[dict[str, Any]],
         **more: Any) -> dict[str, Any]:
    labels = {ANCESTOR: ancestor} if ancestor else {}
    return {"name": name, **more, "template": {"metadata": {"labels": labels}, "spec": {
        "template": {"spec": {"containers": containers}}}}}


INITIALIZER = rjob("dataset-initializer", "dataset-initializer", [{
    "name": "dataset-initializer", "image": "di",
    "env": [{"name": "STORAGE_URI", "value": "hf://runtime"}, {"name": "KEEP", "value": "k"}],
    "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}]}])
NODE = rjob("node", "trainer", [
    {"name": "node", "image": "n"},
    {"name": "side", "image": "s", "env": [{"name": "A", "value": "1"}]}],
    dependsOn=[{"name": "dataset-initializer", "status": "Complete"}])


def runtime(*jobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "rt"},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, **spec, "template": {
                "metadata": {"labels": {"team": "runtime", "kept": "yes"}},
                "spec": {"replicatedJobs": list(jobs)}}}}


def trainjob(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "ml", "uid": "u"},
            "spec": {"runtimeRef": {"name": "rt", "apiGroup": "trainer.kubeflow.org",
                                    "kind": "ClusterTrainingRuntime"},
                     "trainer": {"numNodes": 2}, **spec}}


def pod_patch(job: str, **pod_spec: Any) -> dict[str, Any]:
    return {"name": job, "template": {"spec": {"template": {"spec": pod_spec}}}}


def patch(manager: str, *jobs: dict[str, Any], metadata: Any = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"replicatedJobs": list(jobs)}}
    if metadata is not None:
        template["metadata"] = metadata
    return {"manager": manager, "trainingRuntimeSpec": {"template": template}}


def variables(job: dict[str, Any], rt: dict[str, Any]) -> dict[str, Any]:
    return {"job": job_value(job), "replica": {"type": "trainer", "index": 0, "restarts": 0,
                                               "desired": 1},
            "runPolicy": {"suspend": False}, "references": {"runtime": rt}, "children": [],
            "child": {}}


def jobset(job: dict[str, Any], rt: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The JobSet's spec and labels."""
    made = render_child_decorations(shipped_definitions()["TrainJob"], variables(job, rt))
    return made.fields["spec"], dict(made.labels)


def pod_spec(spec: dict[str, Any], name: str) -> dict[str, Any]:
    (job,) = [j for j in spec["replicatedJobs"] if j["name"] == name]
    return dict(job["template"]["spec"]["template"]["spec"])


def container(spec: dict[str, Any], job: str, name: str) -> dict[str, Any]:
    return next(c for c in pod_spec(spec, job)["containers"] if c["name"] == name)


def test_runtime_patches_apply_in_turn_as_strategic_merge_patches() -> None:
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}
    job = trainjob(runtimePatches=[
        patch("example.io/one", pod_patch(
            "node", serviceAccountName="first", nodeSelector={"pool": "a"},
            tolerations=[{"key": "gpu", "operator": "Exists"}], volumes=[volume],
            containers=[{"name": "side", "env": [{"name": "B", "value": "2"}],
                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]),
              metadata={"labels": {"team": "one", "from": "one"}}),
        patch("example.io/two", pod_patch(
            "node", serviceAccountName="second", nodeSelector={"zone": "z"},
            tolerations=[{"key": "spot", "operator": "Exists"}],
            containers=[{"name": "side", "env": [{"name": "A", "value": "3"}]}]),
              metadata={"labels": {"team": "two"}, "annotations": {"note": "two"}}),
    ])
    spec, labels = jobset(job, runtime(INITIALIZER, NODE))

    assert [j["name"] for j in spec["replicatedJobs"]] == ["dataset-initializer", "node"]
    node = pod_spec(spec, "node")
    assert node["serviceAccountName"] == "second"
    assert node["nodeSelector"] == {"pool": "a", "zone": "z"}  # maps merge
    assert node["tolerations"] == [{"key": "spot", "operator": "Exists"}]  # atomic: replaced
    assert node["volumes"] == [volume]
    side = container(spec, "node", "side")
    # B, new in the first patch, goes before A (apimachinery's order); the second patch
    # merges A in its place.
    assert side["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "3"}]
    assert side["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert side["image"] == "s"
    assert [e["name"] for e in container(spec, "node", "node")["env"]][:1] == ["PET_NNODES"]
    assert pod_spec(spec, "dataset-initializer").get("serviceAccountName") is None
    assert {k: labels[k] for k in ("team", "kept", "from")} == {
        "team": "two", "kept": "yes", "from": "one"}


def test_patches_naming_the_jobs_out_of_order_leave_the_runtimes_order() -> None:
    job = trainjob(runtimePatches=[patch(
        "example.io/p", pod_patch("node", nodeSelector={"a": "b"}),
        pod_patch("dataset-initializer", nodeSelector={"c": "d"}))])
    spec, _ = jobset(job, runtime(INITIALIZER, NODE))
    assert [j["name"] for j in spec["replicatedJobs"]] == ["dataset-initializer", "node"]
    assert pod_spec(spec, "dataset-initializer")["nodeSelector"] == {"c": "d"}


def test_a_dataset_initializer_gets_storage_uri_env_and_secret_ref() -> None:
    job = trainjob(initializer={"dataset": {
        "storageUri": "hf://tatsu-lab/alpaca", "env": [{"name": "ACCESS_TOKEN", "value": "t"},
                                                       {"name": "KEEP", "value": "mine"}],
        "secretRef": {"name": "hf-secret"}}})
    spec, _ = jobset(job, runtime(INITIALIZER, NODE))
    made = container(spec, "dataset-initializer", "dataset-initializer")
    assert made["env"] == [{"name": "STORAGE_URI", "value": "hf://tatsu-lab/alpaca"},
                           {"name": "KEEP", "value": "mine"},
                           {"name": "ACCESS_TOKEN", "value": "t"}]
    assert made["envFrom"] == [{"secretRef": {"name": "hf-secret"}}]
    (initializer,) = [j for j in spec["replicatedJobs"] if j["name"] == "dataset-initializer"]
    assert initializer["replicas"] == 1
    assert (initializer["template"]["spec"]["parallelism"],
            initializer["template"]["spec"]["completions"]) == (1, 1)
    (node,) = [j for j in spec["replicatedJobs"] if j["name"] == "node"]
    assert node["dependsOn"] == [{"name": "dataset-initializer", "status": "Complete"}]


def test_without_an_initializer_the_runtimes_initializer_runs_as_written() -> None:
    spec, _ = jobset(trainjob(), runtime(INITIALIZER, NODE))
    made = container(spec, "dataset-initializer", "dataset-initializer")
    assert made["env"] == INITIALIZER["template"]["spec"]["template"]["spec"][
        "containers"][0]["env"]
    assert "envFrom" not in made


def test_a_model_initializer_is_found_by_its_ancestor_label() -> None:
    model = rjob("fetch-model", "model-initializer", [
        {"name": "model-initializer", "image": "mi"}, {"name": "other", "image": "o"}])
    job = trainjob(initializer={"model": {"storageUri": "hf://meta-llama/x"}})
    spec, _ = jobset(job, runtime(model, NODE))
    assert container(spec, "fetch-model", "model-initializer")["env"] == [
        {"name": "STORAGE_URI", "value": "hf://meta-llama/x"}]
    assert "env" not in container(spec, "fetch-model", "other")


def podgroups(job: dict[str, Any], rt: dict[str, Any]) -> list[tuple[str, str, Any]]:
    wanted, _ = render_objects(shipped_definitions()["TrainJob"], variables(job, rt))
    return [(o.api_version, o.kind, o.fields["spec"]) for o in wanted]


def test_coscheduling_labels_every_pod_and_makes_a_podgroup_of_all_the_pods() -> None:
    rt = runtime(INITIALIZER, NODE, podGroupPolicy={"coscheduling": {"scheduleTimeoutSeconds": 90}})
    spec, _ = jobset(trainjob(), rt)
    for made in spec["replicatedJobs"]:
        assert made["template"]["spec"]["template"]["metadata"]["labels"] == {
            "scheduling.x-k8s.io/pod-group": "tj"}
    # 2 trainer nodes + 1 dataset initializer pod.
    assert podgroups(trainjob(), rt) == [("scheduling.x-k8s.io/v1alpha1", "PodGroup",
                                          {"minMember": 3, "scheduleTimeoutSeconds": 90})]
    assert podgroups(trainjob(), runtime(INITIALIZER, NODE)) == []


def test_volcano_annotates_every_pod_and_reads_its_queue_from_the_jobset_annotations() -> None:
    rt = runtime(NODE, podGroupPolicy={"volcano": {}})
    job = trainjob(runtimePatches=[patch("kueue.x-k8s.io/manager", metadata={
        "annotations": {"scheduling.volcano.sh/queue-name": "research"}})])
    spec, _ = jobset(job, rt)
    assert spec["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"] == {
        "annotations": {"scheduling.k8s.io/group-name": "tj"}}
    assert podgroups(job, rt) == [("scheduling.volcano.sh/v1beta1", "PodGroup",
                                   {"minMember": 2, "queue": "research"})]


def refusal(job: dict[str, Any], rt: dict[str, Any]) -> tuple[str, str]:
    """The state and the Failed condition's message a first look at the job gives."""
    definition = shipped_definitions()["TrainJob"]
    surroundings = Surroundings(objects={c.name: {} for c in definition.objects},
                                references={"runtime": rt})
    decision = decide(definition, job, read_job_spec(job, definition),
                      MachineRecord(state="Running"), {}, job_observations=frozenset(),
                      now="2027-01-01T00:00:00Z", surroundings=surroundings)
    failed = [c for c in decision.conditions if c.type == "Failed"]
    assert not decision.errors
    return decision.record.state, failed[0].message if failed else ""


INVALID = 'TrainJob.trainer.kubeflow.org "tj" is invalid: '
REF = ('spec.runtimeRef: Invalid value: {"name":"rt","apiGroup":"trainer.kubeflow.org",'
       '"kind":"ClusterTrainingRuntime"}: ')
NO_MOUNT = copy.deepcopy(INITIALIZER)
del NO_MOUNT["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
REFUSALS = [
    ("a model initializer without its job", trainjob(initializer={"model": {}}),
     runtime(INITIALIZER, NODE),
     REF + "must have model-initializer job when trainJob is configured with input modelConfig"),
    ("a dataset initializer without its container",
     trainjob(initializer={"dataset": {}}),
     runtime(rjob("dataset-initializer", "dataset-initializer", [{"name": "x", "image": "i"}]),
             NODE),
     REF + "must have container with name - dataset-initializer in the dataset-initializer job"),
    ("a dataset initializer without the volume mount", trainjob(initializer={"dataset": {}}),
     runtime(NO_MOUNT, NODE),
     REF + "must have volumeMount with name - initializer in container dataset-initializer "
     "of the dataset-initializer job"),
    ("a manager that is no domain-prefixed path",
     trainjob(runtimePatches=[patch("kueue.k8s.io/")]), runtime(NODE),
     'spec.runtimePatches.manager: Invalid value: "kueue.k8s.io/": must be a domain-prefixed '
     'path (such as "acme.io/foo")'),
    ("a patch of a job the runtime lacks",
     trainjob(runtimePatches=[patch("a.io/b", pod_patch("ghost", nodeSelector={"a": "b"}))]),
     runtime(NODE),
     "spec.runtimePatches: Invalid value: [...]: must not have replicated job that doesn't "
     "exist in the runtime job template"),
    ("env for the node container and a container the job lacks",
     trainjob(runtimePatches=[patch("a.io/b", pod_patch(
         "node", containers=[{"name": "node", "env": [{"name": "X", "value": "1"}]},
                             {"name": "nope"}]))]),
     runtime(NODE),
     "[spec.runtimePatches: Invalid value: [...]: must not have envs for the "
     "dataset-initializer, model-initializer, node containers, spec.runtimePatches: Invalid "
     "value: [...]: must not have container that doesn't exist in the runtime job node]"),
    ("torch's variables in the trainer's env",
     trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "9"}, {"name": "A", "value": "1"},
                               {"name": "PET_MASTER_ADDR", "value": "x"}]}),
     runtime(NODE),
     "spec.trainer.env: Invalid value: [...]: must not have reserved envs, invalid envs "
     "configured: [PET_MASTER_ADDR PET_NNODES]"),
    ("XGBoost's variables in the trainer's env",
     trainjob(trainer={"env": [{"name": "A", "value": "1"},
                               {"name": "DMLC_NUM_WORKER", "value": "9"}]}),
     {**runtime(NODE), "spec": {**runtime(NODE)["spec"],
                                "mlPolicy": {"numNodes": 1, "xgboost": {}}}},
     "spec.trainer.env[1]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime"),
    ("an empty Volcano queue", trainjob(runtimePatches=[patch("a.io/b", metadata={
        "annotations": {"scheduling.volcano.sh/queue-name": ""}})]),
     runtime(NODE, podGroupPolicy={"volcano": {}}),
     'spec.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "": Volcano queue '
     "name must not be empty"),
]


@pytest.mark.parametrize(("says", "job", "rt", "message"), REFUSALS,
                         ids=[r[0] for r in REFUSALS])
def test_what_trainers_webhook_refuses_fails_the_trainjob_in_its_words(
    says: str, job: dict[str, Any], rt: dict[str, Any], message: str
) -> None:
    assert refusal(job, rt) == ("Failed", INVALID + message)


def test_a_valid_trainjob_on_its_runtime_is_not_refused() -> None:
    job = trainjob(initializer={"dataset": {"storageUri": "hf://x"}},
                   runtimePatches=[patch("example.io/ok", pod_patch(
                       "node", containers=[{"name": "side", "env": [{"name": "B"}]}]))])
    assert refusal(job, runtime(INITIALIZER, NODE)) == ("Running", "")
