"""Job kinds made at run time for the StateMachine tests: a kind, its CRD, its machine, its jobs.

Each test makes its own kind from a short JobKind description (`kind_crd_text`, as
`jobmachine crd` does), so tests never disturb each other or the shipped machines.
Its machine extends the shipped `kubeflow` base and adds what a test needs to tell
revisions apart: a pod environment value (`RULES`) and the reason of the job's
`succeed` transition. `Lab` remembers what a test made and removes it afterwards.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field

import yaml

from engine.api.kind_description import JobKind
from engine.api.manifests import kind_crd_text
from engine.controller.machines.install import wait_until_served
from engine.controller.machines.revisions import CONTROLLER_REVISIONS, MACHINE_LABEL
from engine.controller.machines.served import CRDS
from engine.controller.reconcile.status import GOVERNED
from engine.controller.runtime.manager import Engine
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, NotFound
from engine.kube.resources import EVENTS, STATE_MACHINES, Resource
from tests.integration.engine.helpers import (
    WAIT_S,
    Obj,
    Replica,
    condition,
    replica_spec,
    status,
    wait_for,
)
from tests.integration.engine.machinejobs import get_obj

GROUP = "lab.jobmachine.dev"
SYSTEM_NAMESPACE = "jobmachine-system"
BROKEN_GUARD = "restarts == 'done'"
"""A `succeed` guard with a CEL type error (int compared with string)."""


@dataclass(frozen=True)
class LabKind:
    """A job kind of one test: `<Name>Job` in GROUP/v1, replica type Worker, container main."""

    described: JobKind

    @property
    def kind(self) -> str:
        return self.described.spec.names.kind

    @property
    def resource(self) -> Resource:
        return Resource(GROUP, "v1", self.described.plural, self.kind)

    @property
    def crd_name(self) -> str:
        return self.described.crd_name


def new_kind() -> LabKind:
    """A kind nobody else uses, described as a platform team would describe it."""
    name = f"Lab{uuid.uuid4().hex[:8]}Job"
    return LabKind(JobKind.model_validate({
        "apiVersion": "jobmachine.dev/v1alpha1",
        "kind": "JobKind",
        "metadata": {"name": name.lower()},
        "spec": {
            "group": GROUP,
            "version": "v1",
            "names": {"kind": name},
            "replicaSpecs": {"field": "workers", "types": ["Worker"]},
            "mainContainer": "main",
        },
    }))


def machine(name: str, kind: LabKind, *, rules: str = "first", when: str | None = None) -> Obj:
    """A StateMachine for `kind` extending kubeflow: its pods get `RULES=<rules>` and the job's
    `succeed` transition has reason `<Rules>Rules` (e.g. FirstRules); `when` replaces the
    `succeed` guard (a broken one makes the machine invalid)."""
    succeed: Obj = {"name": "succeed", "reason": f"{rules.capitalize()}Rules"}
    if when is not None:
        succeed["when"] = when
    return {
        "apiVersion": STATE_MACHINES.api_version,
        "kind": STATE_MACHINES.kind,
        "metadata": {"name": name},
        "spec": {
            "extends": "kubeflow",
            "governs": {
                "apiVersion": kind.resource.api_version,
                "kind": kind.kind,
                "replicaSpecs": "spec.workers",
                "replicaTypes": ["Worker"],
                "defaultRestartPolicy": "ExitCode",
            },
            "job": {"transitions": [succeed]},
            "pod": {"container": "main", "env": {"RULES": repr(rules)}},
        },
    }


def lab_job(kind: LabKind, name: str, namespace: str, worker: Replica | None = None) -> Obj:
    """A job of `kind` whose Worker pods simulate `worker` (one pod exiting 0 by default)."""
    return {
        "apiVersion": kind.resource.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"workers": {"Worker": replica_spec(worker or Replica(), "main")}},
    }


def pod_env(pod: Obj, name: str) -> str | None:
    """The value the pod's main container gets for environment variable `name`."""
    for variable in pod["spec"]["containers"][0].get("env") or ():
        if variable["name"] == name:
            return str(variable.get("value"))
    return None


