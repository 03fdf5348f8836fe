"""What a compiled transition says when it fires: a silent one posts no Event, and an
action's literal argument written as a YAML boolean is the word the API takes (True,
False), as setCondition's status must be."""

from __future__ import annotations

import pytest

from engine.definition import PlannedAction, step
from tests.unit.definition.test_step import compiled, facts
from tests.unit.definition.texts import JOB


def test_a_silent_transition_fires_without_an_event() -> None:
    job = JOB.replace('when: "restarts == 0"}', 'when: "restarts == 2", silent: true}')
    (fired,) = step(compiled(job=job).job, "Running", facts()).fired
    assert (fired.target, fired.silent) == ("Done", True)


@pytest.mark.parametrize(("written", "status"), [("true", "True"), ("false", "False")])
def test_a_yaml_boolean_status_is_set_as_the_condition_word(written: str, status: str) -> None:
    job = JOB.replace(
        'when: "restarts == 0"}',
        f'when: "restarts == 2", actions: [{{setCondition: {{type: Ready, status: {written}}}}}]}}',
    )
    result = step(compiled(job=job).job, "Running", facts())
    assert result.actions == (
        PlannedAction("setCondition", {"type": "Ready", "status": status}, transition=0),
    )
