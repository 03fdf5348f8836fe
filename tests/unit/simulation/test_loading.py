"""Scenario files that cannot be played: every problem as FILE:LINE:COL at its node, with
the machine loader's machinery, and what a good file resolves to."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.simulation.loading import ScenarioError, load_scenario
from tests.kinds import MACHINES, REPO
from tests.unit.simulation.support import load, machine_job, write


def problems(tmp_path: Path, *parts: str) -> list[str]:
    """The diagnostics, with the scenario's folder left out."""
    with pytest.raises(ScenarioError) as raised:
        load(tmp_path, *parts)
    return [str(d).replace(f"{tmp_path}/", "") for d in raised.value.diagnostics]


def test_a_good_scenario_resolves_its_job_machine_and_facts(tmp_path: Path) -> None:
    loaded = load(tmp_path, machine_job(workers=2), """\
        pods: {startAfter: 2s}
        timeline:
          - {at: 1m30s, replica: Worker-1, exits: 137, reason: OOMKilled}
          - {at: 2h}
        expect: {phase: Succeeded}
        """)
    assert loaded.definition.governs.kind == "MachineJob"
    assert loaded.job["metadata"]["name"] == "etl"
    assert loaded.scenario.pods.start_after == 2
    assert loaded.scenario.pods.gone_after == 1
    assert [(f.fact.at, f.fact.kind, f.replica) for f in loaded.facts] == [
        (90, "exits", ReplicaId("Worker", 1)), (7200, None, None)]
    assert str(loaded.facts[0].position).endswith("scenario.yaml:14:5")
    assert loaded.scenario.expects


def test_a_job_manifest_and_a_machine_are_read_relative_to_the_scenario(tmp_path: Path) -> None:
    folder = REPO / "examples" / "simulations"
    path = write(tmp_path, f"""\
        job: {folder}/../kubeflow/pytorch-mnist.yaml
        machine: {folder}/../../machines/pytorchjob.yaml
        """)
    loaded = load_scenario(path, machines=tmp_path)  # the machine named, not looked for
    assert loaded.job["kind"] == "PyTorchJob"
    assert loaded.definition.name == "pytorchjob"
    assert not loaded.scenario.expects


def test_shape_problems_are_reported_at_their_nodes(tmp_path: Path) -> None:
    assert problems(tmp_path, machine_job(), """\
        timeline:
          - {at: 5x, replica: Worker-0, exits: 137}
          - {at: 6s, replica: Worker-0, deleted: true, lost: true}
          - {at: 8s, suspend: true, bogus: 1}
          - {at: 9s, exits: 3}
          - {at: 9s, replica: Worker-0, exits: 300}
          - {at: 9s, suspend: true, reason: OOMKilled}
          - {at: 9s, patch: {status: {}}}
        expect: {phase: 3, restart: 1}
        """) == [
        "scenario.yaml:13:10: error: '5x' is not a duration: write 500ms, 5s, 10m, 1h30m or "
        "whole seconds",
        "scenario.yaml:14:5: error: one fact per timeline entry, not deleted and lost: write one "
        "entry for each, at the same time",
        "scenario.yaml:15:29: error: unknown field 'bogus'; allowed fields: at, replica, exits, "
        "reason, deleted, evicted, lost, starts, nodeLost, suspend, patch",
        "scenario.yaml:16:5: error: 'exits' needs the replica whose pod it is about (replica: "
        "Worker-0)",
        "scenario.yaml:17:40: error: 'exits' must be <= 255 (got 300)",
        "scenario.yaml:18:5: error: 'reason' is the termination reason of an exit: give it with "
        "'exits'",
        "scenario.yaml:19:5: error: a patch may change the job's metadata and spec only",
        "scenario.yaml:20:17: error: 'phase' must be a string, not an integer",
        "scenario.yaml:20:20: error: unknown field 'restart' (did you mean 'restarts'?); "
        "allowed fields: phase, state, "
        "restarts, reason, conditions, replicas, podsCreated, podsAtOnce",
    ]


def test_facts_out_of_order_or_about_unknown_replicas_are_errors(tmp_path: Path) -> None:
    assert problems(tmp_path, machine_job(), """\
        timeline:
          - {at: 5s, replica: Worker-0, exits: 137}
          - {at: 3s, replica: Boss-0, exits: 137}
          - {at: 6s, replica: Worker, lost: true}
        """) == [
        "scenario.yaml:14:10: error: the timeline goes back in time: keep its facts in the order "
        "they happen",
        "scenario.yaml:14:23: error: no replica 'Boss-0': name one as Type-Index (Worker-0, ...)",
        "scenario.yaml:15:23: error: no replica 'Worker': name one as Type-Index (Worker-0, ...)",
    ]


