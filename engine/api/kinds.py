"""The four kinds jobmachine serves, and how each is named and shown to `kubectl`.

One `Kind` per CRD: its model, API names, scope, printer columns, root CEL rules
and subresources. `crd.py` turns each into a CustomResourceDefinition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from engine.api.machinejob import MachineJob
from engine.api.objects import JOB_NAME_RULE
from engine.api.pytorchjob import PyTorchJob
from engine.api.statemachine import SHORTHANDS, StateMachine
from engine.api.structural import Shorthand
from engine.api.tfjob import TFJob

JOBMACHINE_GROUP = "jobmachine.dev"
KUBEFLOW_GROUP = "kubeflow.org"


@dataclass(frozen=True)
class PrinterColumn:
    """A column of `kubectl get`."""

    name: str
    type: str
    json_path: str
    description: str


@dataclass(frozen=True)
class Scale:
    """Where the /scale subresource reads and writes a replica count."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str


@dataclass(frozen=True)
class Kind:
    """Everything a CRD says about one kind."""

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


AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time since creation.")
JOB_COLUMNS = (
    PrinterColumn("State", "string", ".status.phase", "The phase of the job's current state."),
    PrinterColumn("Restarts", "integer", ".status.restarts", "Replica restarts so far."),
    AGE,
)

KINDS: tuple[Kind, ...] = (
    Kind(
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
            AGE,
        ),
        shorthands=SHORTHANDS,
    ),
    Kind(
        model=MachineJob,
        group=JOBMACHINE_GROUP,
        version="v1alpha1",
        kind="MachineJob",
        plural="machinejobs",
        singular="machinejob",
        short_names=("mjob",),
        printer_columns=JOB_COLUMNS,
        validations=(JOB_NAME_RULE,),
    ),
    Kind(
        model=PyTorchJob,
        group=KUBEFLOW_GROUP,
        version="v1",
        kind="PyTorchJob",
        plural="pytorchjobs",
        singular="pytorchjob",
        printer_columns=JOB_COLUMNS,
        validations=(JOB_NAME_RULE,),
        scale=Scale(
            spec_replicas_path=".spec.pytorchReplicaSpecs.Worker.replicas",
            status_replicas_path=".status.replicaStatuses.Worker.active",
            label_selector_path=".status.replicaStatuses.Worker.selector",
        ),
    ),
    Kind(
        model=TFJob,
        group=KUBEFLOW_GROUP,
        version="v1",
        kind="TFJob",
        plural="tfjobs",
        singular="tfjob",
        printer_columns=JOB_COLUMNS,
        validations=(JOB_NAME_RULE,),
    ),
)
