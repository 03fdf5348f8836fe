"""What `jobmachine check` prints: one line per machine, then each broken rule at its
FILE:LINE:COL with the shortest trace that breaks it, and the unused states as warnings."""

from __future__ import annotations

from collections.abc import Iterator

from engine.modelcheck.check import CheckReport, MachineReport
from engine.modelcheck.explore import Violation
from engine.modelcheck.rollouts import RolloutReport, RolloutViolation
from engine.simulation.picture import path_picture


def report_lines(report: CheckReport) -> Iterator[str]:
    """The whole report, as text lines."""
    yield from (str(d) for d in report.diagnostics)
    for machine in report.machines:
        if machine.shapes or machine.rollout is None:
            yield _summary(machine)
        if machine.rollout is not None:
            yield from _rollout(machine, machine.rollout)
        for gist, count in sorted(machine.failed_expressions.items()):
            yield (f"{machine.expression_position(gist)}: error: an expression could not be "
                   f"evaluated ({count:,} times; what breaks below may follow from it): {gist} "
                   f"({_kind(machine)})")
        for violation in machine.violations:
            yield from _violation(machine, violation)
        for unused in machine.unused if machine.shapes else ():  # unexplored: not unused
            yield f"{unused.position}: warning: {unused.what} ({_kind(machine)})"


def _kind(machine: MachineReport) -> str:
    return machine.definition.governs.kind


def _engines_part(machine: MachineReport) -> str:
    """What such a machine leaves to the engine, which its tests judge and check does not."""
    definition = machine.definition
    if definition.schedule is not None:
        return ", its schedule is the engine's (tested, not model checked)"
    return ""


def _summary(machine: MachineReport) -> str:
    if not machine.shapes:
        return (f"{machine.loaded.path}: {_kind(machine)} (machine {machine.definition.name}): "
                "no pods (governs.replicaTypes: []), so nothing to explore: its job machine "
                f"was validated{_engines_part(machine)}")
    verdict = ("every rule holds" if not machine.violations and machine.complete
               and not machine.failed_expressions
               else "expressions failed" if not machine.violations and machine.complete
               else f"{len(machine.violations)} rule(s) broken" if machine.violations
               else "not fully explored (raise --max-states)")
    child = machine.definition.child
    moved = (f"exit codes {', '.join(map(str, machine.codes))}" if child is None
             else f"{child.kind} children moved by their own machine")
    return (f"{machine.loaded.path}: {_kind(machine)} (machine {machine.definition.name}): "
            f"{len(machine.shapes)} job shapes, {machine.situations:,} situations, "
            f"{moved}: {verdict}")


def _rollout(machine: MachineReport, rollout: RolloutReport) -> Iterator[str]:
    """The rollout's line, then each broken rule at the rollout section."""
    verdict = (f"{len(rollout.violations)} rule(s) broken" if rollout.violations
               else "every rule holds")
    yield (f"{machine.loaded.path}: {_kind(machine)} (machine {machine.definition.name}): "
           f"{rollout.shapes} rollout shapes, {rollout.situations:,} situations: {verdict}")
    position = machine.loaded.positions.key(("spec", "rollout"))
    for violation in rollout.violations:
        yield from _rollout_violation(machine, position, violation)


def _rollout_violation(machine: MachineReport, position: object,
                       violation: RolloutViolation) -> Iterator[str]:
    yield (f"{position}: error: {violation.rule}: {violation.message} "
           f"({_kind(machine)}: {violation.shape})")
    yield f"  shortest trace ({len(violation.trace)} steps):"
    for number, step in enumerate(violation.trace, start=1):
        yield f"    {number}. {step}"


def _violation(machine: MachineReport, violation: Violation) -> Iterator[str]:
    yield (f"{machine.position(violation)}: error: {violation.rule}: {violation.message} "
           f"({_kind(machine)}: {violation.shape})")
    yield f"  shortest trace ({len(violation.trace)} steps):"
    for number, step in enumerate(violation.trace, start=1):
        yield f"    {number}. {step.move}"
        for line in step.engine:
            yield f"         engine: {line}"


def trace_picture(machine: MachineReport, violation: Violation, fmt: str) -> bytes:
    """The machine with the path the broken trace took highlighted, with counts."""
    return path_picture(machine.definition, violation.job.get("status") or {}, fmt=fmt)
