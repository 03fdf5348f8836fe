"""A pass steps the machines round after round until nothing fires, but not forever: a job
machine that never settles (two states that each lead to the other) is stepped as many
rounds as its two machines have states, and two more, then the pass ends where it got to.
A job self-loop that fires while replicas move is applied once a pass, from its last step,
also when the rounds run out with the replicas still moving.
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


WORKER_PING_PONG = """\
  replica:
    initial: Ping
    states:
      Ping: {onEnter: [{event: {reason: Ping}}]}
      Pong: {onEnter: [{event: {reason: Pong}}]}
    transitions:
      - {from: Ping, to: Pong, when: "true"}
      - {from: Pong, to: Ping, when: "true"}
"""

LOOKING_JOB = """\
  job:
    initial: Running
    states:
      Running: {}
      Done: {terminal: success}
    transitions:
      - {from: Running, to: Running, when: "true", actions: [{event: {reason: Looked}}]}
"""


def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.dev/v1", "kind": "Demo",
            "metadata": {"name": "d", "namespace": "n", "uid": "u"}, "spec": spec}


def test_a_job_machine_that_never_settles_is_stepped_a_bounded_number_of_rounds() -> None:
    (loaded,) = load_text(document(job=PING_PONG), "ping-pong.yaml")
    definition = compile_definition(loaded)
    job = _job()
    decision = decide(definition, job, read_job_spec(job, definition),
                      MachineRecord(state="Ping"), {}, job_observations=frozenset(),
                      now="2027-01-01T00:00:00Z")
    rounds = len(definition.job.states) + len(definition.replica.states) + 2
    assert rounds == 9
    assert [f.transition.target for f in decision.fired] == ["Pong", "Ping"] * 4 + ["Pong"]
    assert decision.record.state == "Pong"
    assert decision.errors == ()


def test_a_job_self_loop_is_applied_once_when_the_rounds_run_out_with_replicas_moving(
) -> None:
    (loaded,) = load_text(document(job=LOOKING_JOB, replica=WORKER_PING_PONG), "looking.yaml")
    definition = compile_definition(loaded)
    template = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    job = _job(replicaSpecs={"Worker": {"replicas": 1, "template": template}})
    decision = decide(definition, job, read_job_spec(job, definition),
                      MachineRecord(state="Running"), {}, job_observations=frozenset(),
                      now="2027-01-01T00:00:00Z")
    # Six rounds: the Worker is created in Ping and moves on in the first (entering the
    # initial state does not end a step), then moves once in each of the other five.
    assert [f.transition.target for f in decision.fired if f.replica is not None] == [
        "Ping", "Pong", "Ping", "Pong", "Ping", "Pong", "Ping"]
    assert decision.record.state == "Running"
    assert [(None if p.replica is None else str(p.replica), p.action.args["reason"])
            for p in decision.actions] == [
        ("Worker-0", "Ping"), ("Worker-0", "Pong"), (None, "Looked")]
