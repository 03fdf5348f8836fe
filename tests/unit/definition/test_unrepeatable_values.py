"""An expression that calls a function whose value differs at each call (`sshKeyPair`) is
evaluated every time, even where values are remembered by what they read (the engine's
passes and the model checker): two jobs, whose key pair expressions read the same
(nothing), must not get one SSH key pair."""

from __future__ import annotations

from engine.definition.cel import (
    Activation,
    RememberedValues,
    Scope,
    compile_expression,
    remembering_values,
)

KEY = "[sshKeyPair()].map(k, k.publicKey)[0]"


def test_a_new_key_pair_at_each_evaluation_under_remembered_values() -> None:
    expression = compile_expression(KEY, Scope("job", template=True))
    remembered = RememberedValues()
    with remembering_values(remembered):
        first = expression.evaluate({})
        second = expression.evaluate({})
    assert first.startswith("ecdsa-sha2-nistp521 ")
    assert first != second


def test_it_has_no_inputs_to_be_remembered_by() -> None:
    expression = compile_expression(KEY, Scope("job", template=True))
    assert Activation({}).inputs(expression) is None
    assert Activation({}).inputs(compile_expression("1 + 2", Scope("job"))) is not None
