"""`variables_for` asked with no keywords (as the vocabulary's docs are made): the variables
a guard sees at that level, no template's, status field's, validation rule's or child
status expression's."""

from __future__ import annotations

from engine.definition.cel import Scope
from engine.definition.vocabulary import COMMON_VARIABLES, REPLICA_VARIABLES, variables_for


def test_the_variables_of_a_level_by_default_are_its_guards() -> None:
    assert variables_for("job") == COMMON_VARIABLES == Scope("job").variables
    assert variables_for("replica") == COMMON_VARIABLES + REPLICA_VARIABLES
    assert variables_for("replica") == Scope("replica").variables