@dataclass
class Lab:
    """Makes kinds and machines for one test, and removes them when it ends."""

    client: KubeClient
    crds: list[str] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)

    def install(self, kind: LabKind) -> None:
        """Create the kind's CRD, made from its description, and wait until it is served."""
        self.client.create(CRDS, yaml.safe_load(kind_crd_text(kind.described, "test")))
        self.crds.append(kind.crd_name)
        wait_until_served(self.client, [kind.resource], timeout_s=WAIT_S)

    def apply(self, document: Obj) -> Obj:
        """Create the StateMachine, or replace the one of that name; the object written."""
        name = document["metadata"]["name"]
        if name not in self.machines:
            self.machines.append(name)
        try:
            return self.client.create(STATE_MACHINES, document)
        except AlreadyExists:
            current = self.client.get(STATE_MACHINES, name)
            metadata = {**document["metadata"],
                        "resourceVersion": current["metadata"]["resourceVersion"]}
            return self.client.replace(STATE_MACHINES, name, {**document, "metadata": metadata})

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *_: object) -> None:
        self.clean_up()

    def clean_up(self) -> None:
        """CRDs first (the engine still runs their jobs' clean-up), then the machines."""
        for name in self.crds:
            with contextlib.suppress(NotFound):
                self.client.delete(CRDS, name)
        for name in self.crds:
            wait_for(lambda n=name: get_cluster_obj(self.client, CRDS, n),
                     lambda found: found is None, what=f"CRD {name} deleted")
        for name in self.machines:
            with contextlib.suppress(NotFound):
                self.client.delete(STATE_MACHINES, name)


def get_cluster_obj(client: KubeClient, res: Resource, name: str) -> Obj | None:
    """The cluster-scoped object as the server has it now, or None once it is gone."""
    try:
        return client.get(res, name)
    except NotFound:
        return None


def get_machine(client: KubeClient, name: str) -> Obj | None:
    """The StateMachine as the server has it now, or None."""
    return get_cluster_obj(client, STATE_MACHINES, name)


def machine_condition(obj: Obj | None, type_: str) -> Obj:
    """The StateMachine's condition of this type ({} when it has none yet)."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c["type"] == type_), {})


def wait_for_verdict(client: KubeClient, name: str, *, accepted: str, governing: str | None,
                     generation: int | None = None, timeout: float = WAIT_S) -> Obj:
    """Wait until the machine's Accepted and Governing conditions have these reasons (for the
    generation given, else its current one); the machine then."""

    def judged(obj: Obj | None) -> bool:
        if obj is None:
            return False
        status = obj.get("status") or {}
        wanted = generation if generation is not None else obj["metadata"].get("generation")
        return (status.get("observedGeneration") == wanted
                and machine_condition(obj, "Accepted").get("reason") == accepted
                and (governing is None
                     or machine_condition(obj, "Governing").get("reason") == governing))

    found = wait_for(lambda: get_machine(client, name), judged, timeout=timeout,
                     what=f"machine {name} Accepted {accepted}, Governing {governing}")
    assert found is not None
    return found


def current_revision(client: KubeClient, name: str) -> str:
    """The revision the machine says is in force."""
    return str(((get_machine(client, name) or {}).get("status") or {})["currentRevision"])


def revisions_of(client: KubeClient, machine_name: str) -> dict[str, Obj]:
    """Name -> ControllerRevision of every kept revision of the machine."""
    items, _ = client.list(CONTROLLER_REVISIONS, SYSTEM_NAMESPACE,
                           label_selector=f"{MACHINE_LABEL}={machine_name}")
    return {item["metadata"]["name"]: item for item in items}


def machine_events(client: KubeClient, name: str) -> list[Obj]:
    """The Events about a StateMachine (cluster-scoped: they live in namespace default)."""
    items, _ = client.list(
        EVENTS, "default",
        field_selector=f"involvedObject.kind=StateMachine,involvedObject.name={name}",
    )
    return items


def touch(client: KubeClient, name: str) -> None:
    """Change a label of the machine: an event that makes the machine controller look again."""
    client.patch(STATE_MACHINES, name,
                 {"metadata": {"labels": {"test.jobmachine.dev/touched": uuid.uuid4().hex[:8]}}})


def wait_for_governed(client: KubeClient, kind: LabKind, namespace: str, name: str,
                      reason: str) -> Obj:
    """Wait until the job's Governed condition has this reason; the job then."""
    job = wait_for(lambda: get_obj(client, kind.resource, namespace, name),
                   lambda job: (condition(job, GOVERNED) or {}).get("reason") == reason
                   if job else False,
                   what=f"{namespace}/{name} Governed {reason}")
    assert job is not None
    return job


def runs_with(job: Obj) -> str:
    """The machine revision (`<machine>-<hash>`) the job's status says it runs with ('' if
    none)."""
    return str(status(job).get("machine") or "")


def delete_machine(client: KubeClient, engine: Engine, name: str, kind: LabKind) -> None:
    """Delete the machine and wait until the engine knows it no longer governs `kind` (a job
    created before that may still start with its revision)."""
    client.delete(STATE_MACHINES, name)
    wait_for(lambda: engine.machines.governed(kind.kind), lambda governed: governed is None,
             what=f"the engine knows machine {name} is gone")
