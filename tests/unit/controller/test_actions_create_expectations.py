"""A replica's pod (or child object) created one at a time under its type's expectations
(actions._create_expected): the pass awaits its creation until the watch shows it, and
logs `created pod <name>` for the replica; a name taken already, or a create refused, is
awaited no more (a refusal fails the pass). A create planned twice in one pass (a self-loop
stepped in two rounds) makes one object. A JobSet's Job is created so too, awaited by its
replicated job's expectations; in a slow-start pass a service is no pod: it is not
awaited."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import RESTART_ATTEMPT_LABEL, ReplicaId
from engine.controller.reconcile.decide import Planned
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.kube.errors import AlreadyExists, Forbidden
from tests.scenarios.world import machine_job, pytorch_job, worker
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
from tests.unit.controller.test_actions_child_fields import JOBS, kept_in_step
from tests.unit.controller.test_actions_services import BodiesApi

WORKERS = ExpectationKey("MachineJob/team/train", "Worker")


def created(*actions: Planned, api: Api | None = None, job: dict[str, Any] | None = None
            ) -> tuple[Api, Expectations, list[tuple[str, str, dict[str, Any]]]]:
    """One pass of `job` (else a MachineJob `train` of two Workers) that plans `actions`."""
    world = world_of(job or machine_job(workers=2))
    decision, facts = judged(world, actions=actions)
    api, expectations = api or Api(), Expectations()
    run = action_run(world, decision, api, Recorder(), facts=facts, expectations=expectations)
    with logged(f"team/{world.job['metadata']['name']}") as lines:
        execute(run)
    return api, expectations, lines


def test_a_created_pod_is_awaited_until_the_watch_shows_it_and_logged() -> None:
    api, expectations, lines = created(planned("createPod", worker(1)))
    assert api.verbs("create") == ["train-worker-1"]
    assert expectations.creations_unseen("MachineJob/team/train") == 1
    assert not expectations.satisfied(WORKERS)
    expectations.creation_observed(WORKERS)
    assert expectations.satisfied(WORKERS)
    assert [(level, message, extra) for level, message, extra in lines] == [
        ("INFO", "created pod train-worker-1",
         {"job": "team/train", "kind": "MachineJob", "replica": "Worker-1"})]


def test_a_create_planned_twice_in_a_pass_makes_one_pod() -> None:
    api, expectations, _ = created(planned("createPod", worker(1)),
                                   planned("createPod", worker(1)))
    assert api.verbs("create") == ["train-worker-1"]
    assert expectations.creations_unseen("MachineJob/team/train") == 1


def test_a_name_taken_already_is_awaited_no_more() -> None:
    taken = AlreadyExists(409, "AlreadyExists", "exists", {})
    api, expectations, lines = created(planned("createPod", worker(1)),
                                       api=Api(refuse={("create", "train-worker-1"): taken}))
    assert api.verbs("create") == ["train-worker-1"]
    assert api.verbs("get") == ["train-worker-1"]  # read back (_explain_existing)
    assert expectations.satisfied(WORKERS)
    assert lines == []


def test_a_refused_create_fails_the_pass_and_is_awaited_no_more() -> None:
    refused = Forbidden(403, "Forbidden", "exceeded quota", {})
    expectations = Expectations()
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    run = action_run(world, decision, Api(refuse={("create", "train-worker-1"): refused}),
                     Recorder(), facts=facts, expectations=expectations)
    with pytest.raises(Forbidden, match="exceeded quota"):
        execute(run)
    assert expectations.satisfied(WORKERS)
    assert run.created == set()


def test_a_jobsets_job_is_created_under_its_replicated_jobs_expectations() -> None:
    leaders = ExpectationKey("JobSet/team/js", "leader")
    expectations = Expectations()
    api, _, lines = kept_in_step({}, actions=(planned("createChild", ReplicaId("leader", 0)),),
                                 expectations=expectations)
    assert [(verb, plural, name) for verb, plural, name, _ in api.sent] == [
        ("create", JOBS.plural, "js-leader-0")]
    assert not expectations.satisfied(leaders)
    expectations.creation_observed(leaders)
    assert expectations.satisfied(leaders)
    assert [message for _, message, _ in lines] == ["created job js-leader-0"]


def test_a_slow_start_pass_awaits_its_pods_and_not_their_services() -> None:
    api, expectations, lines = created(planned("createPod", worker(0)),
                                       planned("createService", worker(0)),
                                       job=pytorch_job(workers=1))
    assert api.verbs("create") == ["mnist-worker-0", "mnist-worker-0"]
    assert expectations.creations_unseen("PyTorchJob/team/mnist") == 1
    assert [(message, extra["replica"]) for _, message, extra in lines] == [
        ("created pod mnist-worker-0", "Worker-0"), ("created service mnist-worker-0", "Worker-0")]


def test_a_pod_carries_the_jobs_restart_attempt() -> None:
    # Pods of an older attempt are told apart by it after the whole job restarted.
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    decision = replace(decision, record=replace(decision.record, restart_attempt=2))
    api = BodiesApi()
    execute(action_run(world, decision, api, Recorder(), facts=facts))
    labels = api.bodies["train-worker-1"]["metadata"]["labels"]
    assert labels[RESTART_ATTEMPT_LABEL] == "2"


def test_a_slow_start_pod_created_is_said_for_its_replica() -> None:
    world = world_of(pytorch_job(workers=1))
    decision, facts = judged(world, actions=(planned("createPod", worker(0),
                                                     reason="SuccessfulCreate"),))
    recorder = Recorder()
    execute(action_run(world, decision, Api(), recorder, facts=facts))
    assert recorder.said == [Said("mnist", "Normal", "SuccessfulCreate",
                                  "Created pod: mnist-worker-0", "Worker-0")]


def test_a_slow_start_pod_name_another_controller_holds_is_a_name_conflict() -> None:
    taken = AlreadyExists(409, "AlreadyExists", "exists", {})
    world = world_of(pytorch_job(workers=1))
    decision, facts = judged(world, actions=(planned("createPod", worker(0)),))
    recorder = Recorder()
    api = Api(refuse={("create", "mnist-worker-0"): taken},
              existing={"mnist-worker-0": obj("mnist-worker-0", owner="uid-someone-else")})
    run = action_run(world, decision, api, recorder, facts=facts)
    execute(run)
    assert recorder.said == [Said(
        "mnist", "Warning", "NameConflict",
        "Worker-0: Pod mnist-worker-0 exists and belongs to another controller", None)]
    assert run.wait_s == [0.5]


def test_a_slow_start_create_lost_to_a_broken_connection_fails_the_pass_after_its_batch() -> None:
    # Not the API server's answer: the pass fails with it once the batch has been sent
    # (the Master's pod, in a batch of its own type, still went), and it is awaited no more.
    world = world_of(pytorch_job(workers=1))
    decision, facts = judged(world, actions=(planned("createPod", worker(0)),
                                             planned("createPod", ReplicaId("Master", 0))))
    expectations = Expectations()
    api = Api(refuse={("create", "mnist-worker-0"): ConnectionResetError("reset by peer")})
    run = action_run(world, decision, api, Recorder(), facts=facts, expectations=expectations)
    with pytest.raises(ConnectionResetError, match="reset by peer"):
        execute(run)
    assert api.verbs("create") == ["mnist-worker-0", "mnist-master-0"]
    assert run.created == {ReplicaId("Master", 0)}
    assert expectations.satisfied(ExpectationKey("PyTorchJob/team/mnist", "Worker"))
