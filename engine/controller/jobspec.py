"""What a job asks for, read through its machine definition: replica types, run policy, errors.

The definition's `governs` block says where a kind keeps its replica specs and
run policy; this module reads them once per reconcile into a small frozen
view, with the machine's defaults filled in and the kind's validation applied,
so the rest of the engine never walks job dicts by path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.api.kinds import KINDS
from engine.api.runpolicy import MANAGED_BY_JOBMACHINE
from engine.definition import CompiledDefinition

_MODELS: dict[str, type[BaseModel]] = {kind.kind: kind.model for kind in KINDS}


@dataclass(frozen=True)
class ReplicaTypeSpec:
    """One replica type: how many, the pod template, and the restart policy in force."""

    name: str
    replicas: int
    template: Mapping[str, Any]
    restart_policy: str
    template_restart_policy: str | None = None


@dataclass(frozen=True)
class JobSpecView:
    """A job's spec as the engine uses it."""

    replica_types: tuple[ReplicaTypeSpec, ...]
    run_policy: Mapping[str, Any]
    error: str = ""
    types_by_name: Mapping[str, ReplicaTypeSpec] = field(default_factory=dict)
    failure_rules: tuple[Mapping[str, Any], ...] = ()
    """The job's own failure rules, then the machine's defaults: the first match wins."""

    def replica_type(self, name: str) -> ReplicaTypeSpec | None:
        """The spec of a replica type the job declares, if it does."""
        return self.types_by_name.get(name)


def managed_by_us(job: Mapping[str, Any], definition: CompiledDefinition) -> bool:
    """Whether runPolicy.managedBy leaves this job to jobmachine (unset, or jobmachine's value).

    A job that names another controller (e.g. MultiKueue) is left alone entirely: no
    finalizer, no status, no pods.
    """
    governs = definition.definition.spec.governs
    run_policy = read_path(job, governs.run_policy) or {}
    return run_policy.get("managedBy") in (None, "", MANAGED_BY_JOBMACHINE, *governs.managed_by)


def read_path(obj: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted path such as `spec.runPolicy`, or None if any step is missing."""
    value: Any = obj
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def read_job_spec(job: Mapping[str, Any], definition: CompiledDefinition) -> JobSpecView:
    """The view of `job`; `error` says why the job is invalid (its replicas are then empty)."""
    governs = definition.definition.spec.governs
    error = _validation_error(job)
    run_policy = {
        **definition.definition.spec.defaults.run_policy,
        **(read_path(job, governs.run_policy) or {}),
    }
    specs = read_path(job, governs.replica_specs)
    if not error and not isinstance(specs, Mapping):
        error = f"{governs.replica_specs} must be a map of replica type to replica spec"
    if error:
        return JobSpecView((), run_policy, error)
    order = governs.replica_types or list(specs)
    types = tuple(
        _replica_type(name, specs[name], governs.default_restart_policy)
        for name in order
        if name in specs
    )
    unknown = sorted(set(specs) - set(order))
    if unknown:
        return JobSpecView(
            (), run_policy, f"unknown replica types {unknown}; this kind has {list(order)}"
        )
    rules = (*(read_path(job, governs.failure_rules) or ()), *definition.default_failure_rules)
    return JobSpecView(types, run_policy, "", {t.name: t for t in types}, rules)


def _replica_type(name: str, spec: Mapping[str, Any], default_policy: str) -> ReplicaTypeSpec:
    template = spec.get("template") or {}
    return ReplicaTypeSpec(
        name=name,
        replicas=int(spec.get("replicas", 1)),
        template=template,
        restart_policy=str(spec.get("restartPolicy") or default_policy),
        template_restart_policy=(template.get("spec") or {}).get("restartPolicy"),
    )


def _validation_error(job: Mapping[str, Any]) -> str:
    model = _MODELS.get(str(job.get("kind")))
    if model is None:
        return f"no model for kind {job.get('kind')!r}"
    try:
        model.model_validate(dict(job))
    except ValidationError as exc:
        return "; ".join(_describe(error) for error in exc.errors())
    return ""


def _describe(error: Mapping[str, Any]) -> str:
    """`spec.pytorchReplicaSpecs.Worker.replicas: Input should be ...`: the field, then why."""
    location = ".".join(str(part) for part in error.get("loc", ()))
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    head, separator, rest = message.partition(": ")
    if separator and location and " " not in head:
        return f"{location}.{head}: {rest}"
    return f"{location}: {message}" if location else message
