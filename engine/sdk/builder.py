"""`JobBuilder`: a job of any kind from a few typed calls, laid out as its machine says.

Where a kind keeps its replica specs (`spec.pytorchReplicaSpecs`, `spec.shards`), its
run policy and which replica types and main container it has are written in its
machine definition, so the builder reads them there and knows no kind by name. Each
call returns a new builder (a half-built job can be shared and extended safely), and
`build()` checks the job with the engine's own validation, so a mistake is reported
with its field path before the server or the engine sees it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Self

from pydantic import ValidationError

from engine.api.replicated import as_list, write_path
from engine.api.runpolicy import RunPolicy
from engine.controller.reconcile.jobspec import validation_error
from engine.definition import CompiledDefinition
from engine.sdk.errors import InvalidJobError
from engine.sdk.machines import shipped_definition

DEFAULT_CONTAINER = "main"
"""The container's name when the machine names no main container (it then uses the first)."""


@dataclass(frozen=True)
class JobBuilder:
    """A job of `kind` named `name`, built up by `replica`, `run_policy` and `set_field` calls.

    `definition` is the machine governing the kind; by default the shipped one
    (`JobClient.job_builder` passes the cluster's, for kinds added at run time).
    """

    kind: str
    name: str
    namespace: str | None = None
    definition: CompiledDefinition | None = field(default=None, repr=False)
    replica_specs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    run_policy_fields: Mapping[str, Any] = field(default_factory=dict)
    """The run-policy fields given, as given (snake_case)."""
    field_values: Mapping[str, Any] = field(default_factory=dict)
    """Dotted path -> value of the kind's own fields, e.g. `spec.input`."""

    def __post_init__(self) -> None:
        definition = self.definition or shipped_definition(self.kind)
        if definition.governs.kind != self.kind:
            raise InvalidJobError(
                f"machine {definition.name} governs {definition.governs.kind}, not {self.kind}")
        object.__setattr__(self, "definition", definition)

    @property
    def machine(self) -> CompiledDefinition:
        """The definition the job is laid out by."""
        assert self.definition is not None  # set by __post_init__
        return self.definition

    @property
    def container_name(self) -> str:
        """The name the builder gives each replica's container: the machine's main one."""
        return self.machine.definition.spec.pod.container or DEFAULT_CONTAINER

    def replica(
        self, replica_type: str, replicas: int = 1, *, image: str,
        command: Sequence[str] | None = None, args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None, restart_policy: str | None = None,
        resources: Mapping[str, Any] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> Self:
        """With `replicas` pods of `replica_type` running one container of `image`.

        `restart_policy` is the replica's (Never, OnFailure, Always, ExitCode; unset: the
        machine's default); `annotations` go on the pod template.
        """
        allowed = self.machine.governs.replica_types
        if allowed is not None and replica_type not in allowed:
            raise InvalidJobError(f"{self.kind} has no replica type {replica_type!r}; it has "
                                  f"{', '.join(allowed)}")
        container: dict[str, Any] = {"name": self.container_name, "image": image}
        for key, value in (("command", command), ("args", args)):
            if value is not None:
                container[key] = list(value)
        if env:
            container["env"] = [{"name": k, "value": v} for k, v in env.items()]
        if resources:
            container["resources"] = dict(resources)
        template: dict[str, Any] = {"spec": {"containers": [container]}}
        if annotations:
            template["metadata"] = {"annotations": dict(annotations)}
        spec: dict[str, Any] = {"replicas": replicas, "template": template}
        if restart_policy is not None:
            spec["restartPolicy"] = restart_policy
        return replace(self, replica_specs={**self.replica_specs, replica_type: spec})

    def run_policy(self, **fields: Any) -> Self:
        """With these run-policy fields (`RunPolicy`'s, in snake_case: backoff_limit=3)."""
        merged = {**self.run_policy_fields, **fields}
        self._run_policy_document(merged)
        return replace(self, run_policy_fields=merged)

    def set_field(self, path: str, value: Any) -> Self:
        """With the kind's own field at dotted `path` (e.g. `spec.input`) set to `value`."""
        return replace(self, field_values={**self.field_values, path: value})

    def build(self) -> dict[str, Any]:
        """The job document; InvalidJobError naming each problem's field when it is invalid."""
        governs = self.machine.governs
        metadata: dict[str, Any] = {"name": self.name}
        if self.namespace is not None:
            metadata["namespace"] = self.namespace
        job: dict[str, Any] = {"apiVersion": governs.api_version, "kind": self.kind,
                               "metadata": metadata}
        specs = {k: dict(v) for k, v in self.replica_specs.items()}
        write_path(job, governs.replica_specs,
                  as_list(specs) if governs.replica_list else specs)
        if self.run_policy_fields:
            write_path(job, governs.run_policy, self._run_policy_document(self.run_policy_fields))
        for path, value in self.field_values.items():
            write_path(job, path, value)
        problem = validation_error(job, self.machine)
        if problem:
            raise InvalidJobError(f"{self.kind} {self.name}: {problem}")
        return job

    def _run_policy_document(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The run policy as the job spells it (camelCase); InvalidJobError if it is wrong."""
        try:
            checked = RunPolicy.model_validate(fields)
        except ValidationError as exc:
            path = self.machine.governs.run_policy
            raise InvalidJobError("; ".join(
                f"{path}.{'.'.join(map(str, error['loc']))}: {error['msg']}"
                for error in exc.errors())) from exc
        return checked.model_dump(mode="json", exclude_unset=True)

