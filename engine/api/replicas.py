"""One replica type of a job: how many pods, from which template, restarted how; and its counts.

Shared by every job kind (Kubeflow's `ReplicaSpec` and `ReplicaStatus`). The pod
template is kept as free-form data, as the engine only decorates it (env,
labels, restart policy) and the API server validates the pod it becomes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field

from engine.api.base import SpecModel, StatusModel

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]


class ReplicaSpec(SpecModel):
    """The pods of one replica type."""

    replicas: int = Field(
        default=1, ge=0, description="How many pods (indexes 0..replicas-1) of this type."
    )
    template: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "A core/v1 PodTemplateSpec (metadata and spec) the replica's pods are made from; "
            "the engine adds its labels, environment and restart policy."
        ),
        json_schema_extra={"x-kubernetes-embedded-resource": False},
    )
    restart_policy: RestartPolicy | None = Field(
        default=None,
        description=(
            "What a finished pod means: Always (recreate it, even after success), OnFailure "
            "(recreate on a non-zero exit), ExitCode (recreate for exit codes >= 128, i.e. "
            "killed by a signal; 1-127 are permanent), Never. Unset: the machine definition's "
            "default for this kind."
        ),
    )


class ReplicaSpecFields(ReplicaSpec):
    """The engine's view of a replica spec: the common fields checked, a kind's own fields
    (e.g. MachineJob's dependsOn) left to its CRD and its machine."""

    model_config = ConfigDict(extra="ignore")


class LabelSelectorRequirement(StatusModel):
    """One `key operator values` term of a label selector."""

    key: str = Field(description="The label key the term applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="How the key relates to the values."
    )
    values: list[str] = Field(
        default_factory=list, description="Values for In and NotIn; empty otherwise."
    )


class LabelSelector(StatusModel):
    """A metav1.LabelSelector: labels that must match, and terms that must hold."""

    match_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels that must all be present with these values."
    )
    match_expressions: list[LabelSelectorRequirement] = Field(
        default_factory=list, description="Terms that must all hold."
    )


class ReplicaStatus(StatusModel):
    """Pod counts of one replica type; a count of 0 is left out, as in Kubeflow (omitempty)."""

    active: int | None = Field(default=None, ge=0, description="Pods of this type running now.")
    succeeded: int | None = Field(
        default=None, ge=0, description="Pods of this type that succeeded."
    )
    failed: int | None = Field(default=None, ge=0, description="Pods of this type that failed.")
    label_selector: LabelSelector | None = Field(
        default=None, description="Deprecated (as in Kubeflow): use selector."
    )
    selector: str | None = Field(
        default=None,
        description="The label selector of this type's pods, in string form (for /scale).",
    )
    unfinished: dict[str, str] | None = Field(
        default=None,
        description=(
            "Only on a job that ended: its replicas of this type whose machines had not "
            "reached an end, by index ranges (`0-3,7`), in words such as `Running, stopped "
            "at job end (pod deleted)`. Left out when every replica ended."
        ),
    )


def container_problems(
    path: str, spec: Mapping[str, Any], main_container: str | None
) -> list[str]:
    """A template without containers, with an image-less one, or without the main one.

    Kubeflow's training operator rejects these too; the API server cannot, because
    the template is free-form in the CRD schema. Each problem starts with the
    field's path, e.g. `spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image`.
    """
    where = f"{path}.template.spec.containers"
    template = spec.get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        return [f"{where}: the template has no containers"]
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping) or not container.get("image"):
            return [f"{where}[{index}].image: every container needs an image"]
    if main_container is not None and all(c.get("name") != main_container for c in containers):
        return [f"{where}: no container is named {main_container!r}"]
    return []
