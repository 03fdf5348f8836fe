"""`jobmachine check` on a machine that reads objects its jobs name (governs.references): a
TrainJob explored on each shipped runtime and on a runtime missing at first, its JobSet
moved by the jobset machine, so a TrainJob machine that misreads its JobSet's end is
caught at its own file and line."""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.api.kind_schemas import kind_schema_lookup
from engine.definition import load_definitions
from engine.modelcheck.check import check_paths
from engine.modelcheck.moves import moves
from engine.modelcheck.referenced import objects_of, referenced_variants
from engine.modelcheck.report import report_lines
from engine.modelcheck.shapes import START, Bounds
from engine.simulation.world import World
from tests.kinds import MACHINES

TRAINJOB = MACHINES / "trainjob.yaml"
RUNTIMES = MACHINES.parent / "manifests" / "trainer-runtimes.yaml"
SCHEMAS = kind_schema_lookup([MACHINES])
JOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
       "metadata": {"name": "checked", "namespace": "check", "uid": "uid-checked",
                    "generation": 1},
       "spec": {"runtimeRef": {"name": "xxxxx", "apiGroup": "trainer.kubeflow.org",
                               "kind": "ClusterTrainingRuntime"}, "suspend": False}}


def test_the_trainjob_machine_is_explored_on_each_shipped_runtime_and_every_rule_holds() -> None:
    report = check_paths([TRAINJOB], Bounds())
    lines = "\n".join(report_lines(report))
    assert report.ok, lines
    assert report.diagnostics == [], lines
    (machine,) = report.machines
    assert machine.unused == [], lines
    shipped = [d["metadata"]["name"] for d in yaml.safe_load_all(RUNTIMES.read_text())
               if d and d["kind"] == "ClusterTrainingRuntime"]
    assert len(shipped) >= 3
    words = {str(result.shape).split("runtime: ")[1] for result in machine.shapes}
    assert words == {*(f"ClusterTrainingRuntime {name} (shipped)" for name in shipped),
                     f"ClusterTrainingRuntime {shipped[0]} (shipped), missing at first"}
    assert {"Complete", "Failed", "Suspended"} <= set().union(
        *(r.job_states for r in machine.shapes))


def test_a_runtime_is_found_where_the_job_looks_with_its_shipped_contents() -> None:
    (trainjob,) = load_definitions([TRAINJOB])
    variants = referenced_variants(trainjob, JOB, SCHEMAS)
    present, later = objects_of(variants[0])
    assert later == {}
    ((key, runtime),) = present.items()
    assert key == ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", "", "xxxxx")
    assert runtime["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    assert runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    missing = objects_of(variants[-1])
    assert missing == ({}, present)


def test_without_shipped_objects_of_its_kind_the_least_its_schema_admits_is_explored(
    tmp_path: Path,
) -> None:
    (trainjob,) = load_definitions([TRAINJOB])
    variants = referenced_variants(trainjob, JOB, SCHEMAS, manifests=tmp_path)
    assert [words for words, _ in variants] == [
        "runtime: ClusterTrainingRuntime with its schema's least values",
        "runtime: ClusterTrainingRuntime with its schema's least values, missing at first"]
    ((_, least),) = objects_of(variants[0])[0].items()
    assert least == {"apiVersion": "trainer.kubeflow.org/v1alpha1",
                     "kind": "ClusterTrainingRuntime", "metadata": {"name": "xxxxx"}}


def test_while_the_runtime_is_missing_the_trainjob_waits_with_trainers_warning_then_runs(
) -> None:
    (trainjob,) = load_definitions([TRAINJOB])
    _, later = objects_of(referenced_variants(trainjob, JOB, SCHEMAS)[-1])
    world = World(trainjob, dict(JOB), START)
    first = world.reconcile()
    assert [(e.type, e.reason) for e in first.events] == [
        ("Warning", "TrainJobResourcesCreationFailed")]
    assert world.pods == {}
    (created,) = [m for m in moves(world, (), None, later=later) if "is created" in m.label]
    assert created.label == "ClusterTrainingRuntime xxxxx is created"
    created.apply(world)
    world.reconcile()
    ((_, jobset),) = world.pods.items()
    assert jobset["kind"] == "JobSet"
    assert [rj["name"] for rj in jobset["spec"]["replicatedJobs"]] == ["node"]


def test_a_trainjob_machine_that_reads_the_wrong_end_of_its_jobset_is_reported_at_its_line(
    tmp_path: Path,
) -> None:
    text = TRAINJOB.read_text()
    guard = 'when: "replicas.trainer.succeeded > 0"'
    assert text.count(guard) == 1
    seeded = tmp_path / "trainjob.yaml"
    seeded.write_text(text.replace(guard, 'when: "replicas.trainer.failed > 0"'))
    report = check_paths([seeded], Bounds())
    assert not report.ok
    (machine,) = report.machines
    rules = {(v.rule, v.where) for v in machine.violations}
    assert ("dead-end", ("spec", "job", "states", "Running")) in rules, report_lines(report)
    line = next(n for n, text_line in enumerate(text.splitlines(), 1)
                if text_line == "      Running:")
    printed = "\n".join(report_lines(report))
    assert f"{seeded}:{line}:7: error: dead-end: from job state Running (trainer-0 Succeeded)" \
        in printed, printed
    assert "JobSet checked ends: Completed (AllJobsCompleted)" in printed, printed
