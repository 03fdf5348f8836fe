"""What a job asks for, read through its machine definition: replica types, run policy, errors.

The definition's `governs` block says where a kind keeps its replica specs and
run policy; this module reads them once per reconcile into a small frozen
view, with the machine's defaults filled in and the kind's validation applied,
so the rest of the engine never walks job dicts by path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.api.replicated import (
    POOL_FIELDS,
    JobLayout,
    job_problems,
    read_path,
    replica_specs_of,
)
from engine.api.runpolicy import MANAGED_BY_JOBMACHINE
from engine.controller.machines.served import BUILT_IN_JOB_KINDS
from engine.definition import CompiledDefinition, broken_rules, render_replacement_policy
from engine.definition.cel import CelEvaluationError, selected_paths


@dataclass(frozen=True)
class ReplicaTypeSpec:
    """One replica type: how many, the pod template, and the restart policy in force.

    `replicas` counts its members (indexes 0..replicas-1). A fixed set runs them all at
    once; a pool (`parallelism` set) gives at most `parallelism` of them a pod at a time,
    lowest index first, and each member is done once it reaches a terminal state.
    """

    name: str
    replicas: int
    template: Mapping[str, Any]
    restart_policy: str
    template_restart_policy: str | None = None
    parallelism: int | None = None
    """A pool's bound on members that have a pod at once; None: not a pool."""
    completions: int | None = None
    """A pool's completions; None for a work queue (its members are `parallelism`)."""
    indexed: bool = False
    """An Indexed pool: each member's pods carry its index."""

    @property
    def pool(self) -> bool:
        """Whether members are admitted `parallelism` at a time (a pool)."""
        return self.parallelism is not None

    @property
    def at_once(self) -> int:
        """How many members may have a pod at once."""
        return self.replicas if self.parallelism is None else min(self.parallelism,
                                                                   self.replicas)


@dataclass(frozen=True)
class JobSpecView:
    """A job's spec as the engine uses it."""

    replica_types: tuple[ReplicaTypeSpec, ...]
    run_policy: Mapping[str, Any]
    error: str = ""
    types_by_name: Mapping[str, ReplicaTypeSpec] = field(default_factory=dict)
    failure_rules: tuple[Mapping[str, Any], ...] = ()
    """The job's own failure rules, then the machine's defaults: the first match wins."""
    judge_deleted_when_ended: bool = False
    """Whether a pod being deleted is judged once it has ended (the machine's
    `pod.replacementPolicy` Failed), not when its deletion starts."""

    def replica_type(self, name: str) -> ReplicaTypeSpec | None:
        """The spec of a replica type the job declares, if it does."""
        return self.types_by_name.get(name)


def managed_by_us(
    job: Mapping[str, Any], definition: CompiledDefinition, *, stand_in: bool = False
) -> bool:
    """Whether runPolicy.managedBy leaves this job to jobmachine (unset, or jobmachine's value).

    A job that names another controller (e.g. MultiKueue) is left alone entirely: no
    finalizer, no status, no pods. A built-in kind's job (batch/v1 Job) that leaves it
    unset, or names the built-in controller, is that controller's, unless the engine
    stands in for it (`stand_in`: `jobmachine up`, whose cluster has none).
    """
    governs = definition.definition.governs
    run_policy = read_path(job, governs.run_policy) or {}
    value = run_policy.get("managedBy")
    if value == MANAGED_BY_JOBMACHINE:
        return True
    if (governs.api_version, governs.kind) in BUILT_IN_JOB_KINDS and not stand_in:
        return False
    return value in (None, "", *governs.managed_by)


def read_job_spec(
    job: Mapping[str, Any], definition: CompiledDefinition, *,
    verdicts: ValidationVerdicts | None = None,
) -> JobSpecView:
    """The view of `job`; `error` says why the job is invalid (its replicas are then empty).

    With `verdicts`, a job's validation is judged once per spec generation (see there).
    """
    governs = definition.definition.governs
    error = (verdicts.error(job, definition) if verdicts is not None
             else validation_error(job, definition))
    fallbacks = {field: read_path(job, path)
                 for field, path in governs.run_policy_fallbacks.items()}
    run_policy = {
        **definition.definition.spec.defaults.run_policy,
        **{field: value for field, value in fallbacks.items() if value is not None},
        **(read_path(job, governs.run_policy) or {}),
    }
    layout = layout_of(definition)
    specs = replica_specs_of(job, layout)
    if not error and not isinstance(specs, Mapping):
        wanted = "a list of named replica specs" if layout.listed else (
            "a map of replica type to replica spec")
        error = f"{layout.replica_specs} must be {wanted}"
    if error:
        return JobSpecView((), run_policy, error)
    order = list(specs) if layout.listed else governs.replica_types or list(specs)
    template_field = definition.child.template if definition.child is not None else "template"
    types = tuple(
        _replica_type(name, specs[name], governs.default_restart_policy, pools=governs.pools,
                      template_field=template_field)
        for name in order
        if name in specs
    )
    unknown = sorted(set(specs) - set(order))
    if unknown:
        return JobSpecView(
            (), run_policy, f"unknown replica types {unknown}; this kind has {list(order)}"
        )
    rules = (*(read_path(job, governs.failure_rules) or ()), *definition.default_failure_rules)
    try:
        when_ended = render_replacement_policy(definition, job) == "Failed"
    except CelEvaluationError as exc:
        return JobSpecView((), run_policy, f"pod.replacementPolicy: {exc}")
    return JobSpecView(types, run_policy, "", {t.name: t for t in types}, rules, when_ended)


