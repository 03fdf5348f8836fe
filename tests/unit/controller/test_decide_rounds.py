"""A pass steps the machines round after round until nothing fires, but not forever: a job
machine that never settles (two states that each lead to the other) is stepped as many
rounds as its two machines have states, and two more, then the pass ends where it got to.
"""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.decide import decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.record import MachineRecord
from engine.definition import compile_definition, load_text
from tests.unit.definition.texts import document

PING_PONG = """\
  job:
    initial: Ping
    states:
      Ping: {onEnter: [{event: {reason: Ping}}]}
      Pong: {onEnter: [{event: {reason: Pong}}]}
      Done: {terminal: success}
    transitions:
      - {from: Ping, to: Pong, when: "true"}
      - {from: Pong, to: Ping, when: "true"}
"""
"""A job machine whose every round enters the other state: a step stops at a state with
`onEnter` actions, so each round fires one transition."""


def test_a_job_machine_that_never_settles_is_stepped_a_bounded_number_of_rounds() -> None:
    (loaded,) = load_text(document(job=PING_PONG), "ping-pong.yaml")
    definition = compile_definition(loaded)
    job: dict[str, Any] = {"apiVersion": "example.dev/v1", "kind": "Demo",
                           "metadata": {"name": "d", "namespace": "n", "uid": "u"}, "spec": {}}
    decision = decide(definition, job, read_job_spec(job, definition),
                      MachineRecord(state="Ping"), {}, job_observations=frozenset(),
                      now="2027-01-01T00:00:00Z")
    rounds = len(definition.job.states) + len(definition.replica.states) + 2
    assert rounds == 9
    assert [f.transition.target for f in decision.fired] == ["Pong", "Ping"] * 4 + ["Pong"]
    assert decision.record.state == "Pong"
    assert decision.errors == ()
