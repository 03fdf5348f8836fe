"""A replica's service created (actions._create_service): in the job's namespace, carrying
the machine's pod labels (Kubeflow's selectors and tools find it by them), once a pass (a
createService stepped twice in a slow-start pass is one create), and not at all when the
replica has one already or its type is gone from the spec. A name taken already is read
back, as a pod's is, and looked at again half a second later."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Planned
from engine.kube.errors import AlreadyExists
from engine.kube.resources import Resource
from tests.scenarios.test_decider_replica_scenarios import kubeflow_job
from tests.scenarios.world import machine_job, pytorch_job, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    obj,
    planned,
    world_of,
)


class BodiesApi(Api):
    """Keeps the body of each object created, by name."""

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        self.bodies: dict[str, dict[str, Any]] = {}

    def create(self, resource: Resource, body: dict[str, Any], namespace: str
               ) -> dict[str, Any]:
        self.bodies[body["metadata"]["name"]] = body
        return super().create(resource, body, namespace)


def services_made(*actions: Planned, api: BodiesApi | None = None,
                  job: dict[str, Any] | None = None, **fields: Any
                  ) -> tuple[BodiesApi, list[float]]:
    """One pass that plans `actions`, of `job` or else of a PyTorchJob `mnist` (a Master, a
    Worker; its machine creates in slow-start batches)."""
    world = world_of(job or pytorch_job(workers=1))
    decision, facts = judged(world, actions=actions)
    api = api or BodiesApi()
    run = action_run(world, decision, api, Recorder(), facts=facts, **fields)
    execute(run)
    return api, run.wait_s


def test_a_service_carries_the_machines_pod_labels() -> None:
    api, _ = services_made(planned("createService", worker(0)))
    assert api.sent == [("create", "services", "mnist-worker-0", "team")]
    labels = api.bodies["mnist-worker-0"]["metadata"]["labels"]
    assert labels["training.kubeflow.org/replica-type"] == "worker"
    assert labels["training.kubeflow.org/replica-index"] == "0"


def test_a_service_planned_twice_in_a_pass_is_created_once() -> None:
    api, _ = services_made(planned("createService", worker(0)),
                           planned("createService", worker(0)))
    assert api.verbs("create") == ["mnist-worker-0"]


def test_no_service_is_made_for_a_replica_that_has_one() -> None:
    api, _ = services_made(planned("createService", worker(0)),
                           services={worker(0): obj("mnist-worker-0")})
    assert api.sent == []


def test_no_service_is_made_for_a_type_gone_from_the_spec() -> None:
    api, _ = services_made(planned("createService", ReplicaId("Chief", 0)))
    assert api.sent == []


def test_a_service_name_taken_is_read_back_and_looked_at_again_soon() -> None:
    # In a slow-start batch (PyTorchJob) and one at a time (MachineJob `train`).
    taken = AlreadyExists(409, "AlreadyExists", "exists", {})
    for job, name in ((None, "mnist-worker-0"), (machine_job(workers=1), "train-worker-0")):
        api, wait_s = services_made(
            planned("createService", worker(0)), job=job,
            api=BodiesApi(refuse={("create", name): taken},
                          existing={name: obj(name, owner="uid-train")}))
        assert api.sent == [("create", "services", name, "team"),
                            ("get", "services", name, "team")]
        assert wait_s == [0.5]


def test_a_service_is_created_one_at_a_time_by_a_machine_without_slow_start() -> None:
    api, _ = services_made(planned("createService", worker(0)), job=machine_job(workers=1))
    assert api.sent == [("create", "services", "train-worker-0", "team")]
    assert api.bodies["train-worker-0"]["kind"] == "Service"


def test_only_the_types_the_machine_gives_services_get_one() -> None:
    # An MPIJob's Workers have services (its launcher reaches them by name); its Launcher not.
    job = kubeflow_job("MPIJob", "mpiReplicaSpecs", "mpi", {"Launcher": 1, "Worker": 1})
    api, _ = services_made(planned("createService", ReplicaId("Launcher", 0)),
                           planned("createService", worker(0)), job=job)
    assert api.sent == [("create", "services", "train-worker-0", "team")]


def test_a_service_name_another_controller_holds_is_a_name_conflict_for_the_replica() -> None:
    taken = AlreadyExists(409, "AlreadyExists", "exists", {})
    recorder = Recorder()
    world = world_of(machine_job(workers=1))
    decision, facts = judged(world, actions=(planned("createService", worker(0)),))
    api = Api(refuse={("create", "train-worker-0"): taken},
              existing={"train-worker-0": obj("train-worker-0", owner="uid-someone-else")})
    execute(action_run(world, decision, api, recorder, facts=facts))
    assert recorder.said == [Said(
        "train", "Warning", "NameConflict",
        "Worker-0: Service train-worker-0 exists and belongs to another controller", None)]
