"""The vocabulary's type signatures as the checker's types (`cel_type`): every simple
CEL type by its name, lists and maps of them at any depth, and the engine's structs
wherever they are nested, so a variable or function may be declared with any of them."""

from __future__ import annotations

import pytest
from cel_expr_python import cel as celcpp

from engine.definition.cel import cel_type
from engine.definition.cel_types import UNTYPED_JOB, cel_types

SIMPLE = ("bool", "int", "uint", "double", "string", "dyn", "bytes", "duration", "timestamp")


@pytest.mark.parametrize("name", SIMPLE)
def test_each_simple_type_by_its_name(name: str) -> None:
    assert cel_type(name) == getattr(celcpp.Type, name.upper())
    assert cel_type(f" {name} ") == getattr(celcpp.Type, name.upper())


def test_lists_and_maps_nest_and_hold_the_engine_s_structs() -> None:
    types = cel_types(UNTYPED_JOB)
    replica = cel_type("Replica", types)
    assert replica == celcpp.Type(types.struct_types["Replica"])
    assert cel_type("list(Replica)", types) == celcpp.Type.List(replica)
    assert cel_type("map(string, list(Replica))", types) == celcpp.Type.Map(
        celcpp.Type.STRING, celcpp.Type.List(replica))
    assert cel_type("map(string,map(int, duration))") == celcpp.Type.Map(
        celcpp.Type.STRING, celcpp.Type.Map(celcpp.Type.INT, celcpp.Type.DURATION))
    assert cel_type("Job") == celcpp.Type.Map(celcpp.Type.STRING, celcpp.Type.DYN)


@pytest.mark.parametrize(("signature", "words"), [
    ("map(string)", "expected two type arguments in 'string'"),
    ("Replica", "unsupported CEL type signature 'Replica'"),
    ("list(int", "unsupported CEL type signature 'list(int'"),
])
def test_a_signature_that_names_no_type_is_refused(signature: str, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        cel_type(signature)
