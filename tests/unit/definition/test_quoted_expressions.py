"""Which expression an evaluation error is about (`ExpressionTable.quoted_by`): the one whose
source it quotes before its reason, the longest when a shorter one is quoted inside it; a
template's part; none when the error quotes none. `check` and the engine's
MachineEvaluationError events place an error so."""

from __future__ import annotations

import pytest

from engine.definition.expressions import ExpressionTable, compile_expressions
from engine.definition.loader import load_text
from tests.unit.definition.texts import JOB, document

TRANSITIONS = """\
      - {from: Running, to: Done, when: "restarts == 0", message: "${restarts}"}
      - {from: Running, to: Done, when: "{'restarts == 0': 1}.size() == restarts"}
"""


def _table() -> ExpressionTable:
    job = JOB.replace('      - {from: Running, to: Done, when: "restarts == 0"}\n', TRANSITIONS)
    [loaded] = load_text(document(job=job), "d.yaml")
    return compile_expressions(loaded)


@pytest.mark.parametrize(("error", "path", "source"), [
    ("transition 1 guard: 'restarts == 0': no such key: x",
     ("spec", "job", "transitions", 0, "when"), "restarts == 0"),
    # The first guard's source, quoted as failing, inside the second's.
    ("transition 2 guard: \"{'restarts == 0': 1}.size() == restarts\": no",
     ("spec", "job", "transitions", 1, "when"), "{'restarts == 0': 1}.size() == restarts"),
    ("'restarts': no such key: restarts",
     ("spec", "job", "transitions", 0, "message"), "restarts"),
])
def test_the_expression_whose_source_the_error_quotes(
        error: str, path: tuple[object, ...], source: str) -> None:
    assert _table().quoted_by(error) == (path, source)


@pytest.mark.parametrize("error", [
    "countRestart count gave -1, not an int >= 0",
    "'restarts == 0'",  # quoted, but not as the source of a failure (no reason after it)
    "restarts == 0: no",
])
def test_none_when_no_source_is_quoted_as_failing(error: str) -> None:
    assert _table().quoted_by(error) is None


def test_the_longest_source_quoted_wins_wherever_it_is_written() -> None:
    """The longer guard written first: it still wins over the shorter one quoted inside it
    (the places are no tie-break)."""
    longer_first = "".join(reversed(TRANSITIONS.splitlines(keepends=True)))
    job = JOB.replace('      - {from: Running, to: Done, when: "restarts == 0"}\n', longer_first)
    [loaded] = load_text(document(job=job), "d.yaml")
    error = "transition 1 guard: \"{'restarts == 0': 1}.size() == restarts\": no"
    assert compile_expressions(loaded).quoted_by(error) == (
        ("spec", "job", "transitions", 0, "when"), "{'restarts == 0': 1}.size() == restarts")