def _replica_type(
    name: str, spec: Mapping[str, Any], default_policy: str, *, pools: bool,
    template_field: str = "template",
) -> ReplicaTypeSpec:
    """`template_field` holds the pod's template, or spec.child's object's `{metadata,
    spec}`."""
    template = spec.get(template_field) or {}
    fixed = ReplicaTypeSpec(
        name=name,
        replicas=int(spec.get("replicas", 1)),
        template=template,
        restart_policy=str(spec.get("restartPolicy") or default_policy),
        template_restart_policy=(template.get("spec") or {}).get("restartPolicy"),
    )
    if not pools or all(spec.get(field) is None for field in POOL_FIELDS):
        return fixed
    # Defaults as the Job API's: parallelism 1; without completions, a work queue of
    # `parallelism` members.
    parallelism = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
    completions = spec.get("completions")
    return replace(
        fixed,
        replicas=parallelism if completions is None else int(completions),
        parallelism=parallelism,
        completions=None if completions is None else int(completions),
        indexed=spec.get("completionMode") == "Indexed",
    )


def layout_of(definition: CompiledDefinition) -> JobLayout:
    """Where the definition's kind keeps the parts every replicated job has."""
    governs = definition.governs
    return JobLayout(
        replica_specs=governs.replica_spec or governs.replica_specs,
        run_policy=governs.run_policy,
        failure_rules=governs.failure_rules,
        replica_types=governs.replica_types,
        main_container=definition.definition.spec.pod.container,
        pools=governs.pools,
        # The schema makes replicaSpec come with exactly one replica type.
        single_type=governs.replica_types[0] if governs.replica_spec and governs.replica_types
        else None,
        listed=governs.replica_list,
        pod_templates=definition.child is None,
    )


def validation_error(job: Mapping[str, Any], definition: CompiledDefinition) -> str:
    """Why the job is invalid for its kind ('' when it is valid): the shared model of a
    replicated job first, then the machine's own rules."""
    problems = job_problems(job, layout_of(definition))
    if not problems:
        problems = list(broken_rules(definition, job))
    return "; ".join(problems)


_FINGERPRINT = ("generation", "labels", "annotations", "finalizers", "deletionTimestamp",
                "ownerReferences")
"""What of a job's metadata a verdict may depend on besides its uid: the spec (through the
generation, which the server raises at every spec change) and the metadata others may edit.
The status is left out: it changes at every reconcile."""


def fingerprint_fields(definition: CompiledDefinition) -> tuple[str, ...]:
    """The fields of `_FINGERPRINT` a verdict under `definition` depends on: the generation,
    and of the rest those its rules read (`job.metadata.labels`), all of them where a rule
    reads the metadata whole or the job itself whole. The shared model reads no metadata
    but the name, which a job keeps. So the engine's own finalizer, added and removed,
    has a job judged once, not three times."""
    read: set[str] = {"generation"}
    for validation in definition.validations:
        for expression in (validation.rule, validation.message_expression):
            if expression is None:
                continue
            for path in selected_paths(expression.source, "job"):
                if path in ((), ("metadata",)):
                    return _FINGERPRINT
                if path[0] == "metadata" and path[1] in _FINGERPRINT:
                    read.add(path[1])
    return tuple(name for name in _FINGERPRINT if name in read)


_REVISIONS_KEPT = 1024
"""Machine revisions whose fingerprint fields are kept at most (all are forgotten past it)."""


class ValidationVerdicts:
    """Each job's validation verdict, judged again only when its spec, metadata or machine
    revision changed.

    Validating costs about a tenth of the engine's CPU per lifecycle (the shared model and
    the machine's CEL rules over the whole job), and a job is reconciled several times per
    spec. A revision whose rules mention `status` is always judged afresh. Bounded: the
    least recently used verdicts go first.
    """

    def __init__(self, size: int = 100_000) -> None:
        self._size = size
        self._verdicts: OrderedDict[str, tuple[tuple[Any, ...], CompiledDefinition, str]] = (
            OrderedDict())
        self._lock = threading.Lock()
        self._fields: dict[int, tuple[CompiledDefinition, tuple[str, ...]]] = {}
        """Per machine revision (by identity), what of the metadata its verdicts read."""

    def error(self, job: Mapping[str, Any], definition: CompiledDefinition) -> str:
        """`validation_error(job, definition)`, remembered."""
        metadata = job.get("metadata") or {}
        uid = metadata.get("uid")
        if not uid or not metadata.get("generation") or _reads_status(definition):
            return validation_error(job, definition)
        fingerprint = tuple(metadata.get(name) for name in self._fingerprint(definition))
        with self._lock:
            known = self._verdicts.get(uid)
            if known is not None and known[1] is definition and known[0] == fingerprint:
                self._verdicts.move_to_end(uid)
                return known[2]
        error = validation_error(job, definition)
        with self._lock:
            self._verdicts[uid] = (fingerprint, definition, error)
            self._verdicts.move_to_end(uid)
            while len(self._verdicts) > self._size:
                self._verdicts.popitem(last=False)
        return error


    def _fingerprint(self, definition: CompiledDefinition) -> tuple[str, ...]:
        known = self._fields.get(id(definition))
        if known is None or known[0] is not definition:
            known = (definition, fingerprint_fields(definition))
            with self._lock:
                if len(self._fields) > _REVISIONS_KEPT:
                    self._fields.clear()
                self._fields[id(definition)] = known
        return known[1]

    def forget(self, uid: str) -> None:
        """Judge this job afresh next time (its spec changed in a way its generation does
        not tell apart: the model checker's branches each edit one parent's spec)."""
        with self._lock:
            self._verdicts.pop(uid, None)


def _reads_status(definition: CompiledDefinition) -> bool:
    return any("status" in validation.rule.source for validation in definition.validations)
