"""What a job is told when its machine's expressions cannot be evaluated at run time.

A guard, message, timeout or action argument that fails while a job runs (a field the job
leaves out that the machine reads without `has()`, a division by zero, a value of the
wrong type) counts as false or empty for that pass and the job goes on; nothing else
shows it, and a job whose guard always fails can wait for ever. So each distinct failure
is said once per job and machine revision: a Warning Event `MachineEvaluationError` on
the job, and the same words in the log, naming the machine, its revision, the field of
the StateMachine where the expression is written and the expression as written there
(not with its named expressions expanded). The same failure in later passes says nothing
more: a decision is taken again at every pass, and an Event or a log line each time would
flood both. Pod values that cannot be computed have their own Event (`PodTemplateError`,
`reconcile.actions`).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.controller.reporting.events import EventRecorder
from engine.controller.reporting.job_log import JobNamed, job_logger, warn_job
from engine.definition import CompiledDefinition
from engine.definition.expressions import compile_expressions
from engine.definition.loader import build_definitions, object_definition
from engine.definition.positions import Path

REASON = "MachineEvaluationError"

MAX_SAID_PER_JOB = 20
"""Distinct failures said per job and revision; past it they go to the log at debug (a
failure whose words carry changing values must not flood the job's events)."""

_SITES_KEPT = 16
"""Machine revisions whose expression sites are kept (worked out on a first failure)."""

_REPLICA_PREFIX = re.compile(r"^[A-Za-z][\w-]*-\d+: ")


def without_replica(error: str) -> str:
    """An evaluation error without the replica it was for (`worker-0: `): the same failure
    of a replica machine's expression is one failure, whichever replica met it."""
    return _REPLICA_PREFIX.sub("", error)


class KeyedJob(JobNamed, Protocol):
    """A job's key that also gives its id, unique across kinds (`JobKey`)."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True)
class Failure:
    """One evaluation error, taken apart."""

    context: str
    """What was being evaluated (`transition 3 guard`), empty for a pod or object value."""
    field_path: str
    """The field of the revision's document (bases merged in) where the expression is
    written (`spec.job.transitions[2].when`)."""
    named: str | None
    """The name of what holds the expression (a transition's, an action's), if it has one."""
    written: str
    """The expression as the machine writes it (named expressions not expanded)."""
    why: str
    """The evaluator's words."""


class _Sites:
    """Each expression of one machine revision, found by the source its errors quote."""

    def __init__(self, definition: CompiledDefinition) -> None:
        [loaded], _ = build_definitions([object_definition(definition.source)])
        self._loaded = loaded
        self._table = compile_expressions(loaded)
        self._source = definition.source

    def failure(self, error: str) -> Failure | None:
        quoted = self._table.quoted_by(error)
        if quoted is None:
            return None
        path, source = quoted
        context, _, why = error.partition(f"{source!r}: ")
        written = _at(self._source, path)
        holder = _at(self._source, path[:-1])
        named = holder.get("name") if isinstance(holder, Mapping) else None
        return Failure(context.removesuffix(": "), self._loaded.positions.value(path).field_path,
                       named if isinstance(named, str) else None,
                       written if isinstance(written, str) else str(written), why)


def _at(document: Any, path: Path) -> Any:
    for step in path:
        document = document[step]
    return document


@dataclass
class _Said:
    definition: CompiledDefinition
    gists: set[str] = field(default_factory=set)


def describe(definition: CompiledDefinition, revision: str, error: str,
             failure: Failure | None) -> str:
    """The words of one failure: the machine and its revision, what was evaluated, where
    it is written in the revision (its ControllerRevision's `data`) and as what, and why it
    failed; the error as it is when it quotes no expression of the machine."""
    machine = f"machine {definition.name} (revision {revision})"
    if failure is None:
        return f"{machine}: {error}"
    named = f" ({failure.named})" if failure.named else ""
    return (f"{machine}: {failure.context or 'expression'} at data.{failure.field_path}{named} "
            f"cannot be evaluated: {failure.written!r}: {failure.why}")


class EvaluationErrors:
    """Says each job's run-time evaluation failures once per machine revision (see the
    module docstring); safe to use from several workers (never two for one job)."""

    def __init__(self, recorder: EventRecorder) -> None:
        self._recorder = recorder
        self._said: dict[str, _Said] = {}
        self._sites: OrderedDict[int, tuple[CompiledDefinition, _Sites]] = OrderedDict()
        self._lock = threading.Lock()

    def report(self, key: KeyedJob, job: Mapping[str, Any], *,
               definition: CompiledDefinition, revision: str, errors: Sequence[str]) -> None:
        """Say the failures of `errors` not said before for this job and revision."""
        if not errors:
            return
        said = self._said.get(key.id)
        if said is None or said.definition is not definition:
            said = self._said[key.id] = _Said(definition)
        for error in dict.fromkeys(map(without_replica, errors)):
            if error in said.gists:
                continue
            if len(said.gists) >= MAX_SAID_PER_JOB:
                job_logger(key).debug(f"machine evaluation error: {error}")
                continue
            said.gists.add(error)
            message = describe(definition, revision, error, self._failure(definition, error))
            warn_job(self._recorder, job, key, REASON, message)

    def forget(self, key_id: str) -> None:
        """The job is gone: a job made again with its name is told afresh."""
        self._said.pop(key_id, None)

    def _failure(self, definition: CompiledDefinition, error: str) -> Failure | None:
        with self._lock:
            known = self._sites.get(id(definition))
            if known is None or known[0] is not definition:
                known = (definition, _Sites(definition))
                self._sites[id(definition)] = known
                while len(self._sites) > _SITES_KEPT:
                    self._sites.popitem(last=False)
            self._sites.move_to_end(id(definition))
        return known[1].failure(error)
