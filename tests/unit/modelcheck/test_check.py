"""`jobmachine check` on small machines: one every rule holds for, and the same machine with
one seeded bug each, found at the right place with a shortest trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.record import MachineRecord
from engine.definition import load_definitions
from engine.modelcheck.check import CheckReport, check_paths
from engine.modelcheck.explore import Step, _Explorer
from engine.modelcheck.report import report_lines, trace_picture
from engine.modelcheck.shapes import START, Bounds, Shape, build_job, shapes
from engine.simulation.world import Pass, World
from tests.kinds import MACHINES

SOUND = Path(__file__).parent / "machines" / "sound.yaml"


def seeded(tmp_path: Path, old: str, new: str) -> Path:
    """The sound machine with one line changed."""
    text = SOUND.read_text()
    assert old in text
    path = tmp_path / "seeded.yaml"
    path.write_text(text.replace(old, new).replace("name: sound", "name: seeded"))
    return path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def checked(path: Path, **bounds: int) -> CheckReport:
    return check_paths([path], Bounds(**bounds))


def test_every_rule_holds_for_the_sound_machine() -> None:
    report = checked(SOUND)
    assert report.ok, "\n".join(report_lines(report))
    [machine] = report.machines
    assert machine.unused == []
    assert {r.shape.restart_policy for r in machine.shapes} == {
        "Never", "OnFailure", "Always", "ExitCode"}


def test_a_kind_with_a_list_of_named_replica_specs_is_checked_with_list_jobs() -> None:
    listed = Path(__file__).parent / "machines" / "listed.yaml"
    report = checked(listed, max_types=1)
    assert report.ok, "\n".join(report_lines(report))
    [machine] = report.machines
    [shape, *_] = [result.shape for result in machine.shapes]
    built = build_job(machine.definition, shape, Bounds())
    assert [(t["name"], t["replicas"]) for t in built["spec"]["tasks"]] == [("worker", 1)]


def test_an_ending_guard_that_can_never_hold_is_a_dead_end_at_the_state_it_strands(
    tmp_path: Path,
) -> None:
    path = seeded(tmp_path, "when: \"replicas.Worker.succeeded == replicas.Worker.desired\"",
                  "when: \"replicas.Worker.succeeded > replicas.Worker.desired\"")
    report = checked(path)
    assert not report.ok
    [machine] = report.machines
    dead = [v for v in machine.violations if v.rule == "dead-end"]
    assert dead, "\n".join(report_lines(report))
    position = machine.position(dead[0])
    assert (position.file, position.line) == (str(path), line_of(path, "Running: {condition"))
    assert "no terminal state can be reached" in dead[0].message
    moves = [step.move for step in dead[0].trace]
    assert moves[0] == "the job is created"
    assert any(move.startswith("Worker-0 exits 0") for move in moves)
    assert "Succeeded" not in {s.split("-> ")[-1] for step in dead[0].trace
                               for s in step.engine if s.startswith("job:")}


def test_recreating_before_deleting_wants_two_pods_for_one_index(tmp_path: Path) -> None:
    path = seeded(tmp_path, "      - {from: [Pending, Running], to: Failed, \"on\": podFailed}",
                  "      - {from: [Pending, Running], to: Restarting, \"on\": podFailed}\n"
                  "      - {from: Restarting, to: Running, \"on\": podRunning}")
    path.write_text(path.read_text().replace(
        "      Failed: {terminal: failure}\n    transitions:",
        "      Failed: {terminal: failure}\n"
        "      Restarting: {onEnter: [createPod, deletePod]}\n    transitions:"))
    report = checked(path)
    [machine] = report.machines
    twice = [v for v in machine.violations if v.rule == "double-pod"]
    assert twice, "\n".join(report_lines(report))
    position = machine.position(twice[0])
    assert position.line == line_of(path, "to: Restarting, \"on\": podFailed")
    assert "Worker-0" in twice[0].message
    assert twice[0].trace[-1].move.startswith("Worker-0 exits ")


def test_restarts_past_the_backoff_limit_are_reported(tmp_path: Path) -> None:
    path = seeded(tmp_path, "      - {from: [Pending, Running], to: Failed, \"on\": podFailed}",
                  "      - {from: [Pending, Running], to: Restarting, \"on\": podFailed,"
                  " actions: [countRestart, deletePod]}\n"
                  "      - {from: Restarting, to: Pending, \"on\": podGone}")
    path.write_text(path.read_text().replace(
        "      Failed: {terminal: failure}\n    transitions:",
        "      Failed: {terminal: failure}\n      Restarting: {}\n    transitions:").replace(
        "when: \"replicas.Worker.failed > 0\"", "when: \"restarts > 100\"").replace(
        "{from: [Pending, Running], to: Failed, \"on\": podGone}",
        "{from: Running, to: Failed, \"on\": podGone}"))
    report = checked(path, backoff_limit=1)
    [machine] = report.machines
    over = [v for v in machine.violations if v.rule == "backoff-limit"]
    assert over, "\n".join(report_lines(report))
    assert "more than backoffLimit 1" in over[0].message
    assert sum(step.move.startswith("Worker-0 exits") for step in over[0].trace) == 2


def test_a_pass_that_creates_pods_for_a_job_holding_its_replicas_breaks_pod_after_end() -> None:
    definition = load_definitions([SOUND])[0]
    shape = Shape((("Worker", 1),), "Never")
    explorer = _Explorer(definition, shape, Bounds(), (0, 1))
    world = World(definition, build_job(definition, shape, Bounds()), START)
    created = Pass(Decision(MachineRecord(state="Succeeded"), holds_replicas=True), {}, (),
                   (ReplicaId("Worker", 0),), (), (), None)
    assert explorer._check_pass(world, created, ("Succeeded", {}), None,
                                Step("a test", ()))
    [violation] = explorer.violations
    assert violation.rule == "pod-after-end"
    assert violation.where == ("spec", "job", "states", "Succeeded")


def with_spare_state(tmp_path: Path, written: str = "{terminal: failure}") -> Path:
    """The sound machine with a replica state `Spare`, written as given, that its only
    transition (a podFailed when more than 10 replicas are wanted) never reaches."""
    path = seeded(tmp_path, "      Running: {}\n", f"      Running: {{}}\n      Spare: {written}\n")
    path.write_text(path.read_text().replace(
        "      - {from: Running, to: Pending, \"on\": podMissing}",
        "      - {from: Running, to: Pending, \"on\": podMissing}\n"
        "      - {from: Running, to: Spare, \"on\": podFailed, when: \"replica.desired > 10\"}"))
    return path


def test_unreached_states_are_warnings_with_their_position(tmp_path: Path) -> None:
    path = with_spare_state(tmp_path)
    report = checked(path)
    [machine] = report.machines
    assert [u.what for u in machine.unused] == ["replica state Spare is never entered"]
    assert machine.unused[0].position.line == line_of(path, "Spare: {terminal")


def test_the_trace_is_drawn_over_the_machine(tmp_path: Path) -> None:
    path = seeded(tmp_path, "when: \"replicas.Worker.succeeded == replicas.Worker.desired\"",
                  "when: \"false\"")
    report = checked(path)
    [machine] = report.machines
    picture = trace_picture(machine, machine.violations[0], "dot").decode()
    assert "digraph" in picture
    assert "Running" in picture


def test_a_machine_with_errors_is_not_explored(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(SOUND.read_text().replace("to: Succeeded,", "to: Nowhere,"))
    report = checked(broken)
    assert not report.ok
    assert report.machines == []
    assert any("Nowhere" in str(d) for d in report.diagnostics)


@pytest.mark.parametrize("replicas", [2])
def test_wider_bounds_explore_more(replicas: int) -> None:
    narrow = checked(SOUND).machines[0].situations
    wide = checked(SOUND, max_replicas=replicas).machines[0].situations
    assert wide > narrow


def test_a_pool_with_more_live_pods_than_its_parallelism_breaks_over_parallelism() -> None:
    definition = load_definitions([MACHINES / "job.yaml"])[0]
    shape = Shape((("Worker", 1),), "Never", pool=(3, 1))
    explorer = _Explorer(definition, shape, Bounds(), (0, 1))
    world = World(definition, build_job(definition, shape, Bounds()), START)
    result = world.reconcile()
    assert sorted(map(str, world.pods)) == ["Worker-0"]
    assert not explorer._check_pass(world, result, (None, {}), None, Step("created", ()))
    # A second live pod in a pool of parallelism 1: as if the engine had admitted Worker-1.
    world.pods[ReplicaId("Worker", 1)] = {**world.pods[ReplicaId("Worker", 0)]}
    assert explorer._check_pass(world, result, (None, {}), None, Step("a test", ()))
    [violation] = explorer.violations
    assert violation.rule == "over-parallelism"
    assert violation.message == ("pool Worker has 2 pods that have not ended (Worker-0, "
                                 "Worker-1), more than its parallelism 1")


def test_pool_shapes_are_checked_only_where_the_kind_has_pools() -> None:
    job_machine = load_definitions([MACHINES / "job.yaml"])[0]
    pools = {s.pool for s in shapes(job_machine, Bounds(restart_policies=("Never",)))}
    assert pools == {None, (2, 1), (3, 2)}
    sound = load_definitions([SOUND])[0]
    assert {s.pool for s in shapes(sound, Bounds())} == {None}
    batch = load_definitions([MACHINES / "batch-job.yaml"])[0]
    per_index = [str(s) for s in shapes(batch, Bounds()) if s.per_index]
    assert per_index == ["Job pool of 2 by 1, backoff per index, restartPolicy Never"]
    assert not any(s.per_index for s in shapes(job_machine, Bounds()))
    assert str(Shape((("Worker", 1),), "Never", pool=(3, 2))) == (
        "Worker pool of 3 by 2, restartPolicy Never")


def test_a_machine_without_pods_says_it_was_not_explored() -> None:
    """batch-cronjob has no replica types: check must not claim a proof over 0 shapes, nor
    call its states unused."""
    report = checked(MACHINES / "batch-cronjob.yaml")
    lines = list(report_lines(report))
    assert lines == [
        f"{MACHINES / 'batch-cronjob.yaml'}: CronJob (machine batch-cronjob): no pods "
        "(governs.replicaTypes: []), so nothing to explore: its job machine was validated, its "
        "schedule is the engine's (tested, not model checked)"]


def test_the_kinds_required_fields_are_in_every_checked_job() -> None:
    """ShardedJob requires spec.input and its machine reads it in a pod value: checked jobs
    built from its CRD (beside the machine) have it, so no pod value fails and no false
    `never-settles` is reported."""
    example = Path(__file__).resolve().parents[3] / "examples" / "custom-kind"
    report = checked(example / "shardedjob-machine.yaml")
    assert report.ok, "\n".join(report_lines(report))
    [machine] = report.machines
    shape = machine.shapes[0].shape
    job = build_job(load_definitions([example / "shardedjob-machine.yaml"])[0], shape,
                    Bounds())
    assert job["spec"]["input"] == "xxxxx"
    assert set(job["spec"]["shards"]) == {"Shard"}


def test_a_job_the_kinds_schema_refuses_is_not_checked_and_its_defaults_are_applied(
    tmp_path: Path,
) -> None:
    """The CRD's CEL rules and defaults are the API server's: ShardedJob's CRD, given a rule
    refusing restartPolicy Always and a default for spec.parallelism, leaves the Always
    shape out (no such job can exist) and every checked job has the default."""
    example = Path(__file__).resolve().parents[3] / "examples" / "custom-kind"
    crd = (example / "shardedjob-crd.yaml").read_text()
    keys_rule = "                  rule: self.all(k, k in [\"Shard\"])\n"
    assert crd.count(keys_rule) == 1
    crd = crd.replace(keys_rule, keys_rule + (
        "                - message: shards are never restarted always\n"
        "                  rule: self.all(k, !has(self[k].restartPolicy)"
        " || self[k].restartPolicy != 'Always')\n"))
    input_field = "              input:\n"
    assert crd.count(input_field) == 1
    crd = crd.replace(input_field, "              parallelism:\n                default: 3\n"
                      "                type: integer\n" + input_field)
    (tmp_path / "shardedjob-crd.yaml").write_text(crd)
    machine = tmp_path / "shardedjob-machine.yaml"
    machine.write_text((example / "shardedjob-machine.yaml").read_text())

    report = checked(machine)

    assert report.ok, "\n".join(report_lines(report))
    [checked_machine] = report.machines
    shapes = [r.shape for r in checked_machine.shapes]
    assert {s.restart_policy for s in shapes} == {"Never", "OnFailure", "ExitCode"}
    definition = load_definitions([machine])[0]
    assert {build_job(definition, s, Bounds())["spec"].get("parallelism") for s in shapes} == {3}


def test_a_state_marked_reached_only_by_failure_rules_is_not_reported(tmp_path: Path) -> None:
    path = with_spare_state(tmp_path, "{terminal: failure, reachedOnlyBy: failureRules}")
    [machine] = checked(path).machines
    assert machine.unused == []


def test_the_shipped_kubeflow_base_marks_the_states_only_failure_rules_reach() -> None:
    [machine] = [m for m in checked(MACHINES / "jaxjob.yaml").machines]
    assert machine.unused == [], [u.what for u in machine.unused]


def test_an_expression_that_cannot_be_evaluated_is_one_error_at_the_expression(
    tmp_path: Path,
) -> None:
    """A pod value that type-checks but fails whenever it is computed: one error at the
    value's line in the machine that wrote it, with how often, not a log line per
    situation; the check fails."""
    path = seeded(tmp_path, "spec:\n  governs:", "spec:\n  pod:\n    env:\n"
                  "      RATIO: \"string(10 / (replica.desired - replica.desired))\"\n"
                  "  governs:")
    report = checked(path)
    assert not report.ok
    [machine] = report.machines
    [(gist, count)] = machine.failed_expressions.items()
    assert gist == ("pod value: 'string(10 / (replica.desired - replica.desired))': "
                    "division by zero in CEL expression")
    assert count > 1
    lines = list(report_lines(report))
    assert lines[1].startswith(f"{path}:{line_of(path, 'RATIO:')}:14: error: an expression "
                               "could not be evaluated (")


def test_a_machine_that_rolls_out_revisions_has_its_rollout_explored() -> None:
    report = checked(MACHINES / "deployment.yaml")
    assert report.ok
    assert list(report_lines(report)) == [
        f"{MACHINES / 'deployment.yaml'}: Deployment (machine deployment): 32 rollout shapes, "
        "591 situations: every rule holds"]
