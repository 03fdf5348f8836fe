"""Replica specs kept as a list of named specs (JobSet's replicatedJobs, Volcano's tasks):
how a job's list reads as types, what is wrong with one, and the CRD a kind description
with `replicaSpecs.list` makes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from engine.api.kind_description import JobKind
from engine.api.manifests import kind_crd_text
from engine.api.replicated import JobLayout, job_problems, list_problems, replica_specs_of

LAYOUT = JobLayout(replica_specs="spec.tasks", listed=True, main_container="main")


def spec(name: Any, replicas: int = 1, container: str = "main") -> dict[str, Any]:
    return {"name": name, "replicas": replicas,
            "template": {"spec": {"containers": [{"name": container, "image": "x:1"}]}}}


def job(tasks: Any) -> dict[str, Any]:
    return {"metadata": {"name": "j"}, "spec": {"tasks": tasks}}


def test_a_list_reads_as_types_in_its_order_without_their_names() -> None:
    specs = replica_specs_of(job([spec("driver"), spec("workers", 4)]), LAYOUT)
    assert list(specs) == ["driver", "workers"]
    assert specs["workers"]["replicas"] == 4 and "name" not in specs["workers"]
    assert job_problems(job([spec("driver"), spec("workers", 4)]), LAYOUT) == []


@pytest.mark.parametrize(("tasks", "problem"), [
    ({"driver": spec("driver")}, "spec.tasks: must be a list of replica specs with at least 1 "
                                 "entry"),
    ([], "spec.tasks: must be a list of replica specs with at least 1 entry"),
    (["driver"], "spec.tasks[0]: must be a replica spec (an object)"),
    ([spec("Driver")], "spec.tasks[0].name: must be a DNS label of at most 31 characters "
                       "(lower-case letters, digits and '-') (got 'Driver')"),
    ([spec(None)], "spec.tasks[0].name: must be a DNS label of at most 31 characters "
                   "(lower-case letters, digits and '-') (got None)"),
    ([spec("a"), spec("b"), spec("a")], "spec.tasks[2].name: duplicate name 'a'"),
])
def test_what_is_wrong_with_a_list_is_said_at_its_entry(tasks: Any, problem: str) -> None:
    assert list_problems(tasks, LAYOUT) == [problem]
    assert job_problems(job(tasks), LAYOUT) == [problem]


def test_a_problem_inside_a_listed_spec_names_its_place_in_the_list() -> None:
    [problem] = job_problems(job([spec("driver"), spec("workers", container="other")]), LAYOUT)
    assert problem.startswith("spec.tasks[1].template.spec.containers: "), problem
    [problem] = job_problems(job([spec("driver", replicas=-1)]), LAYOUT)
    assert problem.startswith("spec.tasks[0].replicas: "), problem


def described(**replica_specs: Any) -> JobKind:
    return JobKind.model_validate({
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "JobKind",
        "metadata": {"name": "taskjob"},
        "spec": {"group": "example.com", "version": "v1", "names": {"kind": "TaskJob"},
                 "replicaSpecs": {"field": "tasks", "list": True, **replica_specs}},
    })


def test_a_listed_kinds_crd_has_a_list_map_keyed_by_name() -> None:
    crd = yaml.safe_load(kind_crd_text(described(types=["driver", "workers"]), "test"))
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    tasks = spec_schema["properties"]["tasks"]
    assert tasks["type"] == "array" and tasks["minItems"] == 1
    assert (tasks["x-kubernetes-list-type"], tasks["x-kubernetes-list-map-keys"]) == (
        "map", ["name"])
    assert tasks["items"]["required"][0] == "name"
    assert tasks["items"]["properties"]["name"]["enum"] == ["driver", "workers"]
    assert {"replicas", "template", "restartPolicy"} <= set(tasks["items"]["properties"])
    [known] = [r for r in spec_schema["x-kubernetes-validations"] if "failureRules" in r["rule"]]
    assert "self.tasks.exists(s, s.name == t)" in known["rule"]


def test_a_listed_kind_cannot_have_a_scale_subresource() -> None:
    with pytest.raises(ValidationError, match="scale needs a map of replica specs"):
        JobKind.model_validate({
            "apiVersion": "jobmachine.dev/v1alpha1", "kind": "JobKind",
            "metadata": {"name": "taskjob"},
            "spec": {"group": "example.com", "version": "v1", "names": {"kind": "TaskJob"},
                     "replicaSpecs": {"field": "tasks", "list": True},
                     "scale": {"replicaType": "workers"}},
        })
