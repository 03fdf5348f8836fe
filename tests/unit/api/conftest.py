"""Fixtures for the API tests: the generated CRDs by kind."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from engine.api.manifests import crd_files
from tests.kinds import KINDS_DIR


@pytest.fixture(scope="session")
def crds() -> dict[str, dict[str, Any]]:
    """Every generated CRD (StateMachine's and each described kind's), by kind."""
    documents = [yaml.safe_load(text) for text in crd_files(KINDS_DIR).values()]
    return {crd["spec"]["names"]["kind"]: crd for crd in documents}


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    """The openAPIV3Schema of a CRD's only version."""
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema
