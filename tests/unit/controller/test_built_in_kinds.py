"""The kinds served without a CRD are named once in the language (`BUILT_IN_KINDS`, which
`validate` uses to say nothing of a missing schema) and given a resource by the engine."""

from __future__ import annotations

from engine.controller.machines.served import BUILT_IN_JOB_KINDS, served_resources
from engine.definition.schema import BUILT_IN_KINDS


def test_every_built_in_kind_has_its_resource_and_only_those() -> None:
    assert set(BUILT_IN_JOB_KINDS) == BUILT_IN_KINDS
    for (api_version, kind), resource in BUILT_IN_JOB_KINDS.items():
        assert (resource.api_version, resource.kind) == (api_version, kind)


def test_they_are_served_without_any_crd() -> None:
    assert set(served_resources([])) == BUILT_IN_KINDS
