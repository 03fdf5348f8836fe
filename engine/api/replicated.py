"""One model of a replicated job, for every kind: replica specs, run policy, failure rules.

A job kind is data (a CRD and a StateMachine), so the engine cannot hold a model
per kind. What every kind shares is checked here, wherever the kind keeps it
(its machine's `governs` names the fields); what is a kind's own is checked by
its CRD (the API server) and by its machine's CEL validation rules (the engine).
Messages start with the field's full path, e.g.
`spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image: ...`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from typing import Any

from pydantic import TypeAdapter, ValidationError

from engine.api.objects import job_name_problem
from engine.api.policies import FailureRule
from engine.api.replicas import ReplicaSpecFields, container_problems
from engine.api.runpolicy import RunPolicy
from engine.definition.errors import format_field_path

_SPECS = TypeAdapter(dict[str, ReplicaSpecFields])
_ONE_SPEC = TypeAdapter(ReplicaSpecFields)
_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,30}$")
_RULES = TypeAdapter(list[FailureRule])
_RUN_POLICY = TypeAdapter(RunPolicy)


@dataclass(frozen=True)
class JobLayout:
    """Where a kind keeps the parts every replicated job has, and what it allows there."""

    replica_specs: str
    """Dotted path of the replica type -> replica spec map, e.g. spec.pytorchReplicaSpecs."""
    run_policy: str = "spec.runPolicy"
    failure_rules: str = "spec.failureRules"
    replica_types: Sequence[str] | None = None
    """The replica types the kind has; None: any name (letters and digits)."""
    main_container: str | None = None
    """A container every pod template must have, by name (the framework's)."""
    pools: bool = False
    """Whether a replica spec may be a pool (completions, parallelism, completionMode)."""
    single_type: str | None = None
    """A kind with one replica type (batch/v1 Job): `replica_specs` is the path of its one
    replica spec, and this its type's name."""
    listed: bool = False
    """The replica specs are a list, each spec named by its `name` (JobSet's replicatedJobs)."""
    pod_templates: bool = True
    """Whether each template is a pod's (its containers are checked); False where the replicas
    are objects of another kind (a machine's spec.child), whose API server checks them."""

    def spec_path(self, name: str, names: Sequence[str] = ()) -> str:
        """Where the replica spec of type `name` is, as a message names it (`names`: the
        types in the job's order, which a listed spec's path counts by)."""
        if self.single_type:
            return self.replica_specs
        if self.listed and name in names:
            return f"{self.replica_specs}[{list(names).index(name)}]"
        return f"{self.replica_specs}.{name}"


def replica_specs_of(job: Mapping[str, Any], layout: JobLayout) -> Any:
    """The job's replica type -> replica spec map, in the job's order (None, or what is
    there, when it is not of the layout's form; `list_problems` says why)."""
    found = read_path(job, layout.replica_specs)
    if layout.listed:
        return _listed(found) if not list_problems(found, layout) else found
    if layout.single_type is None:
        return found
    return {layout.single_type: found} if isinstance(found, Mapping) else None


def _listed(specs: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """A valid list of named specs as type -> spec (the name left out), in list order."""
    return {str(spec[LIST_KEY]): {k: v for k, v in spec.items() if k != LIST_KEY}
            for spec in specs}


def as_list(specs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Type -> spec as a listed layout writes it: each spec named by its type, in order
    (what `replica_specs_of` reads back)."""
    return [{LIST_KEY: name, **spec} for name, spec in specs.items()]


LIST_KEY = "name"
"""The field naming each replica spec of a listed layout."""
LIST_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,29}[a-z0-9])?$"
"""A listed spec's name: a DNS label of at most 31 characters (pods are named after it)."""
_LIST_NAME = re.compile(LIST_NAME_PATTERN)


def list_problems(found: Any, layout: JobLayout) -> list[str]:
    """Why `found` is not a list of named replica specs (a listed layout); [] when it is."""
    path = layout.replica_specs
    if not isinstance(found, list) or not found:
        return [f"{path}: must be a list of replica specs with at least 1 entry"]
    problems: list[str] = []
    seen: set[str] = set()
    for index, spec in enumerate(found):
        where = f"{path}[{index}]"
        if not isinstance(spec, Mapping):
            problems.append(f"{where}: must be a replica spec (an object)")
            continue
        name = spec.get(LIST_KEY)
        if not isinstance(name, str) or not _LIST_NAME.match(name):
            problems.append(f"{where}.{LIST_KEY}: must be a DNS label of at most 31 characters "
                            f"(lower-case letters, digits and '-') (got {name!r})")
        elif name in seen:
            problems.append(f"{where}.{LIST_KEY}: duplicate name {name!r}")
        else:
            seen.add(name)
    return problems


def write_path(obj: dict[str, Any], dotted: str, value: Any) -> None:
    """Set `value` at a dotted path such as `spec.runPolicy`, making the maps on the way."""
    *parents, last = dotted.split(".")
    for part in parents:
        obj = obj.setdefault(part, {})
    obj[last] = value


def read_path(obj: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted path such as `spec.runPolicy`, or None if any step is missing."""
    value: Any = obj
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def job_problems(job: Mapping[str, Any], layout: JobLayout) -> list[str]:
    """Why the job is not a valid replicated job of this layout; empty when it is."""
    found = job_name_problem((job.get("metadata") or {}).get("name"))
    if layout.listed:
        given = read_path(job, layout.replica_specs)
        if listed := list_problems(given, layout):
            return found + listed
        specs: Any = _listed(given)
    else:
        specs = replica_specs_of(job, layout)
    if not isinstance(specs, Mapping) or not specs:
        wanted = ("a replica spec" if layout.single_type
                  else "a map of replica type to replica spec with at least 1 entry")
        found.append(f"{layout.replica_specs}: must be {wanted}")
        return found
    names = list(specs)
    if layout.listed:
        for name, spec in specs.items():
            found += _validated(_ONE_SPEC, spec, layout.spec_path(name, names))
    elif layout.single_type is None:
        found += _validated(_SPECS, specs, layout.replica_specs)
    else:
        found += _validated(_ONE_SPEC, specs[layout.single_type], layout.replica_specs)
    found += _validated(_RUN_POLICY, _run_policy(job, layout), layout.run_policy)
    rules = read_path(job, layout.failure_rules) or []
    found += _validated(_RULES, rules, layout.failure_rules)
    if found:
        return found
    found += _replica_types(specs, layout)
    for name, spec in specs.items():
        found += pool_problems(layout.spec_path(name, names), spec, pools=layout.pools)
    for name, spec in specs.items() if layout.pod_templates else ():
        found += container_problems(layout.spec_path(name, names), spec, layout.main_container)
    found += _known_types(rules, specs, layout)
    found += _dependency_problems(specs, layout.replica_specs)
    return found


_RUN_POLICY_FIELDS = frozenset(
    field.alias or name for name, field in RunPolicy.model_fields.items())


def _run_policy(job: Mapping[str, Any], layout: JobLayout) -> Mapping[str, Any]:
    """The run policy to check. A kind with one replica spec may keep its run-policy fields
    in that spec among others (batch/v1 Job's backoffLimit beside its template), and so may
    a kind whose replica specs sit inside the run policy's object (JobSet's suspend and
    ttlSecondsAfterFinished beside spec.replicatedJobs): only the run policy's own fields
    are checked there."""
    found = read_path(job, layout.run_policy) or {}
    shared = layout.replica_specs.startswith(f"{layout.run_policy}.")
    if (layout.single_type is None and not shared) or not isinstance(found, Mapping):
        return found
    return {key: value for key, value in found.items() if key in _RUN_POLICY_FIELDS}


def _validated(adapter: TypeAdapter[Any], value: Any, path: str) -> list[str]:
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        return [_describe(path, error) for error in exc.errors()]
    return []


def _describe(path: str, error: Mapping[str, Any]) -> str:
    """`spec.runPolicy.backoffLimit: Input should be ... (got -1)`: the field, then why."""
    location = format_field_path((*path.split("."), *error.get("loc", ())))
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    given = error.get("input")
    if error.get("type") != "missing" and not isinstance(given, Mapping | list):
        message += f" (got {given!r})"
    return f"{location}: {message}"


def _replica_types(specs: Mapping[str, Any], layout: JobLayout) -> list[str]:
    """Types the kind has; any name of letters and digits where it names none (pods and
    services are named `<job>-<type in lower case>-<index>`)."""
    if layout.replica_types is None:
        if layout.listed:
            return []  # list_problems checked the names
        wrong = [name for name in specs if not _TYPE_NAME.match(str(name))]
        return [f"{layout.replica_specs}.{name}: a replica type must match "
                f"{_TYPE_NAME.pattern} (letters and digits)" for name in wrong]
    unknown = [name for name in specs if name not in layout.replica_types]
    if not unknown:
        return []
    return [f"{layout.replica_specs}: unknown replica types {', '.join(unknown)}; this kind "
            f"has {', '.join(layout.replica_types)}"]


def _known_types(
    rules: Sequence[Mapping[str, Any]], specs: Mapping[str, Any], layout: JobLayout
) -> list[str]:
    named = {t for rule in rules for t in rule.get("replicaTypes") or ()}
    unknown = sorted(named - set(specs))
    if not unknown:
        return []
    return [f"{layout.failure_rules}: replicaTypes must name replica types of "
            f"{layout.replica_specs}; unknown: {', '.join(unknown)}"]


def _dependency_problems(specs: Mapping[str, Any], path: str) -> list[str]:
    """`dependsOn` entries naming a `replicaType` (MachineJob's) name other types of the job
    and form no cycle. JobSet's entries name a replicated job by `name` with a status to
    wait for: its machine checks them."""
    waits = {
        name: [d["replicaType"] for d in spec.get("dependsOn") or ()
               if isinstance(d, Mapping) and "replicaType" in d]
        for name, spec in specs.items()
    }
    for name, others in waits.items():
        wrong = sorted({str(o) for o in others if o == name or o not in waits})
        if wrong:
            return [f"{path}.{name}.dependsOn: must name other replica types of {path} (not "
                    f"the type itself); wrong: {', '.join(wrong)}"]
    try:
        tuple(TopologicalSorter(waits).static_order())
    except CycleError as exc:
        cycle = " -> ".join(reversed(exc.args[1]))
        return [f"{path}: dependsOn forms a cycle: {cycle}"]
    return []


POOL_FIELDS = ("completions", "parallelism", "completionMode")
COMPLETION_MODES = ("NonIndexed", "Indexed")


def pool_problems(path: str, spec: Mapping[str, Any], *, pools: bool) -> list[str]:
    """Why a replica spec is not a valid pool ([] when it is one, or is not a pool at all).

    A pool's size is its completions (or, without them, its parallelism: a work queue), so
    it cannot also set `replicas`; an Indexed pool needs its completions, as the Job API.
    """
    given = [name for name in POOL_FIELDS if spec.get(name) is not None]
    if not given:
        return []
    if not pools:
        return [f"{path}: {', '.join(given)}: this kind's replica specs are not pools"]
    found = [f"{path}.{name}: must be an integer greater than or equal to 0 (got {value!r})"
             for name in ("completions", "parallelism")
             if (value := spec.get(name)) is not None
             and (isinstance(value, bool) or not isinstance(value, int) or value < 0)]
    mode = spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        found.append(f"{path}.completionMode: must be NonIndexed or Indexed (got {mode!r})")
    if mode == "Indexed" and spec.get("completions") is None:
        found.append(f"{path}.completions: required when completionMode is Indexed")
    if spec.get("replicas") is not None:
        found.append(f"{path}.replicas: cannot be set with {', '.join(given)}: a pool's size "
                     "is its completions")
    return found
