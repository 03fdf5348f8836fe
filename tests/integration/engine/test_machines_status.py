"""What the engine says on a StateMachine: valid or not, governing or not, and why.

The shipped machines `up` applies are accepted and in force (the abstract base governs
nothing); a broken machine is refused with `jobmachine validate`'s own words while other
kinds keep running; of two machines for one kind the older one governs; a machine
whose kind is not served yet governs it as soon as its CRD appears.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from engine.definition.validate import validate_text
from engine.kube.client import KubeClient
from tests.integration.engine.custom_kinds import (
    BROKEN_GUARD,
    SYSTEM_NAMESPACE,
    Lab,
    current_revision,
    get_machine,
    lab_job,
    machine,
    machine_condition,
    machine_events,
    new_kind,
    pod_env,
    revisions_of,
    runs_with,
    wait_for_governed,
    wait_for_verdict,
)
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    condition,
    pods_of,
    pytorchjob,
    status,
    wait_for_phase,
)
from tests.integration.engine.machinejobs import wait_for_phase_of
from tests.kinds import MACHINES
from tests.polling import eventually


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


def shipped_machines() -> dict[str, dict[str, Any]]:
    """The shipped StateMachine documents by name, as written (before `extends` is merged)."""
    return {
        document["metadata"]["name"]: document
        for path in MACHINES.glob("*.yaml")
        for document in yaml.safe_load_all(path.read_text())
        if document and document.get("kind") == "StateMachine"
    }


def shipped_machine_names() -> list[str]:
    return sorted(shipped_machines())


@pytest.mark.parametrize("name", shipped_machine_names())
def test_shipped_machine_is_accepted_and_in_force(client: KubeClient, name: str) -> None:
    """Each machine `up` applies: Accepted (Valid) for its generation, Governing with a kept
    revision holding it as it runs (bases merged in); the abstract base governs nothing."""
    found = wait_for_verdict(client, name, accepted="Valid", governing=None)
    assert machine_condition(found, "Accepted")["status"] == "True"
    governing = machine_condition(found, "Governing")
    if name == "kubeflow":
        assert (governing["status"], governing["reason"]) == ("False", "Abstract")
        assert "currentRevision" not in status(found)
        return
    assert (governing["status"], governing["reason"]) == ("True", "Governing")
    revision = current_revision(client, name)
    kept = revisions_of(client, name)
    assert revision in kept, f"no ControllerRevision {revision} in {SYSTEM_NAMESPACE}"
    spec = kept[revision]["data"]["spec"]
    assert "extends" not in spec
    # A machine that extends another holds the base's job states too (the Kubeflow kinds'
    # Failing, the ReplicationController's Active), merged into the revision it runs.
    written = shipped_machines()
    base = written[name]["spec"].get("extends")
    if base is not None:
        base_states = set(written[base]["spec"]["job"]["states"])
        assert base_states <= set(spec["job"]["states"]), "the base's states are merged in"


@pytest.mark.parametrize("guard", [BROKEN_GUARD, "replicas.Master.succeded > 0"],
                         ids=["type-error", "misspelt-field"])
def test_broken_machine_is_refused_with_validate_messages(
    client: KubeClient, lab: Lab, ns: str, guard: str
) -> None:
    """A `succeed` guard with a CEL type error, or reading a field the replica summary does
    not have -> Accepted False (Invalid) naming the field and saying what `jobmachine
    validate` says; a Warning Event; PyTorchJobs still run."""
    kind = new_kind()
    lab.install(kind)
    broken = machine("broken", kind, when=guard)
    lab.apply(broken)

    found = wait_for_verdict(client, "broken", accepted="Invalid", governing=None)
    accepted = machine_condition(found, "Accepted")
    assert accepted["status"] == "False"
    assert accepted["message"].startswith("generation 1 is invalid: ")
    text = (MACHINES / "kubeflow.yaml").read_text() + "---\n" + yaml.safe_dump(broken)
    errors = [d for d in validate_text(text) if d.is_error]
    assert [d.position.field_path for d in errors] == ["spec.job.transitions[0].when"]
    for error in errors:
        assert f"{error.position.field_path}: {error.message}" in accepted["message"]
    if "succeded" in guard:
        assert "unknown field 'succeded' of a replica type's summary (did you mean " \
            "'succeeded'?)" in accepted["message"]
    assert machine_condition(found, "Governing")["status"] == "False"
    assert "currentRevision" not in status(found)
    assert revisions_of(client, "broken") == {}
    # The recorder posts Events after the status write: wait for it.
    invalid = eventually(lambda: [(e["type"], e["message"])
                                  for e in machine_events(client, "broken")
                                  if e["reason"] == "Invalid"])
    assert ("Warning", accepted["message"]) in invalid

    client.create(PYTORCHJOBS, pytorchjob("meanwhile", ns, workers=Replica()), ns)
    wait_for_phase(client, ns, "meanwhile", "Succeeded")


def test_job_of_a_kind_whose_machine_is_refused_says_why(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    """The kind's only machine is broken -> its job waits with Governed False
    (StateMachineNotAccepted) naming the machine; no pod."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("refused", kind, when=BROKEN_GUARD))
    wait_for_verdict(client, "refused", accepted="Invalid", governing=None)
    client.create(kind.resource, lab_job(kind, "waits", ns), ns)

    job = wait_for_governed(client, kind, ns, "waits", "StateMachineNotAccepted")
    assert "machine refused is not accepted" in condition(job, "Governed")["message"]
    assert pods_of(client, ns, "waits") == []


