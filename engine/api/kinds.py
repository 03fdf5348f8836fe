"""How a kind is named and shown to `kubectl`: the records a CRD is built from.

`StateMachine` is the one kind jobmachine serves from a Python model (it is the
machine language itself); every job kind is described by a file in kinds/
(kind_description.py) and its CRD is built from that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from engine.api.statemachine import SHORTHANDS, StateMachine, as_written
from engine.api.structural import Schema, Shorthand

JOBMACHINE_GROUP = "jobmachine.dev"


@dataclass(frozen=True)
class PrinterColumn:
    """A column of `kubectl get`."""

    name: str
    type: str
    json_path: str
    description: str
    priority: int = 0


@dataclass(frozen=True)
class Scale:
    """Where the /scale subresource reads and writes a replica count."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str


@dataclass(frozen=True)
class Kind:
    """Everything a CRD says about a kind served from a Python model."""

    model: type[BaseModel]
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...] = ()
    scope: str = "Namespaced"
    printer_columns: tuple[PrinterColumn, ...] = ()
    validations: tuple[Mapping[str, str], ...] = ()
    scale: Scale | None = None
    shorthands: Mapping[str, Shorthand] = field(default_factory=dict)
    spec_schema: Callable[[Schema], Schema] | None = None
    """Rewrites the spec's generated schema (e.g. what a partial document may leave out)."""


AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time since creation.")
JOB_COLUMNS = (
    PrinterColumn("State", "string", ".status.phase", "The phase of the job's current state."),
    PrinterColumn("Restarts", "integer", ".status.restarts", "Replica restarts so far."),
    AGE,
)
"""The columns of every job kind unless its description says otherwise."""

STATE_MACHINE_KIND = Kind(
    model=StateMachine,
    group=JOBMACHINE_GROUP,
    version="v1alpha1",
    kind="StateMachine",
    plural="statemachines",
    singular="statemachine",
    short_names=("sm",),
    scope="Cluster",
    printer_columns=(
        PrinterColumn("Governs", "string", ".spec.governs.kind", "The job kind it drives."),
        PrinterColumn("Accepted", "string", '.status.conditions[?(@.type=="Accepted")].status',
                      "Whether the engine accepted the machine."),
        PrinterColumn("Revision", "string", ".status.currentRevision",
                      "The revision new jobs of its kind start with."),
        AGE,
    ),
    shorthands=SHORTHANDS,
    spec_schema=as_written,
)
