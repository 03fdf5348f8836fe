"""Fixtures for the API tests: the generated CRDs by kind."""

from __future__ import annotations

from typing import Any

import pytest

from engine.api.crd import all_crds


@pytest.fixture(scope="session")
def crds() -> dict[str, dict[str, Any]]:
    """Every generated CRD, by kind."""
    return {crd["spec"]["names"]["kind"]: crd for crd in all_crds()}


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    """The openAPIV3Schema of a CRD's only version."""
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema
