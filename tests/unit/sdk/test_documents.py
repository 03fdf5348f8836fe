"""What `create_job` accepts: a dict, a YAML file of one document, or a builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.sdk import InvalidJobError, JobBuilder
from engine.sdk.documents import job_document

JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
       "spec": {}}


def test_a_dict_is_copied_and_gets_the_default_namespace() -> None:
    document = job_document(JOB, None, default="team")

    assert document["metadata"] == {"name": "x", "namespace": "team"}
    assert JOB["metadata"] == {"name": "x"}


def test_the_namespace_given_wins_over_the_default_and_must_match_the_documents() -> None:
    assert job_document(JOB, "given", default="team")["metadata"]["namespace"] == "given"
    own = {**JOB, "metadata": {"name": "x", "namespace": "own"}}
    assert job_document(own, None, default="team")["metadata"]["namespace"] == "own"
    with pytest.raises(InvalidJobError, match="names namespace 'own', but it is to be created "
                                              "in 'given'"):
        job_document(own, "given", default="team")


def test_a_yaml_file_of_one_document_is_read(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: y\n")

    assert job_document(path, None, default="d")["metadata"] == {"name": "y", "namespace": "d"}
    assert job_document(str(path), None, default="d")["kind"] == "PyTorchJob"


def test_a_file_of_several_documents_or_none_is_refused(tmp_path: Path) -> None:
    two = tmp_path / "two.yaml"
    two.write_text("kind: A\n---\nkind: B\n")
    with pytest.raises(InvalidJobError, match="must hold exactly one job document"):
        job_document(two, None, default="d")
    with pytest.raises(InvalidJobError, match="cannot read a job from"):
        job_document(tmp_path / "missing.yaml", None, default="d")


def test_a_builder_is_built() -> None:
    builder = JobBuilder(kind="MachineJob", name="b").replica("Main", 1, image="i")

    document = job_document(builder, "team", default="d")

    assert document["kind"] == "MachineJob"
    assert document["metadata"] == {"name": "b", "namespace": "team"}
