"""`jobmachine check` on machines whose replicas are child objects (spec.child): the child's
moves are what its own machine (machines/batch-job.yaml) can make of it, found by exploring
that machine, so a parent whose guard on a child's end can never fire is caught."""

from __future__ import annotations

from pathlib import Path

from engine.definition import load_definitions
from engine.modelcheck.check import CheckReport, check_paths
from engine.modelcheck.children import ChildMoves
from engine.modelcheck.report import report_lines
from engine.modelcheck.shapes import START, Bounds, Shape, build_job
from engine.simulation.world import World
from tests.kinds import MACHINES

PARENT = Path(__file__).parent / "machines" / "children.yaml"
BATCH_JOB = MACHINES / "batch-job.yaml"


def seeded(tmp_path: Path, old: str, new: str) -> Path:
    """The parent machine with one line changed."""
    text = PARENT.read_text()
    assert old in text
    path = tmp_path / "seeded.yaml"
    path.write_text(text.replace(old, new).replace("name: parentofjobs", "name: seeded"))
    return path


def checked(*paths: Path) -> CheckReport:
    return check_paths(list(paths), Bounds())


def moves_of(report: CheckReport) -> set[str]:
    return {step.move.split(" ", 2)[-1] for machine in report.machines
            for violation in machine.violations for step in violation.trace}


def test_every_rule_holds_for_a_parent_of_batch_jobs_and_each_state_is_reached() -> None:
    report = checked(PARENT, BATCH_JOB)
    assert report.ok, "\n".join(report_lines(report))
    parent = next(m for m in report.machines if m.definition.name == "parentofjobs")
    assert parent.unused == [], "\n".join(report_lines(report))
    assert parent.situations > 1
    assert report.diagnostics == []


def test_checked_alone_the_shipped_machine_of_the_childs_kind_moves_it() -> None:
    report = checked(PARENT)
    assert report.ok, "\n".join(report_lines(report))
    assert [m.definition.name for m in report.machines] == ["parentofjobs"]


def test_without_any_machine_of_the_childs_kind_the_parent_is_left_unexplored_saying_why(
    tmp_path: Path,
) -> None:
    path = seeded(tmp_path, "    apiVersion: batch/v1\n    kind: Job\n",
                  "    apiVersion: example.com/v1\n    kind: Widget\n")
    report = checked(path)
    assert report.machines == []
    (problem,) = [str(d) for d in report.diagnostics]
    assert ("warning: check does not explore machine seeded: its replicas are Widget "
            "objects (spec.child) and no machine checked with it, nor a shipped one, governs "
            "Widget (example.com/v1)" in problem), problem


def test_the_childs_ends_are_its_machines_terminal_statuses_with_their_reasons() -> None:
    parent, batch_job = load_definitions([PARENT, BATCH_JOB])
    shape = Shape((("Worker", 1),), "", child=("a Job", '{"backoffLimit": 1, '
                  '"activeDeadlineSeconds": 60, "template": {"spec": {"restartPolicy": "Never",'
                  ' "containers": [{"name": "main", "image": "i"}]}}}'))
    world = World(parent, build_job(parent, shape, Bounds()), START)
    world.reconcile()
    (child,) = world.pods.values()
    moves = ChildMoves(parent, {("batch/v1", "Job"): batch_job}, Bounds())
    outcomes = moves.outcomes(child)
    assert sorted(end.label for end in outcomes.ends) == [
        "FailureTarget (BackoffLimitExceeded), Failed (BackoffLimitExceeded)",
        "FailureTarget (DeadlineExceeded), Failed (DeadlineExceeded)",
        "SuccessCriteriaMet (CompletionsReached), Complete (CompletionsReached)",
    ]
    assert outcomes.suspended is not None
    assert [c["reason"] for c in outcomes.suspended.status["conditions"]] == ["JobSuspended"]
    labels = [move.label for move in moves(world)]
    assert "Job checked-worker-0 is ready" in labels
    assert "Job checked-worker-0 is deleted by someone else" in labels


def test_a_guard_on_a_failed_child_that_can_never_fire_is_a_dead_end(tmp_path: Path) -> None:
    path = seeded(tmp_path, 'when: "replicas.Worker.failed > 0"',
                  'when: "replicas.Worker.failed > 0 && lastFailure == \'NoSuchReason\'"')
    report = checked(path, BATCH_JOB)
    assert not report.ok
    seeded_report = next(m for m in report.machines if m.definition.name == "seeded")
    dead = [v for v in seeded_report.violations if v.rule == "dead-end"]
    assert dead, "\n".join(report_lines(report))
    assert "from job state Running (Worker-0 Failed)" in dead[0].message
    assert any(step.move.endswith("ends: FailureTarget (BackoffLimitExceeded), "
                                  "Failed (BackoffLimitExceeded)")
               or step.move.endswith("ends: FailureTarget (DeadlineExceeded), "
                                     "Failed (DeadlineExceeded)")
               for step in dead[0].trace), dead[0].trace