def test_older_of_two_machines_for_one_kind_governs(client: KubeClient, lab: Lab, ns: str
                                                     ) -> None:
    """`zz-older` first, `aa-newer` a second later (it sorts first by name) -> the newer is
    refused (Conflict) naming the older; jobs of the kind run with the older's revision."""
    kind = new_kind()
    lab.install(kind)
    older = lab.apply(machine("zz-older", kind, rules="first"))
    wait_for_verdict(client, "zz-older", accepted="Valid", governing="Governing")
    time.sleep(1.1)  # creation times are whole seconds: make "created earlier" unambiguous
    newer = lab.apply(machine("aa-newer", kind, rules="second"))
    assert newer["metadata"]["creationTimestamp"] > older["metadata"]["creationTimestamp"]

    refused = wait_for_verdict(client, "aa-newer", accepted="Conflict", governing="Conflict")
    accepted = machine_condition(refused, "Accepted")
    assert accepted["status"] == "False"
    assert "governed by machine zz-older, created earlier" in accepted["message"]
    assert machine_condition(refused, "Governing")["status"] == "False"
    assert "currentRevision" not in status(refused)
    # The recorder posts Events after the status write: wait for it.
    conflicts = eventually(lambda: [e for e in machine_events(client, "aa-newer")
                                    if e["reason"] == "Conflict"])
    assert {(e["type"], e["message"]) for e in conflicts} == {("Warning", accepted["message"])}
    in_force = current_revision(client, "zz-older")
    assert machine_condition(get_machine(client, "zz-older"), "Governing")["reason"] == (
        "Governing")

    client.create(kind.resource, lab_job(kind, "job", ns), ns)
    job = wait_for_phase_of(client, kind.resource, ns, "job", "Succeeded")
    assert runs_with(job) == in_force
    assert condition(job, "Succeeded")["reason"] == "FirstRules"
    assert [pod_env(p, "RULES") for p in pods_of(client, ns, "job")] == ["first"]


def test_machine_governs_its_kind_once_the_crd_is_installed(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    """Machine before CRD -> Accepted, Governing False (CRDNotInstalled); the CRD created
    -> Governing True, and a job of the kind runs to Succeeded, nothing restarted."""
    kind = new_kind()
    lab.apply(machine("early", kind))
    waiting = wait_for_verdict(client, "early", accepted="Valid", governing="CRDNotInstalled")
    governing = machine_condition(waiting, "Governing")
    assert governing["status"] == "False"
    assert f"no CustomResourceDefinition serves {kind.resource.api_version} {kind.kind}" in (
        governing["message"])

    lab.install(kind)
    found = wait_for_verdict(client, "early", accepted="Valid", governing="Governing")
    assert machine_condition(found, "Governing")["status"] == "True"
    client.create(kind.resource, lab_job(kind, "job", ns), ns)
    job = wait_for_phase_of(client, kind.resource, ns, "job", "Succeeded")
    assert runs_with(job) == current_revision(client, "early")


def test_a_machine_reading_a_field_its_kinds_crd_lacks_is_refused(
    client: KubeClient, lab: Lab
) -> None:
    """`job` is typed against the installed CRD: a misspelt spec field is Accepted False
    at the field, with the CRD's fields and the nearest one; spelt right, it is accepted."""
    kind = new_kind()
    lab.install(kind)
    lab.apply(machine("typo", kind, when="has(job.spec.wokers)"))
    found = wait_for_verdict(client, "typo", accepted="Invalid", governing=None)
    accepted = machine_condition(found, "Accepted")
    assert "spec.job.transitions[0].when: unknown field 'wokers' of job.spec (did you mean " \
        "'workers'?); its fields: failureRules, runPolicy, workers" in accepted["message"]
    lab.apply(machine("typo", kind, when="has(job.spec.workers)"))
    wait_for_verdict(client, "typo", accepted="Valid", governing="Governing")
