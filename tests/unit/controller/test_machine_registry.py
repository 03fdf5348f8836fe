"""Which machine revision a job runs with: the recorded one, else the kind's in force."""

from __future__ import annotations

from typing import Any

import pytest

from engine.controller.machines.registry import (
    Assignment,
    Governed,
    MachineRegistry,
    Unassigned,
    recorded_revision,
)
from engine.controller.machines.revisions import revision_object
from tests.kinds import KINDS, shipped_definitions

JAX = shipped_definitions()["JAXJob"]


def registry_with(*revisions: str, governed: str | None = None) -> MachineRegistry:
    registry = MachineRegistry()
    kept = {name: _revision(name) for name in revisions}
    registry.update(
        governed={} if governed is None else
        {"JAXJob": Governed("jaxjob", governed, KINDS["JAXJob"])},
        refused={} if governed else {"JAXJob": Unassigned("NoStateMachine", "machine gone")},
        watched={"JAXJob": KINDS["JAXJob"]},
        revisions=kept,
        compiled={},
    )
    return registry


def _revision(name: str) -> dict[str, Any]:
    revision = revision_object(dict(JAX.source), namespace="jobmachine-system", number=1,
                               generation=1)
    revision["metadata"]["name"] = name
    return revision


def job(recorded: str | None = None, *, legacy: bool = False) -> dict[str, Any]:
    """A JAXJob whose status names the revision `recorded` (as engines before the string
    form wrote it, `{name, revision}`, when `legacy`)."""
    written: Any = {"name": "jaxjob", "revision": recorded} if legacy else recorded
    status = {"machine": written} if recorded else {}
    return {"kind": "JAXJob", "metadata": {"name": "j"}, "status": status}


@pytest.mark.parametrize(("machine", "read"), [
    ("jaxjob-2ef5620318", ("jaxjob", "jaxjob-2ef5620318")),
    ("batch-job-2ef5620318", ("batch-job", "batch-job-2ef5620318")),
    ({"name": "jaxjob", "revision": "jaxjob-2ef5620318"}, ("jaxjob", "jaxjob-2ef5620318")),
    ({"name": "batch-job", "revision": "batch-job-1"}, ("batch-job", "batch-job-1")),
], ids=["name", "name-of-a-hyphenated-machine", "written-before", "hyphenated-written-before"])
def test_the_recorded_revision_is_read_as_a_name_and_as_the_mapping_written_before(
    machine: Any, read: tuple[str, str]
) -> None:
    assert recorded_revision({"status": {"machine": machine}}) == read


@pytest.mark.parametrize("status", [
    {}, {"machine": None}, {"machine": ""}, {"machine": {"name": "jaxjob"}}, {"machine": 7},
])
def test_a_status_without_a_revision_records_none(status: dict[str, Any]) -> None:
    assert recorded_revision({"status": status}) is None


def test_a_new_job_starts_with_the_revision_in_force() -> None:
    assigned = registry_with("jaxjob-new", governed="jaxjob-new").assign("JAXJob", job())

    assert isinstance(assigned, Assignment)
    assert (assigned.machine, assigned.revision) == ("jaxjob", "jaxjob-new")
    assert assigned.definition.governs.kind == "JAXJob"


def test_a_job_keeps_the_revision_it_recorded() -> None:
    registry = registry_with("jaxjob-old", "jaxjob-new", governed="jaxjob-new")

    assigned = registry.assign("JAXJob", job("jaxjob-old"))

    assert isinstance(assigned, Assignment) and assigned.revision == "jaxjob-old"


def test_a_job_that_recorded_its_revision_before_the_string_form_keeps_it() -> None:
    registry = registry_with("jaxjob-old", "jaxjob-new", governed="jaxjob-new")

    assigned = registry.assign("JAXJob", job("jaxjob-old", legacy=True))

    assert isinstance(assigned, Assignment)
    assert (assigned.machine, assigned.revision) == ("jaxjob", "jaxjob-old")


def test_a_revision_is_compiled_once_and_shared() -> None:
    registry = registry_with("jaxjob-new", governed="jaxjob-new")

    first = registry.assign("JAXJob", job())
    second = registry.assign("JAXJob", job("jaxjob-new"))

    assert isinstance(first, Assignment) and isinstance(second, Assignment)
    assert first.definition is second.definition


def test_a_job_whose_revision_is_gone_is_told_so() -> None:
    assigned = registry_with("jaxjob-new", governed="jaxjob-new").assign(
        "JAXJob", job("jaxjob-deleted")
    )

    assert isinstance(assigned, Unassigned)
    assert assigned.reason == "RevisionNotFound"
    assert "jaxjob-deleted" in assigned.message


def test_a_new_job_of_a_kind_nobody_governs_gets_the_refusal() -> None:
    assigned = registry_with("jaxjob-old").assign("JAXJob", job())

    assert assigned == Unassigned("NoStateMachine", "machine gone")


def test_a_revision_that_no_longer_loads_is_reported() -> None:
    registry = MachineRegistry()
    broken = _revision("jaxjob-broken")
    broken["data"]["spec"]["job"]["initial"] = "Nowhere"
    registry.update(governed={"JAXJob": Governed("jaxjob", "jaxjob-broken", KINDS["JAXJob"])},
                    refused={}, watched={}, revisions={"jaxjob-broken": broken}, compiled={})

    assigned = registry.assign("JAXJob", job())

    assert isinstance(assigned, Unassigned) and assigned.reason == "RevisionInvalid"
    assert "initial state 'Nowhere' is not defined" in assigned.message


def test_the_registry_is_not_ready_until_the_machines_were_judged() -> None:
    registry = MachineRegistry()
    assert not registry.ready
    assert registry.watched() == {}
    registry.update(governed={}, refused={}, watched={}, revisions={}, compiled={})
    assert registry.ready
