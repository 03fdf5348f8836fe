"""A definition read from text in memory (tests, tools) is placed in `<text>` when no file
name is given: the name its problems carry."""

from __future__ import annotations

import pytest

from engine.definition import DefinitionError, load_text
from engine.definition.validate import validate_text

BROKEN = "apiVersion: jobmachine.dev/v1alpha1\nkind: StateMachine\nmetadata: {name: m}\nspec: 3\n"


def test_problems_of_text_loaded_without_a_name_are_placed_in_text() -> None:
    with pytest.raises(DefinitionError) as raised:
        load_text(BROKEN)
    assert str(raised.value).startswith("<text>:4:7: error:")


def test_problems_of_text_validated_without_a_name_are_placed_in_text() -> None:
    found = validate_text(BROKEN)
    assert found and {d.position.file for d in found} == {"<text>"}