def test_the_job_must_exist_and_be_governed(tmp_path: Path) -> None:
    assert problems(tmp_path, "job: missing.yaml\n") == [
        "scenario.yaml:1:6: error: no job manifest missing.yaml"]
    assert problems(tmp_path, "job: {kind: Thing, metadata: {}}\n") == [
        "scenario.yaml:1:6: error: the job needs 'apiVersion' (a string)",
        "scenario.yaml:1:6: error: the job needs a spec (a mapping)",
        "scenario.yaml:1:30: error: the job needs metadata.name (a string)",
    ]
    assert problems(tmp_path, "job: {apiVersion: v1, kind: Thing, metadata: {name: x}, "
                              "spec: {}}\n") == [
        f"scenario.yaml:1:29: error: no machine in {MACHINES} governs v1 Thing: name one with "
        "'machine:'"]


def test_problems_in_a_job_manifest_are_reported_in_that_file(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("kind: PyTorchJob\nmetadata: [\n", encoding="utf-8")
    assert problems(tmp_path, "job: job.yaml\n") == [
        "job.yaml:3:1: error: YAML syntax: while parsing a flow node, expected the node "
        "content, but found '<stream end>'"]
    (tmp_path / "job.yaml").write_text("kind: PyTorchJob\nmetadata: {}\n", encoding="utf-8")
    assert problems(tmp_path, "job: job.yaml\n") == [
        "job.yaml:1:1: error: the job needs 'apiVersion' (a string)",
        "job.yaml:1:1: error: the job needs a spec (a mapping)",
        "job.yaml:2:11: error: the job needs metadata.name (a string)",
    ]


def test_a_machine_that_governs_another_kind_or_is_broken_is_reported(tmp_path: Path) -> None:
    assert problems(tmp_path, machine_job(), f"machine: {MACHINES}/tfjob.yaml\n") == [
        f"scenario.yaml:12:10: error: {MACHINES}/tfjob.yaml governs kubeflow.org/v1 TFJob, not "
        "the job's jobmachine.dev/v1alpha1 MachineJob"]
    (tmp_path / "machine.yaml").write_text(
        "apiVersion: jobmachine.dev/v1alpha1\nkind: StateMachine\nmetadata: {name: m}\n"
        "spec: {bogus: 1}\n", encoding="utf-8")
    found = problems(tmp_path, machine_job(), "machine: machine.yaml\n")
    assert found[0].startswith("machine.yaml:")
    assert all(": error: " in line for line in found)


def test_a_yaml_syntax_error_and_a_second_document_are_reported(tmp_path: Path) -> None:
    assert problems(tmp_path, "job: [\n") == [
        "scenario.yaml:2:1: error: YAML syntax: while parsing a flow node, expected the node "
        "content, but found '<stream end>'"]
    assert problems(tmp_path, machine_job(), "---\njob: x\n") == [
        "scenario.yaml:13:1: error: a scenario file holds exactly one YAML document"]
    assert problems(tmp_path, "- job\n") == [
        "scenario.yaml:1:1: error: a scenario is a mapping with job, machine, pods, timeline "
        "and expect, not a list"]


def test_a_machine_with_a_schedule_is_refused_not_half_played(tmp_path: Path) -> None:
    """A CronJob would "run" with nothing happening: simulate says it does not play
    schedules instead."""
    scenario = tmp_path / "cron.yaml"
    scenario.write_text(f"job: {REPO / 'examples' / 'batch' / 'cronjob.yaml'}\n"
                        "expect: {state: Scheduling}\n")
    with pytest.raises(ScenarioError) as raised:
        load_scenario(scenario, machines=MACHINES)
    (problem,) = raised.value.diagnostics
    assert "makes its children on a schedule (spec.schedule, a CronJob's Jobs), which " \
           "simulate does not play" in str(problem)


def test_a_job_that_is_neither_a_file_name_nor_a_job_says_both_kinds(tmp_path: Path) -> None:
    assert problems(tmp_path, "job: 5\ntimeline: []\n") == [
        "scenario.yaml:1:6: error: 'job' must be a string or a mapping, not an integer"]
