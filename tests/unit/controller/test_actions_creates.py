"""A replica's pod created one at a time (a machine without pod.slowStart): the create is
sent to the job's namespace, and the Event the machine names for it (`createPod`'s reason,
the Job controller's SuccessfulCreate) is a Normal one about the job, for that replica;
without a reason nothing is said; a template restartPolicy the machine replaces is warned
of. A replica whose pods keep failing waits before its next one, twice as long after each
failure in a row, up to the engine's cap."""

from __future__ import annotations

from dataclasses import replace

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.record import RestartRecord
from engine.kube.timestamps import format_time
from engine.settings import EngineSettings
from tests.scenarios.world import T0, machine_job, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    planned,
    world_of,
)


def created_with(**args: str) -> tuple[Api, Recorder]:
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1), **args),))
    api, recorder = Api(), Recorder()
    execute(action_run(world, decision, api, recorder, facts=facts))
    return api, recorder


def test_a_pod_created_is_said_in_the_event_the_machine_names() -> None:
    api, recorder = created_with(reason="SuccessfulCreate")
    assert api.sent == [("create", "pods", "train-worker-1", "team")]
    assert recorder.said == [Said("train", "Normal", "SuccessfulCreate",
                                  "Created pod: train-worker-1", "Worker-1")]


def test_a_pod_created_without_a_reason_is_not_said() -> None:
    api, recorder = created_with()
    assert api.verbs("create") == ["train-worker-1"]
    assert recorder.said == []


def backoff_after(failures: int, settings: EngineSettings | None = None,
                  **run_policy: bool) -> list[float]:
    """What a pass waits for before Worker-1's next pod, `failures` in a row having ended
    its pods, the last one just now."""
    world = world_of(machine_job(workers=2, run_policy=run_policy))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    backoff = {worker(1): RestartRecord(failures, format_time(T0))}
    decision = replace(decision, record=replace(decision.record, replica_backoff=backoff))
    api = Api()
    run = action_run(world, decision, api, Recorder(), facts=facts)
    run.settings = settings or run.settings
    execute(run)
    assert api.sent == []  # nothing is created while the back-off runs
    return run.wait_s


def test_the_back_off_doubles_with_each_failure_in_a_row_up_to_its_cap() -> None:
    assert backoff_after(1) == [10.0]
    assert backoff_after(2) == [20.0]
    assert backoff_after(4) == [80.0]
    assert backoff_after(12) == [600.0]
    # Kubeflow's way (recreationBackoff: false): the first failure in a row is recreated at
    # once, the back-off starts with the second.
    assert backoff_after(2, recreationBackoff=False) == [10.0]
    assert backoff_after(3, recreationBackoff=False) == [20.0]


def test_the_doubling_stops_after_thirty_failures_in_a_row() -> None:
    # Seen only under a cap far above the base: 2 ** 30 times it, never 2 ** 31.
    tiny = EngineSettings(replica_backoff_base_s=2.0 ** -30, replica_backoff_cap_s=600.0)
    assert backoff_after(31, tiny) == [1.0]
    assert backoff_after(40, tiny) == [1.0]


def test_a_template_restart_policy_the_machine_replaces_is_warned_of() -> None:
    job = machine_job(workers=2)
    job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    world = world_of(job)
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    api, recorder = Api(), Recorder()
    execute(action_run(world, decision, api, recorder, facts=facts))
    assert api.verbs("create") == ["train-worker-1"]
    assert recorder.said == [Said(
        "train", "Warning", "RestartPolicyOverridden",
        "Worker-1: the pod template's restartPolicy OnFailure is replaced by Never; the "
        "replica's restartPolicy decides restarts", None)]


def test_a_template_restart_policy_the_pod_keeps_is_not_warned_of() -> None:
    job = machine_job(workers=2)
    job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Never"
    world = world_of(job)
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    recorder = Recorder()
    execute(action_run(world, decision, Api(), recorder, facts=facts))
    assert recorder.said == []
