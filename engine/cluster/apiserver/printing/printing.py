"""What a Table printer is, and the cell formats every printer shares (AGE, labels).

A printer is the column list plus a function from one object to its cells,
always in the server's "wide" form (kubectl hides the priority-1 columns
unless `-o wide`). Durations read exactly like kubectl's HumanDuration.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.cluster.apiserver.registry.selectors import LabelSelector, SelectorError

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

Object = dict[str, Any]
Cells = Callable[[Object, datetime.datetime], list[Any]]


@dataclass(frozen=True)
class Column:
    """One TableColumnDefinition."""

    name: str
    type: str
    description: str
    format: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def _no_conditions(obj: Object) -> list[dict[str, Any]]:
    return []


@dataclass(frozen=True)
class Printer:
    """The columns of a kind, how to fill them, and the row conditions (pods only)."""

    columns: tuple[Column, ...]
    cells: Cells
    conditions: Callable[[Object], list[dict[str, Any]]] = field(default=_no_conditions)


def human_duration(elapsed: datetime.timedelta) -> str:
    """kubectl's `duration.HumanDuration`: 5s, 3m2s, 15m, 5h3m, 2d3h, 40d, 2y30d, 9y."""
    seconds = int(elapsed.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> datetime.datetime | None:
    """An RFC 3339 timestamp (Time or MicroTime) as an aware datetime; None when unset."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def age(moment: datetime.datetime | None, now: datetime.datetime) -> str:
    """The server's `translateTimestampSince`: the time since `moment`, or <unknown>."""
    return human_duration(now - moment) if moment else "<unknown>"


def meta(obj: Object) -> dict[str, Any]:
    metadata: dict[str, Any] = obj.get("metadata") or {}
    return metadata


def section(obj: Object, key: str) -> dict[str, Any]:
    value: dict[str, Any] = obj.get(key) or {}
    return value


def created(obj: Object, now: datetime.datetime) -> str:
    return age(parse_time(meta(obj).get("creationTimestamp")), now)


def format_labels(labels: dict[str, str] | None) -> str:
    if not labels:
        return "<none>"
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


NAME_COLUMN = Column("Name", "string", NAME_DESCRIPTION, format="name")
AGE_COLUMN = Column("Age", "string", CREATION_TIMESTAMP_DESCRIPTION)


def template_containers(pod_template: dict[str, Any]) -> list[str]:
    """layoutContainerCells: names and images of a pod template's containers, comma-joined
    (the CONTAINERS and IMAGES cells of `-o wide`)."""
    containers = [c for c in section(pod_template, "spec").get("containers") or []
                  if isinstance(c, dict)]
    return [",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers)]


def format_label_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: `<none>` for no or an empty selector, `<error>` for one
    that does not parse."""
    if not isinstance(selector, dict):
        return "<none>"
    try:
        text = str(LabelSelector.from_object(selector))
    except SelectorError:
        return "<error>"
    return text or "<none>"
