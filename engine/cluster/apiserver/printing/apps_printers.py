"""The columns `kubectl get deployments`, `replicasets` and `replicationcontrollers` show.

A Deployment shows READY as ready against desired replicas (`2/3`), then UP-TO-DATE and
AVAILABLE from its status; a ReplicaSet and a ReplicationController show DESIRED, CURRENT
and READY counts. `-o wide` adds the template's containers, images and the selector, each
kind formatting it as its upstream printer does: a Deployment's as selector text
(`<invalid>` when it does not parse), a ReplicaSet's through FormatLabelSelector
(`<none>` when empty), a ReplicationController's label map as `k=v` pairs.
"""

from __future__ import annotations

import datetime
from typing import Any

from engine.cluster.apiserver.printing.printing import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Object,
    Printer,
    created,
    format_label_selector,
    format_labels,
    meta,
    section,
    template_containers,
)
from engine.cluster.apiserver.registry.selectors import LabelSelector, SelectorError


def _count(values: dict[str, Any], name: str) -> int:
    value = values.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _wide(what: str) -> tuple[Column, ...]:
    return (
        Column("Containers", "string", "Names of each container in the template.", priority=1),
        Column("Images", "string", "Images referenced by each container in the template.",
               priority=1),
        Column("Selector", "string", f"The label selector of the {what}'s pods.", priority=1),
    )


def _deployment_selector(selector: Any) -> str:
    """LabelSelectorAsSelector's text: empty for no or an empty selector."""
    if not isinstance(selector, dict):
        return ""
    try:
        return str(LabelSelector.from_object(selector))
    except SelectorError:
        return "<invalid>"


def _deployment_cells(deployment: Object, now: datetime.datetime) -> list[Any]:
    spec, status = section(deployment, "spec"), section(deployment, "status")
    return [
        meta(deployment).get("name", ""),
        f"{_count(status, 'readyReplicas')}/{_count(spec, 'replicas')}",
        _count(status, "updatedReplicas"),
        _count(status, "availableReplicas"),
        created(deployment, now),
        *template_containers(section(spec, "template")),
        _deployment_selector(spec.get("selector")),
    ]


def _replica_cells(selector_text: Any) -> Any:
    def cells(obj: Object, now: datetime.datetime) -> list[Any]:
        spec, status = section(obj, "spec"), section(obj, "status")
        return [
            meta(obj).get("name", ""),
            _count(spec, "replicas"),
            _count(status, "replicas"),
            _count(status, "readyReplicas"),
            created(obj, now),
            *template_containers(section(spec, "template")),
            selector_text(spec.get("selector")),
        ]
    return cells


def _label_map(selector: Any) -> str:
    return format_labels(selector if isinstance(selector, dict) else None)


def _replica_printer(what: str, selector_text: Any) -> Printer:
    return Printer(
        (
            NAME_COLUMN,
            Column("Desired", "integer", f"Number of pods the {what} wants."),
            Column("Current", "integer", f"Number of pods the {what} has."),
            Column("Ready", "integer", f"Number of the {what}'s pods that are ready."),
            AGE_COLUMN,
            *_wide(what),
        ),
        _replica_cells(selector_text),
    )


DEPLOYMENT_PRINTER = Printer(
    (
        NAME_COLUMN,
        Column("Ready", "string", "Number of the pod with ready state"),
        Column("Up-to-date", "string",
               "Pods of the Deployment that have its current pod template."),
        Column("Available", "string",
               "Pods of the Deployment that have been ready for at least minReadySeconds."),
        AGE_COLUMN,
        *_wide("Deployment"),
    ),
    _deployment_cells,
)
REPLICA_SET_PRINTER = _replica_printer("ReplicaSet", format_label_selector)
REPLICATION_CONTROLLER_PRINTER = _replica_printer("ReplicationController", _label_map)
