"""The driver: a scenario's facts and the cluster's own doings on a fake clock, the engine's
passes in between, and the timeline it keeps."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from engine.simulation import run as run_module
from engine.simulation.result import format_offset
from engine.simulation.run import NeverSettlesError
from engine.simulation.world import Pass, World
from tests.unit.simulation.support import lines, machine_job, run


def test_pods_start_after_start_after_and_are_gone_after_gone_after(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(), """\
        pods: {startAfter: 3s, goneAfter: 20s}
        timeline:
          - {at: 10s, replica: Worker-0, deleted: true}
        """)
    assert lines(simulation, "kubelet", "pod", "fact") == [
        "0s Worker-0 pod: created",
        "3s Worker-0 kubelet: started",
        "10s Worker-0 fact: pod deleted by someone",
        "30s Worker-0 kubelet: pod gone",
        "30s Worker-0 pod: created",  # a deletion is no failure: no re-creation back-off
        "33s Worker-0 kubelet: started",
    ]
    assert simulation.stopped == "quiet"
    assert simulation.end == 33


def test_a_retryable_exit_is_recreated_and_a_success_ends_the_job(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(), """\
        timeline:
          - {at: 5s, replica: Worker-0, exits: 137}
          - {at: 1m, replica: Worker-0, exits: 0}
        """)
    assert lines(simulation, "state") == [
        "0s Worker-0 state: -> Pending",
        "0s job state: -> Created (JobCreated)",
        "1s Worker-0 state: Pending -> Running (Started)",
        "1s job state: Created -> Running (JobRunning)",
        "5s Worker-0 state: Running -> Restarting (PodFailed)",
        "6s Worker-0 state: Restarting -> Pending",
        "16s Worker-0 state: Pending -> Running (Restarted)",
        "1m0s Worker-0 state: Running -> Succeeded",
        "1m0s job state: Running -> Succeeding (AllReplicasSucceeded)",
        "1m0s job state: Succeeding -> Succeeded (JobSucceeded)",
    ]
    outcome = simulation.outcome
    assert (outcome.phase, outcome.restarts, outcome.pods_created) == ("Succeeded", 1, 2)
    assert outcome.reason == "AllReplicasSucceeded"
    assert "1m0s job condition: Succeeded True (AllReplicasSucceeded)" in lines(simulation)


def test_an_in_place_restart_waits_for_the_kubelets_crash_loop_back_off(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(policy="OnFailure"), """\
        timeline:
          - {at: 5s, replica: Worker-0, exits: 1}
          - {at: 20s, replica: Worker-0, exits: 1}
        """)
    assert lines(simulation, "kubelet") == [
        "1s Worker-0 kubelet: started",
        "15s Worker-0 kubelet: restarted in place (restartCount 1)",
        "40s Worker-0 kubelet: restarted in place (restartCount 2)",
    ]
    assert simulation.outcome.restarts == 2
    assert simulation.outcome.pods_created == 1


def test_pods_that_never_start_wait_for_a_start_fact(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(workers=2), """\
        pods: {startAfter: never}
        timeline:
          - {at: 1m, replica: Worker-1, starts: true}
        """)
    assert simulation.outcome.replicas == {"Worker-0": "Pending", "Worker-1": "Running"}
    assert simulation.outcome.state == "Created"


def test_a_fact_that_cannot_happen_is_noted_with_where_it_was_written(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(), """\
        timeline:
          - {at: 5s, replica: Worker-0, exits: 0}
          - {at: 6s, replica: Worker-0, exits: 1}
        """)
    where = tmp_path / "scenario.yaml"
    assert lines(simulation, "note") == [
        f"6s Worker-0 note: ignored ({where}:14:5): Worker-0 has no pod that runs or waits to "
        "start"]


def test_a_lost_node_loses_every_pod_on_it(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(workers=2), """\
        timeline:
          - {at: 10s, nodeLost: true}
        """)
    assert "10s node fact: the node is lost with the pods of Worker-0, Worker-1" in lines(
        simulation)
    assert simulation.outcome.restarts == 2
    assert simulation.outcome.pods_created == 4


def test_suspend_and_patch_edit_the_spec_and_raise_its_generation(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(workers=1), """\
        timeline:
          - {at: 10s, suspend: true}
          - {at: 20s, patch: {metadata: {labels: {team: a}},
                               spec: {replicaSpecs: {Worker: {replicas: 2}}}}}
          - {at: 30s, suspend: false}
        """)
    job = simulation.world.job
    assert job["metadata"]["generation"] == 4
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["spec"]["runPolicy"]["suspend"] is False
    assert simulation.outcome.state == "Running"
    assert simulation.outcome.replicas == {"Worker-0": "Running", "Worker-1": "Running"}
    assert lines(simulation, "fact")[:2] == [
        "10s job fact: suspended",
        "20s job fact: patched: {metadata: {labels: {team: a}}, spec: {replicaSpecs: {Worker: "
        "{replicas: 2}}}}"]


def test_the_run_stops_at_until_and_says_so(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(), """\
        timeline:
          - {at: 2h, replica: Worker-0, exits: 0}
        """, until_s=3600)
    assert simulation.stopped == "until"
    assert simulation.end == 3600
    assert lines(simulation, "note") == [
        "1h0m0s  note: stopped at --until 1h0m0s: more would happen at 2h0m0s"]
    assert simulation.outcome.phase == "Running"


def test_the_deadline_fires_without_a_fact(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(run_policy="{activeDeadlineSeconds: 600}"))
    assert simulation.outcome.reason == "DeadlineExceeded"
    assert simulation.end == 601  # the deadline, then the Running pod's grace period


def test_a_wake_up_that_has_already_come_is_noted_not_spun_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Eager(World):
        def reconcile(self) -> Pass:
            return dataclasses.replace(super().reconcile(), next_look=self.now)

    monkeypatch.setattr(run_module, "World", Eager)
    simulation = run(tmp_path, machine_job())
    assert simulation.stopped == "quiet"
    assert lines(simulation, "note") == [
        "0s job note: the engine asks to be woken at 0s, which has already come: in a cluster "
        "it would reconcile again at once, pass after pass, until something changes",
        "1s job note: the engine asks to be woken at 1s, which has already come: in a cluster "
        "it would reconcile again at once, pass after pass, until something changes",
    ]


def test_the_ttl_after_finished_deletes_the_job_and_ends_the_run(tmp_path: Path) -> None:
    simulation = run(tmp_path, machine_job(run_policy="{ttlSecondsAfterFinished: 600}"), """\
        timeline:
          - {at: 30s, replica: Worker-0, exits: 0}
        """)
    assert simulation.stopped == "deleted"
    assert simulation.end == 630
    assert lines(simulation, "note") == [
        "10m30s job note: the engine deletes the job: ttlSecondsAfterFinished (600s) has passed"]


def test_a_machine_that_never_settles_is_an_error(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    passes = itertools.count()

    class Restless(World):
        """Writes a new status on every pass (an Event alone wakes no one: not restless)."""

        def reconcile(self) -> Pass:
            passed = super().reconcile()
            return dataclasses.replace(passed, status={**passed.status, "pass": next(passes)})

    monkeypatch.setattr(run_module, "World", Restless)
    with pytest.raises(NeverSettlesError, match="at 0s it keeps changing the job"):
        run(tmp_path, machine_job())


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (1.5, "1.5s"), (0.25, "0.25s"), (59, "59s"), (60, "1m0s"), (150, "2m30s"),
    (3600, "1h0m0s"), (3725, "1h2m5s"), (90000, "25h0m0s"),
])
def test_offsets_read_as_go_durations(seconds: float, text: str) -> None:
    assert format_offset(seconds) == text
