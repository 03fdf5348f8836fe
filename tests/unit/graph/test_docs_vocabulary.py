"""docs/machine-language.md names every field and vocabulary name; its tables are fresh."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest
from pydantic import BaseModel

from engine.definition import schema
from engine.definition.vocabulary import ACTIONS, OBSERVATIONS, variables_for
from tests.unit.graph.conftest import REPO

DOC = REPO / "docs" / "machine-language.md"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_vocabulary_docs", REPO / "tools" / "gen_vocabulary_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vocabulary_names() -> list[str]:
    names = [o.name for o in OBSERVATIONS] + [a.name for a in ACTIONS]
    names += [arg.name for a in ACTIONS for arg in a.args]
    names += [v.name for level in ("job", "replica") for v in variables_for(level, template=True)]
    return sorted(set(names))


def _field_names() -> list[str]:
    models: list[type[BaseModel]] = [
        schema.Governs,
        schema.Defaults,
        schema.MachineSpec,
        schema.StateSpec,
        schema.TransitionSpec,
        schema.ConditionSpec,
        schema.PodSpec,
        schema.ServiceSpec,
        schema.PortSpec,
        schema.DefinitionSpec,
        schema.ValidationRule,
        schema.ObjectSpec,
    ]
    return sorted({f.alias or name for m in models for name, f in m.model_fields.items()})


def test_generated_tables_are_up_to_date():
    text = DOC.read_text(encoding="utf-8")
    assert _tool().updated(text) == text, "run python tools/gen_vocabulary_docs.py"


@pytest.mark.parametrize("name", _vocabulary_names())
def test_every_vocabulary_name_is_documented(name):
    assert f"`{name}`" in DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", _field_names())
def test_every_field_is_documented(name):
    text = DOC.read_text(encoding="utf-8")
    assert f"`{name}`" in text or f"`spec.{name}`" in text


def test_the_check_fails_on_a_missing_name(tmp_path):
    stale = tmp_path / "doc.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("| `podLost` |", "| `podGone2` |"))
    assert _tool().main([str(stale), "--check"]) == 1
