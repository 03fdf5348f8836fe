"""Which Events a reconcile posts: one per state change, naming the replica and its exit code."""

from __future__ import annotations

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Fired
from engine.controller.reconcile.notices import (
    Notice,
    UnconfirmedNotices,
    notices_for,
    quiet_changes,
)
from engine.controller.reconcile.observe import PodFacts
from engine.definition import FiredTransition
from tests.scenarios.world import (
    MASTER,
    Pod,
    Reconciled,
    World,
    exited,
    pytorch_job,
    running,
    worker,
)

WORKER_1 = ReplicaId("Worker", 1)


def transition(
    source: str | None,
    target: str,
    *,
    reason: str = "",
    message: str = "",
    event_type: str = "Normal",
) -> FiredTransition:
    return FiredTransition(
        source, target, reason or target, message or f"{source} -> {target}", event_type,
        self_loop=source == target,
    )


def test_a_job_transition_posts_its_reason_and_message() -> None:
    fired = (Fired(transition("Created", "Running", reason="PyTorchJobRunning",
                              message="PyTorchJob team/mnist is running.")),)
    assert notices_for(fired, {}) == [
        Notice("Normal", "PyTorchJobRunning", "PyTorchJob team/mnist is running.")
    ]


def test_warning_transitions_post_warnings_and_anything_else_normal() -> None:
    fired = (
        Fired(transition("Running", "Failed", reason="BackoffLimitExceeded",
                         event_type="Warning")),
        Fired(transition("Running", "Succeeded", event_type="Info")),
    )
    assert [n.type for n in notices_for(fired, {})] == ["Warning", "Normal"]


def test_self_loops_post_nothing() -> None:
    fired = (
        Fired(transition("Pending", "Pending"), WORKER_1),
        Fired(transition("Running", "Running")),
    )
    assert notices_for(fired, {}) == []


def test_creating_a_replica_posts_nothing_but_creating_the_job_does() -> None:
    fired = (
        Fired(transition(None, "Pending"), WORKER_1),
        Fired(transition(None, "Created")),
    )
    assert notices_for(fired, {}) == [Notice("Normal", "Created", "None -> Created")]


def test_replica_messages_name_the_replica_and_the_exit_code() -> None:
    fired = (Fired(transition("Running", "Succeeded"), WORKER_1),)
    facts = {WORKER_1: PodFacts("podSucceeded", exit_code=0)}
    assert notices_for(fired, facts) == [
        Notice("Normal", "Succeeded", "Worker-1: Running -> Succeeded (exit code 0)", "Worker-1")
    ]


def test_a_message_that_names_the_replica_and_exit_code_is_kept_as_it_is() -> None:
    message = "Worker-1 failed (exit code 137 OOMKilled); restart policy ExitCode recreates it."
    fired = (Fired(transition("Running", "Restarting", reason="PodFailed", message=message,
                              event_type="Warning"), WORKER_1),)
    facts = {WORKER_1: PodFacts("podFailed", exit_code=137, reason="OOMKilled")}
    assert notices_for(fired, facts) == [Notice("Warning", "PodFailed", message, "Worker-1")]


def test_no_exit_code_is_added_when_the_pod_has_none() -> None:
    fired = (Fired(transition("Running", "Restarting", message="lost"), WORKER_1),)
    assert notices_for(fired, {WORKER_1: PodFacts("podLost")}) == [
        Notice("Normal", "Restarting", "Worker-1: lost", "Worker-1")
    ]
    assert notices_for(fired, {}) == [Notice("Normal", "Restarting", "Worker-1: lost", "Worker-1")]


def test_notices_keep_the_order_the_transitions_fired_in() -> None:
    fired = (
        Fired(transition("Pending", "Running"), ReplicaId("Master", 0)),
        Fired(transition("Pending", "Running"), WORKER_1),
        Fired(transition("Created", "Running", reason="PyTorchJobRunning")),
    )
    assert [n.message for n in notices_for(fired, {})] == [
        "Master-0: Pending -> Running", "Worker-1: Pending -> Running", "Created -> Running"
    ]


