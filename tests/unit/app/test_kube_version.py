"""Which Kubernetes releases `jobmachine manifests install` accepts, read from /version as
distributions write it, and the one line it refuses an older one with."""

from __future__ import annotations

from typing import Any

import pytest

from engine.app.kube_version import (
    MINIMUM,
    server_release,
    version_notes,
    version_refusal,
)


def git(version: str) -> dict[str, Any]:
    return {"major": "1", "minor": "", "gitVersion": version}


@pytest.mark.parametrize(("info", "release"), [
    (git("v1.30.2-gke.1000"), (1, 30)),
    (git("v1.29.0+k3s1"), (1, 29)),
    (git("v1.28.5-eks-5e0fdde"), (1, 28)),
    (git("v1.32.4-jobmachine"), (1, 32)),
    (git("v1.100.0"), (1, 100)),
    (git("v2.0.0"), (2, 0)),
    ({"major": "1", "minor": "28+", "gitVersion": ""}, (1, 28)),
    ({"major": "1", "minor": "31"}, (1, 31)),
    (git("v1"), None),
    ({"major": "1", "minor": "", "gitVersion": ""}, None),
    ({"major": "1"}, None),
    ({}, None),
])
def test_the_release_comes_from_git_version_else_major_and_minor(
    info: dict[str, Any], release: tuple[int, int] | None,
) -> None:
    assert server_release(info) == release


def test_the_minimum_is_1_28() -> None:
    assert MINIMUM == (1, 28)


def test_1_27_is_refused_naming_what_it_lacks() -> None:
    assert version_refusal(git("v1.27.16")) == (
        "Kubernetes 1.27 is too old: jobmachine needs 1.28+ "
        "(reason and fieldPath in CRD validation rules)")


def test_an_older_release_is_refused_with_everything_it_lacks() -> None:
    assert version_refusal(git("v1.24.17")) == (
        "Kubernetes 1.24 is too old: jobmachine needs 1.28+ (CRD validation rules "
        "(x-kubernetes-validations, with transition rules on oldSelf); messageExpression in "
        "CRD validation rules; reason and fieldPath in CRD validation rules)")
    refusal = version_refusal(git("v1.26.0"))
    assert refusal is not None and "messageExpression" in refusal
    assert "x-kubernetes-validations" not in refusal


@pytest.mark.parametrize("version", ["v1.28.0", "v1.28.0-rc.1", "v1.30.2-gke.1000",
                                     "v1.29.0+k3s1", "v1.100.0", "v2.0.0"])
def test_1_28_and_newer_are_accepted(version: str) -> None:
    assert version_refusal(git(version)) is None


def test_releases_are_compared_as_numbers_not_text() -> None:
    """1.3 sorts after 1.28 as text."""
    assert version_refusal(git("v1.3.0")) is not None
    assert version_refusal({"major": "1", "minor": "9+"}) is not None


def test_a_version_without_its_minor_is_refused_saying_what_the_server_answered() -> None:
    assert version_refusal(git("v1")) == (
        "the API server's /version (v1) does not say which Kubernetes release it is: "
        "jobmachine needs 1.28+")
    assert version_refusal({"major": "1", "minor": ""}) == (
        "the API server's /version (major '1', minor '') does not say which Kubernetes "
        "release it is: jobmachine needs 1.28+")


@pytest.mark.parametrize(("version", "notes"), [("v1.28.3", 1), ("v1.31.9", 1),
                                                ("v1.32.0", 0), ("v1.35.1", 0)])
def test_before_1_32_a_note_says_batch_jobs_stay_with_the_job_controller(
    version: str, notes: int,
) -> None:
    found = version_notes(git(version))

    assert len(found) == notes
    for note in found:
        assert note.startswith("batch/v1 Job spec.managedBy is on by default from Kubernetes "
                               f"1.32, this cluster runs {version[1:5]}: ")
        assert "the built-in job controller runs every batch/v1 Job and jobmachine none" in note
