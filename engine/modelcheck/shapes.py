"""The jobs a model check runs: every small shape of job the machine governs.

A machine decides by replica counts, restart policies, exit codes and run
policy, so the check builds one job per combination of a few replicas per
type and each restart policy, with a backoff limit, a deadline and a pending
timeout set, and asks which exit codes the machine's expressions tell apart.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from engine.api.replicated import as_list
from engine.cluster.apiserver.schema.schema_validation import CompiledSchema
from engine.controller.reconcile.jobspec import validation_error
from engine.definition import CompiledDefinition
from engine.modelcheck.schema_values import merged_under, required_values, setting_variants

START = datetime(2030, 1, 1, tzinfo=UTC)
"""When every checked job is created (the clock is fake; only differences count)."""
RESTART_POLICIES = ("Never", "OnFailure", "Always", "ExitCode")
DEFAULT_TYPE = "Worker"
"""The replica type of a job whose kind does not name its types (MachineJob's are free)."""
SECOND_TYPE = "driver"
"""The second of a listed layout's free types (a DNS label, as listed names are)."""

POOLS = ((2, 1), (3, 2))
"""(completions, parallelism) of the pools checked where the kind's replica specs may be
pools: one member at a time, and two of three at once."""

DEADLINE_S = 3600
PENDING_TIMEOUT_S = 600

_INTEGER = re.compile(r"(?<![\w.])(\d{1,3})(?![\w.])")
_EXIT_CODE_WORDS = ("exitCode", "termination", "failureAction", "reason")


@dataclass(frozen=True)
class Bounds:
    """How far the check goes: each is a flag of `jobmachine check`."""

    max_replicas: int = 1
    max_types: int = 2
    """Replica types in one job: every combination of this many of the kind's types."""
    backoff_limit: int = 1
    restart_policies: tuple[str, ...] = RESTART_POLICIES
    faults: int = 1
    """Disruptions per trace (lost node, deleted pod, suspension, invalid spec)."""
    max_states: int = 20_000
    """Per job shape; a shape with more reachable situations is reported as not explored."""


@dataclass(frozen=True)
class Shape:
    """One job the check runs: replica counts per type and one restart policy for all; with
    `pool`, every type is a pool of (completions, parallelism) instead."""

    counts: tuple[tuple[str, int], ...]
    restart_policy: str
    pool: tuple[int, int] | None = None
    per_index: bool = False
    """An Indexed pool whose indexes have their own back-off (backoffLimitPerIndex, set to
    the bounds' backoff limit, and no global one): only kinds whose specs allow it."""
    when_ended: bool = False
    """Deleted pods are judged once they ended (podReplacementPolicy Failed): only kinds
    whose machine reads it."""
    required: str = ""
    """The job as the kind's schema admits it, as JSON: its required fields with valid
    values (schema_values.py) and the schema's defaults, under what the check sets."""
    setting: tuple[str, str] | None = None
    """An optional setting of the job its machine reads, in words and as the JSON of the
    spec fields it adds (`schema_values.setting_variants`; machines with spec.child)."""
    child: tuple[str, str] | None = None
    """With spec.child: the child's shape in words, and the spec its replica specs'
    templates give each child, as JSON (a job of the child's machine, as its check builds
    one); the restart policy is then the child's, not this shape's."""
    referenced: tuple[str, str] | None = None
    """With governs.references: the objects the job finds where it looks, in words and as
    JSON (`referenced.referenced_variants`: those there from the start, those created
    later)."""

    def __str__(self) -> str:
        if self.pool is not None:
            completions, parallelism = self.pool
            replicas = " ".join(f"{t} pool of {completions} by {parallelism}"
                                for t, _ in self.counts)
        else:
            replicas = " ".join(f"{t}x{n}" for t, n in self.counts)
        indexed = ", backoff per index" if self.per_index else ""
        ended = ", deleted pods judged once ended" if self.when_ended else ""
        found = f", {self.referenced[0]}" if self.referenced is not None else ""
        if self.child is not None:
            setting = f", {self.setting[0]}" if self.setting is not None else ""
            return f"{replicas}{indexed}{ended}{setting}, each child {self.child[0]}{found}"
        return f"{replicas}{indexed}{ended}, restartPolicy {self.restart_policy}{found}"


def replica_types(definition: CompiledDefinition) -> list[str]:
    """The replica types the kind names, else one generic type (a DNS label where the
    types are the names of listed specs)."""
    governs = definition.governs
    if governs.replica_list and not governs.replica_types:
        # Listed specs are named freely and ordered (JobSet steps its replicated jobs in
        # order): two, to tell first from second.
        return [DEFAULT_TYPE.lower(), SECOND_TYPE]
    return list(governs.replica_types or [DEFAULT_TYPE])


def shapes(definition: CompiledDefinition, bounds: Bounds,
           schema: Mapping[str, Any] | None = None,
           children: Sequence[tuple[str, str]] = (),
           referenced: Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None = None
           ) -> Iterator[Shape]:
    """Every job of up to `max_types` of the kind's replica types with 1..max_replicas
    each, under each restart policy, that the machine's validations accept; with the
    kind's `schema`, each has the fields it requires and its defaults, and a job the
    schema refuses (its types, bounds, enums or CEL rules) is no shape: no such job
    can exist. A machine whose replicas are child objects (spec.child) takes, instead of
    restart policies, each of `children` (the child's shape in words, its spec as JSON).
    A machine that names objects (governs.references) takes each of the variants
    `referenced` gives for the job (`referenced.referenced_variants`)."""
    required = ""
    admit = admission(schema)
    if schema is not None:
        # The check writes the job's spec whatever the schema requires of the object.
        required = _body_json(required_values(schema, {"spec": {}}))
    types = replica_types(definition)
    # Where the replicas are children, the optional settings the machine reads vary too
    # (JobSet's failure, success and startup policies): a pod machine's run policy limits
    # are set in every shape instead.
    settings: list[tuple[str, str] | None] = [None]
    if schema is not None and definition.child is not None:
        settings += [(words, json.dumps(fields, sort_keys=True)) for words, fields in
                     setting_variants(schema, repr(definition.source), bounds.backoff_limit)]
    pools: tuple[tuple[int, int] | None, ...] = (
        (None, *POOLS) if definition.governs.pools else (None,))
    # Per-index back-off is explored where the machine's expressions read it.
    indexed = "backoffLimitPerIndex" in repr(definition.source)
    # So is podReplacementPolicy Failed (deleted pods judged once they ended).
    replacement = "podReplacementPolicy" in repr(definition.source)
    for size in range(1, min(bounds.max_types, len(types)) + 1):
        for chosen in itertools.combinations(types, size):
            if not definition.governs.replica_types and chosen != tuple(types[:size]):
                continue  # free names are told apart by their order only
            for counts in itertools.product(range(1, bounds.max_replicas + 1), repeat=size):
                for policy, pool, setting, child in _variants(definition, bounds, pools,
                                                              children, settings):
                    if setting is not None and size > 1:
                        continue  # settings with one type each: several cost 3-6x each
                    if pool is not None and any(n != 1 for n in counts):
                        continue  # a pool's size is its completions: one shape per pool
                    # The smaller pool only, restartPolicy Never only: without a job-wide
                    # limit, OnFailure's restarts in place would count on for ever.
                    smallest = pool == POOLS[0] and policy == "Never"
                    variants = [(False, False)]
                    variants += [(True, False)] if indexed and smallest else []
                    variants += [(False, True)] if replacement and smallest else []
                    for per_index, when_ended in variants:
                        shape = Shape(tuple(zip(chosen, counts, strict=True)), policy, pool,
                                      per_index, when_ended, required, setting, child)
                        admitted = admit(build_job(definition, shape, bounds))
                        if admitted is None or validation_error(admitted, definition):
                            continue
                        if schema is not None:
                            shape = replace(shape, required=_body_json(admitted))
                        if referenced is None:
                            yield shape
                            continue
                        for variant in referenced(admitted):
                            yield replace(shape, referenced=variant)


_Variant = tuple[str, tuple[int, int] | None, tuple[str, str] | None, tuple[str, str] | None]


def _variants(definition: CompiledDefinition, bounds: Bounds,
              pools: tuple[tuple[int, int] | None, ...], children: Sequence[tuple[str, str]],
              settings: Sequence[tuple[str, str] | None]) -> Iterator[_Variant]:
    """(restart policy, pool, setting, child) of each shape of one set of replica counts."""
    if definition.child is not None:
        for child, pool, setting in itertools.product(children, pools, settings):
            yield "", pool, setting, child
        return
    for policy, pool in itertools.product(bounds.restart_policies, pools):
        yield policy, pool, None, None


def _body_json(job: Mapping[str, Any]) -> str:
    """A job's fields below its identity (apiVersion, kind, metadata), as the JSON a shape
    keeps ("" when there are none)."""
    body = {k: v for k, v in job.items() if k not in ("apiVersion", "kind", "metadata")}
    return json.dumps(body, sort_keys=True) if body else ""


def admission(schema: Mapping[str, Any] | None
               ) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The job as the API server would store it under the kind's schema (pruned,
    defaulted), or None when the schema refuses it; without a schema, the job as built."""
    if schema is None:
        return lambda job: job
    compiled = CompiledSchema(schema)

    def admit(job: dict[str, Any]) -> dict[str, Any] | None:
        result = compiled.apply(job)
        return None if result.causes else result.obj

    return admit


def build_job(definition: CompiledDefinition, shape: Shape, bounds: Bounds) -> dict[str, Any]:
    """A job of the machine's kind in this shape, with every run-policy limit the check
    explores set."""
    governs = definition.governs
    container = definition.definition.spec.pod.container or "main"
    size: dict[str, int | str] = {}
    if shape.pool is not None:
        size = {"completions": shape.pool[0], "parallelism": shape.pool[1]}
    if shape.per_index:
        size |= {"completionMode": "Indexed", "backoffLimitPerIndex": bounds.backoff_limit}
    specs: dict[str, dict[str, Any]] = {
        name: {
            **(size or {"replicas": count}),
            "restartPolicy": shape.restart_policy,
            "template": {"spec": {"containers": [
                {"name": container, "image": "example/check:1", "command": ["train"]}]}},
        } if shape.child is None else {
            **(size or {"replicas": count}), "template": {"spec": json.loads(shape.child[1])},
        }
        for name, count in shape.counts
    }
    job: dict[str, Any] = {
        "apiVersion": governs.api_version,
        "kind": governs.kind,
        "metadata": {"name": "checked", "namespace": "check", "uid": "uid-checked",
                     "generation": 1},
    }
    if governs.replica_spec is not None:
        # A kind with one replica spec (batch/v1 Job) takes the pod's restartPolicy.
        ((_, one),) = specs.items()
        if shape.child is None:
            one["template"]["spec"]["restartPolicy"] = one.pop("restartPolicy")
        _put(job, governs.replica_spec, one)
    elif governs.replica_list:
        *parents, last = governs.replica_specs.split(".")
        _put(job, ".".join(parents), {last: as_list(specs)})
    else:
        _put(job, governs.replica_specs, specs)
    limits: dict[str, int | str] = {"activeDeadlineSeconds": DEADLINE_S,
                                    "pendingTimeoutSeconds": PENDING_TIMEOUT_S}
    if not shape.per_index:
        limits["backoffLimit"] = bounds.backoff_limit
    if shape.when_ended:
        limits["podReplacementPolicy"] = "Failed"
    _put(job, governs.run_policy, limits)
    if shape.setting is not None:
        _put(job, "spec", json.loads(shape.setting[1]))
    return merged_under(json.loads(shape.required), job) if shape.required else job


def _put(job: dict[str, Any], dotted: str, value: dict[str, Any]) -> None:
    """Set the map at `dotted`, merged into one already there (a kind may keep its run
    policy in its one replica spec: batch/v1 Job's `spec`)."""
    *parents, last = dotted.split(".")
    here = job
    for part in parents:
        here = here.setdefault(part, {})
    here[last] = {**(here.get(last) or {}), **value}


def exit_codes(definition: CompiledDefinition, sources: Sequence[str]) -> tuple[int, ...]:
    """Exit codes that stand for each class the machine's expressions can tell apart.

    0 and 1 always; for every small integer an expression about the pod's end
    compares against (`exitCode >= 128`, `exitCode in [137, 143]`), that number
    and the one above it. The machine's default failure rules count too.
    """
    found = {0, 1}
    texts = [s for s in sources if any(word in s for word in _EXIT_CODE_WORDS)]
    texts += [repr(rule) for rule in definition.default_failure_rules]
    for text in texts:
        for match in _INTEGER.finditer(text):
            value = int(match.group(1))
            if 0 < value < 256:
                found |= {value, min(value + 1, 255)}
    return tuple(sorted(found))