LIFECYCLE: list[dict[ReplicaId, Pod | None]] = [
    {},
    {MASTER: running(), worker(0): running(), worker(1): running()},
    {worker(1): exited(137, "OOMKilled")},
    {worker(1): None},
    {worker(1): running()},
    {},
    {worker(0): exited(0), worker(1): exited(0)},
    {MASTER: exited(0)},
    {},
]
"""A PyTorchJob's life, one change of its pods per reconcile (None: the pod is gone)."""


def _reconciled(world: World, change: dict[ReplicaId, Pod | None]) -> Reconciled:
    for replica, facts in change.items():
        if facts is None:
            del world.pods[replica]
        else:
            world.pods[replica] = facts
    return world.reconcile()


def test_a_lifecycle_posts_one_notice_per_state_change() -> None:
    world = World(pytorch_job(policy="ExitCode"))
    posted: list[list[str]] = []
    for change in LIFECYCLE:
        result = _reconciled(world, change)
        changes = [
            f for f in result.decision.fired
            if not f.transition.self_loop and not f.transition.silent
            and not (f.replica is not None and f.transition.source is None)
        ]
        assert len(result.notices) == len(changes)
        posted.append([n.reason for n in result.notices])
    assert posted == [
        # As Kubeflow: the job's creation and its start are said by its conditions only.
        [],
        ["Started", "Started", "Started"],
        # A restart is said by the replica's `event` actions (ExitedWithCode, then
        # PyTorchJobRestarting), not by its silent transitions; nor is the engine's own
        # deletion of the pod.
        [],
        [],
        ["Restarted"],
        [],
        ["ExitedWithCode", "ExitedWithCode"],
        # Succeeding, then Succeeded in the same pass (cleanPodPolicy None deletes nothing):
        # the ending is said once, the silent second phase posts nothing.
        ["ExitedWithCode", "PyTorchJobSucceeded"],
        [],
    ]


def test_an_unconfirmed_write_posts_its_notices_once_its_status_shows_it() -> None:
    notices = [Notice("Normal", "PyTorchJobRunning", "running")]
    unconfirmed = UnconfirmedNotices()
    unconfirmed.remember("team/mnist", '{"state":"Running"}', notices)
    # The cache does not show the write yet: keep waiting.
    assert unconfirmed.landed("team/mnist", {"record": '{"state":"Created"}'}) == ()
    assert unconfirmed.landed("team/mnist", {"record": '{"state":"Running"}'}) == tuple(notices)
    assert unconfirmed.landed("team/mnist", {"record": '{"state":"Running"}'}) == ()


def test_a_later_successful_write_refutes_an_unconfirmed_one() -> None:
    unconfirmed = UnconfirmedNotices()
    unconfirmed.remember("team/mnist", '{"state":"Running"}', [Notice("Normal", "R", "m")])
    unconfirmed.forget("team/mnist")
    assert unconfirmed.landed("team/mnist", {"record": '{"state":"Running"}'}) == ()
    unconfirmed.remember("team/mnist", '{"state":"Running"}', [])
    assert unconfirmed.landed("team/mnist", {"record": '{"state":"Running"}'}) == ()


def test_listeners_hear_of_the_job_changes_kubeflow_posts_no_event_for() -> None:
    world = World(pytorch_job(policy="ExitCode"))
    told: list[list[tuple[str, str]]] = []
    for change in LIFECYCLE[:5]:
        result = _reconciled(world, change)
        told.append([(n.reason, n.message)
                     for n in quiet_changes(result.decision, result.notices)])
    assert told == [
        [("PyTorchJobCreated", "PyTorchJob mnist is created.")],
        [("PyTorchJobRunning", "PyTorchJob team/mnist is running.")],
        [],  # the restart: the Worker's own PyTorchJobRestarting Event says it
        [],
        [("PyTorchJobRunning", "PyTorchJob team/mnist is running.")],
    ]
