"""Each planned action carried out by its executor (actions._execute_one): `event` is said
about the job (Warning only when the machine says so, its reason as the message when it
gives none, for the replica that planned it); `createPod`, `createService`, `deletePod`,
`deleteChild` and `deleteService` act on the replica's own object or service;
`cleanupPods` deletes what the clean-pod policy takes, the action's argument before the
job's runPolicy. A replica action without a replica, and an action the engine has no
executor for, are errors, said in words."""

from __future__ import annotations

from typing import Any

import pytest

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.decide import Planned
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from tests.scenarios.world import exited, machine_job, observe, pytorch_job, running, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    logged,
    obj,
    planned,
    world_of,
)
from tests.unit.controller.test_actions_child_fields import LEADER, WORKER, child, kept_in_step

PODS_OF = {worker(i): obj(f"train-worker-{i}") for i in range(2)}
SERVICES_OF = {worker(i): obj(f"train-worker-{i}-svc") for i in range(2)}


def carried_out(*actions: Planned, **fields: Any) -> tuple[Api, Recorder]:
    """One pass of a MachineJob of two Workers that plans `actions` and nothing else."""
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=actions)
    api, recorder = Api(), Recorder()
    fields.setdefault("facts", facts)
    execute(action_run(world, decision, api, recorder, **fields))
    return api, recorder


def test_an_event_is_said_as_the_machine_words_it() -> None:
    _, recorder = carried_out(
        planned("event", reason="Stalled", message="no progress", type="Warning"),
        planned("event", worker(1), reason="Started", message="worker up"),
        planned("event", reason="Resumed"),
        planned("event", reason="Odd", type="warning"))
    assert recorder.said == [
        Said("train", "Warning", "Stalled", "no progress", None),
        Said("train", "Normal", "Started", "worker up", "Worker-1"),
        Said("train", "Normal", "Resumed", "Resumed", None),
        Said("train", "Normal", "Odd", "Odd", None),
    ]


def test_a_replicas_pod_and_service_are_created_and_deleted_by_their_actions() -> None:
    api, recorder = carried_out(planned("createPod", worker(0), reason="SuccessfulCreate"),
                                planned("createService", worker(0)))
    assert api.sent == [("create", "pods", "train-worker-0", "team"),
                        ("create", "services", "train-worker-0", "team")]
    assert recorder.said == [Said("train", "Normal", "SuccessfulCreate",
                                  "Created pod: train-worker-0", "Worker-0")]
    api, _ = carried_out(planned("deletePod", worker(1)), planned("deleteService", worker(0)),
                         pods=PODS_OF, services=SERVICES_OF)
    assert api.sent == [
        ("delete", "pods", "train-worker-1", ("team", "uid-train-worker-1", None)),
        ("delete", "services", "train-worker-0-svc", ("team", "uid-train-worker-0-svc", None)),
    ]


def test_a_deleted_service_is_logged_for_its_replica() -> None:
    with logged() as lines:
        carried_out(planned("deleteService", worker(0)), pods=PODS_OF, services=SERVICES_OF)
    assert [(message, extra.get("replica")) for _, message, extra in lines
            if message.startswith("deleted")] == [("deleted service train-worker-0-svc",
                                                   "Worker-0")]


def test_a_replicas_child_object_is_deleted_by_delete_child() -> None:
    api, _, _ = kept_in_step({LEADER: child(LEADER), WORKER: child(WORKER)},
                             actions=(planned("deleteChild", WORKER),))
    assert [(verb, plural, name) for verb, plural, name, _ in api.sent if verb == "delete"] == [
        ("delete", "jobs", "js-workers-0")]



def cleaned(*actions: Planned, expectations: Expectations | None = None, **run_policy: str
            ) -> list[tuple[str, str]]:
    """What a pass planning `actions` deletes (plural, name) of a job whose Worker-0 runs and
    whose Worker-1 has succeeded, each with its pod and service."""
    world = world_of(machine_job(workers=2, run_policy=run_policy))
    decision, _ = judged(world, actions=actions)
    facts, _ = observe({worker(0): running(), worker(1): exited(0)}, world.spec, 0)
    api = Api()
    execute(action_run(world, decision, api, Recorder(), facts=facts, pods=PODS_OF,
                       services=SERVICES_OF, expectations=expectations))
    return [(plural, name) for verb, plural, name, _ in api.sent if verb == "delete"]


def test_clean_up_deletes_what_its_policy_takes_its_argument_first() -> None:
    everything = [("pods", "train-worker-0"), ("services", "train-worker-0-svc"),
                  ("pods", "train-worker-1"), ("services", "train-worker-1-svc")]
    assert cleaned(planned("cleanupPods", policy="All")) == everything
    assert cleaned(planned("cleanupPods", policy="Running")) == everything[:2]
    assert cleaned(planned("cleanupPods", policy="Running"), cleanPodPolicy="All") == (
        everything[:2])
    assert cleaned(planned("cleanupPods"), cleanPodPolicy="All") == everything
    assert cleaned(planned("cleanupPods"), cleanPodPolicy="None") == []


def test_the_pods_cleaned_up_are_awaited_and_logged_for_their_replicas() -> None:
    workers = ExpectationKey("MachineJob/team/train", "Worker")
    expectations = Expectations()
    with logged() as lines:
        cleaned(planned("cleanupPods", policy="Running"), expectations=expectations)
    # (The world's own pass, which made the pods, logs their creates.)
    assert [(message, extra.get("replica")) for _, message, extra in lines
            if message.startswith("deleted")] == [
        ("deleted pod train-worker-0", "Worker-0"),
        ("deleted service train-worker-0-svc", "Worker-0")]
    assert not expectations.satisfied(workers)
    expectations.deletion_observed(workers, "train-worker-0")
    assert expectations.satisfied(workers)


def test_a_replica_action_without_a_replica_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^replica action createPod planned without a replica$"):
        carried_out(planned("createPod"))


def test_an_action_without_an_executor_is_an_error() -> None:
    with pytest.raises(NotImplementedError,
                       match=r"^the engine has no executor for action 'launch'$"):
        carried_out(planned("launch", worker(0)))


def test_a_slow_start_pass_sends_its_creates_before_the_actions_planned_after_them() -> None:
    # PyTorchJob's machine holds creates for slow-start batches; a delete planned after a
    # create still goes after it.
    world = world_of(pytorch_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(0)),
                                             planned("deletePod", worker(1))))
    api = Api()
    execute(action_run(world, decision, api, Recorder(), facts=facts,
                       pods={worker(1): obj("mnist-worker-1")}))
    assert [(verb, name) for verb, _, name, _ in api.sent] == [
        ("create", "mnist-worker-0"), ("delete", "mnist-worker-1")]
