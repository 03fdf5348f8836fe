"""Stepping: level-triggered, first match in file order, self-loops, actions, errors."""

from __future__ import annotations

import pytest

from engine.definition import (
    CompiledDefinition,
    DefinitionError,
    Facts,
    FiredTransition,
    PlannedAction,
    StepError,
    compile_definition,
    load_text,
    render_pod_decorations,
    requeue_after,
    step,
)
from tests.unit.definition.texts import JOB, document

REPLICA = """\
  replica:
    initial: Pending
    states:
      Pending: {onEnter: [createService]}
      Running: {requeueAfter: 30s, timeout: 1m}
      Restarting: {onEnter: [deletePod], requeueAfter: "duration('1m30s')"}
      Succeeded: {terminal: success}
      Failed: {terminal: failure, requeueAfter: "restarts * 10"}
    transitions:
      - {from: Pending, to: Pending, "on": podMissing, actions: [createPod]}
      - {from: Pending, to: Running, "on": podRunning, reason: Started}
      - {from: [Pending, Running], to: Succeeded, "on": podSucceeded}
      - from: [Pending, Running]
        to: Restarting
        "on": podFailed
        when: "policy == 'OnFailure' && pod.exitCode != 1"
        actions:
          - countRestart
          - event: {reason: Restart, message: "${replica.type}-${replica.index} restarts"}
        message: "exit code ${pod.exitCode}"
      - {from: [Pending, Running], to: Failed, "on": podFailed}
      - {from: Restarting, to: Pending, "on": podMissing}
      - {from: Running, to: Failed, "on": timedOut, type: Normal}
"""

VARIABLES = {"policy": "OnFailure", "pod": {"exitCode": 137},
             "replica": {"type": "Worker", "index": 1}, "restarts": 2}


def compiled(replica: str = REPLICA, job: str = JOB, extra: str = "") -> CompiledDefinition:
    (loaded,) = load_text(document(job=job, replica=replica, extra=extra), "demo.yaml")
    return compile_definition(loaded)


def facts(*observations: str, **variables: object) -> Facts:
    return Facts(frozenset(observations), {**VARIABLES, **variables})


def test_a_new_instance_enters_the_initial_state_and_runs_its_on_enter() -> None:
    result = step(compiled().replica, None, facts("podPending"))
    assert result.state == "Pending"
    assert result.fired == (FiredTransition(None, "Pending", "Pending", "Created in Pending",
                                            "Normal"),)
    assert result.actions == (PlannedAction("createService", {}, state="Pending"),)
    assert result.changed


def test_a_new_instance_keeps_stepping_from_the_initial_state() -> None:
    result = step(compiled().replica, None, facts("podRunning"))
    assert result.state == "Running"
    assert [(f.source, f.target) for f in result.fired] == [
        (None, "Pending"), ("Pending", "Running")
    ]


def test_no_transition_enabled_is_a_fixed_point() -> None:
    result = step(compiled().replica, "Running", facts("podRunning"))
    assert result.state == "Running"
    assert result.fired == () and result.actions == () and result.errors == ()
    assert not result.changed


def test_the_first_matching_transition_in_file_order_wins() -> None:
    machine = compiled().replica
    restart = step(machine, "Running", facts("podFailed"))
    assert [f.target for f in restart.fired] == ["Restarting"]
    fail = step(machine, "Running", facts("podFailed", policy="Never"))
    assert [f.target for f in fail.fired] == ["Failed"]


def test_transition_actions_come_before_the_target_s_on_enter() -> None:
    result = step(compiled().replica, "Running", facts("podFailed"))
    assert result.fired == (
        FiredTransition("Running", "Restarting", "Restarting", "exit code 137", "Normal",
                        self_loop=False, index=3),
    )
    assert result.actions == (
        PlannedAction("countRestart", {}, transition=3),
        PlannedAction("event", {"reason": "Restart", "message": "Worker-1 restarts"},
                      transition=3),
        PlannedAction("deletePod", {}, state="Restarting"),
    )


def test_a_self_loop_collects_its_actions_and_stops() -> None:
    result = step(compiled().replica, "Pending", facts("podMissing"))
    assert result.state == "Pending"
    assert result.fired == (FiredTransition("Pending", "Pending", "Pending", "Pending -> Pending",
                                            "Normal", self_loop=True, index=0),)
    assert result.actions == (PlannedAction("createPod", {}, transition=0),)
    assert not result.changed


def test_an_instance_that_stays_replays_its_state_s_replayable_on_enter() -> None:
    # Entering Restarting planned deletePod once; staying there plans it again, so a
    # delete the API server refused is done on a later pass.
    result = step(compiled().replica, "Restarting", facts("podRunning"))
    assert result.state == "Restarting"
    assert result.fired == () and result.actions == ()
    assert result.replays == (PlannedAction("deletePod", {}, state="Restarting"),)
    assert result.replay_errors == ()


def test_a_self_loop_stays_and_replays_as_well() -> None:
    result = step(compiled().replica, "Pending", facts("podMissing"))
    assert result.actions == (PlannedAction("createPod", {}, transition=0),)
    assert result.replays == (PlannedAction("createService", {}, state="Pending"),)


def test_an_instance_that_moves_does_not_replay_the_state_it_left() -> None:
    result = step(compiled().replica, "Restarting", facts("podMissing"))
    assert result.state == "Pending"
    assert result.actions == (PlannedAction("createService", {}, state="Pending"),)
    assert result.replays == () and result.replay_errors == ()


def test_a_new_instance_replays_nothing() -> None:
    result = step(compiled().replica, None, facts("podPending"))
    assert result.state == "Pending"
    assert result.replays == ()


def test_only_replayable_actions_are_replayed_but_every_rendering_error_is_reported() -> None:
    replica = REPLICA.replace(
        "Restarting: {onEnter: [deletePod],",
        "Restarting: {onEnter: [countRestart, deletePod, "
        "{event: {reason: Gone, message: '${objects.missing.name}'}}],",
    )
    result = step(compiled(replica).replica, "Restarting", facts("podRunning"))
    assert result.replays == (PlannedAction("deletePod", {}, state="Restarting"),)
    assert len(result.replay_errors) == 1
    assert result.errors == ()


def test_withheld_observations_are_asked_for_with_the_replays_before_anything_fires() -> None:
    asked: list[tuple[PlannedAction, ...]] = []

    def not_missing(replays: tuple[PlannedAction, ...]) -> frozenset[str]:
        asked.append(replays)
        return frozenset({"podMissing"}) if replays else frozenset()

    machine = compiled().replica
    kept = step(machine, "Restarting", Facts(frozenset({"podMissing", "timedOut"}), VARIABLES,
                                             withheld=not_missing))
    assert asked == [(PlannedAction("deletePod", {}, state="Restarting"),)]
    assert (kept.state, kept.fired, kept.withheld) == ("Restarting", (), {"podMissing"})
    created = step(machine, None, Facts(frozenset({"podMissing"}), VARIABLES,
                                        withheld=not_missing))
    assert asked[-1] == () and created.withheld == frozenset()
    assert [f.target for f in created.fired] == ["Pending", "Pending"]


def test_reasons_and_event_types() -> None:
    machine = compiled().replica
    started = step(machine, "Pending", facts("podRunning")).fired[0]
    assert (started.reason, started.event_type) == ("Started", "Normal")
    failed = step(machine, "Running", facts("podFailed", policy="Never")).fired[0]
    assert (failed.reason, failed.event_type) == ("Failed", "Warning")
    timed_out = step(machine, "Running", facts("timedOut")).fired[0]
    assert (timed_out.reason, timed_out.event_type) == ("Failed", "Normal")


def test_a_guard_that_fails_counts_as_false_and_is_reported() -> None:
    result = step(compiled().replica, "Running", facts("podFailed", pod={}))
    assert result.state == "Failed"
    assert len(result.errors) == 1
    assert result.errors[0].startswith("transition 4 guard:")


def test_a_guard_that_is_not_bool_counts_as_false_and_is_reported() -> None:
    replica = REPLICA.replace("policy == 'OnFailure' && pod.exitCode != 1", "dyn(pod.exitCode)")
    result = step(compiled(replica).replica, "Running", facts("podFailed", pod={"exitCode": 1}))
    assert result.state == "Failed"
    assert result.errors == ("transition 4 guard gave 1, not a bool",)


def test_a_missing_variable_is_an_error_not_a_crash() -> None:
    result = step(compiled().replica, "Running", Facts(frozenset({"podFailed"}), {}))
    assert result.state == "Failed"
    assert len(result.errors) == 1


def test_observations_of_the_other_level_are_ignored() -> None:
    assert step(compiled().replica, "Running", facts("podRunning", "suspended")).fired == ()


def test_observations_that_cannot_hold_together_are_refused() -> None:
    with pytest.raises(StepError, match="podFailed, podRunning"):
        step(compiled().replica, "Running", facts("podRunning", "podFailed"))


def test_an_observation_set_gets_its_event_when_first_met_and_keeps_it() -> None:
    """Compiling builds no events (a job level has hundreds of observation sets, and
    building them all made every engine start cost seconds per machine); a set's event
    is built when a step first meets it and serves every later step with that set."""
    replica = compiled().replica
    assert replica.machine.events == {}
    first = step(replica, "Pending", facts("podRunning"))
    assert [f.target for f in first.fired] == ["Running"]
    assert len(replica.machine.events) == 1
    again = step(replica, "Pending", facts("podRunning"))
    assert [f.target for f in again.fired] == ["Running"]
    assert len(replica.machine.events) == 1
    assert step(replica, "Running", facts("podSucceeded")).state == "Succeeded"
    assert len(replica.machine.events) == 2


def test_an_unknown_state_is_refused() -> None:
    with pytest.raises(StepError, match="unknown replica state 'Lost'"):
        step(compiled().replica, "Lost", facts())


def test_a_machine_that_loops_hits_the_bound() -> None:
    job = JOB.replace("      Done: {terminal: success}\n",
                      "      Done: {terminal: success}\n      Waiting: {}\n")
    job += "      - {from: Running, to: Waiting}\n      - {from: Waiting, to: Running}\n"
    job = job.replace('when: "restarts == 0"', 'when: "restarts == 0 && false"')
    loop = r"job machine loops: (Running -> Waiting -> Running|Waiting -> Running -> Waiting)"
    with pytest.raises(StepError, match=loop):
        step(compiled(job=job).job, "Running", facts())


def test_a_transition_that_restarts_the_job_ends_the_step() -> None:
    """After restartJob no guard sees the world it saw (every replica starts again): the
    step stops there, as at a state with onEnter actions, so the next transition is judged
    against the new attempt (a machine without onEnter there looped before)."""
    job = JOB.replace("      Done: {terminal: success}\n",
                      "      Done: {terminal: success}\n      Restarting: {holdReplicas: true}\n")
    job = job.replace('when: "restarts == 0"', 'when: "restarts == 9"')
    job += ("      - {from: Running, to: Restarting, when: \"restarts < 5\", "
            "actions: [restartJob]}\n"
            "      - {from: Restarting, to: Running, \"on\": settled}\n")
    result = step(compiled(job=job).job, "Running", facts("settled", restarts=0))
    assert result.state == "Restarting"
    assert [f.target for f in result.fired] == ["Restarting"]
    assert [a.name for a in result.actions] == ["restartJob"]


def test_guards_chain_to_a_fixed_point_at_job_level() -> None:
    job = JOB.replace("      Done: {terminal: success}\n",
                      "      Done: {terminal: success}\n      Created: {}\n")
    job = job.replace("initial: Running", "initial: Created")
    job += "      - {from: Created, to: Running, when: \"restarts >= 0\"}\n"
    result = step(compiled(job=job).job, None, facts(restarts=0))
    assert [f.target for f in result.fired] == ["Created", "Running", "Done"]
    assert result.state == "Done"


def test_wildcard_leaves_every_non_terminal_state_and_terminal_job_states_hold() -> None:
    job = JOB.replace("from: Running", "from: '*'")
    machine = compiled(job=job).job
    assert machine.transitions[0].sources == ("Running",)
    assert machine.states["Done"].hold_replicas
    assert not machine.states["Running"].hold_replicas


def test_compiled_states() -> None:
    running = compiled().replica.states["Running"]
    assert (running.phase, running.timeout_seconds, running.requeue_seconds) == (
        "Running", 60.0, 30.0
    )


def test_requeue_after() -> None:
    machine = compiled().replica
    assert requeue_after(machine, "Running", VARIABLES) == 30.0
    assert requeue_after(machine, "Restarting", VARIABLES) == 90.0
    assert requeue_after(machine, "Failed", VARIABLES) == 20.0
    assert requeue_after(machine, "Pending", VARIABLES) is None


def test_render_pod_decorations() -> None:
    extra = (
        "  pod:\n"
        "    env:\n"
        "      RANK: \"replica.type == 'Master' ? 0 : replica.index + 1\"\n"
        "      TF_CONFIG: \"{'cluster': clusterSpec}\"\n"
        "    labels: {role: \"replica.type.lowerAscii()\"}\n"
    )
    decorations = render_pod_decorations(
        compiled(extra=extra), {**VARIABLES, "clusterSpec": {"worker": ["w-0:2222"]}}
    )
    assert decorations.env == {"RANK": "2", "TF_CONFIG": '{"cluster":{"worker":["w-0:2222"]}}'}
    assert decorations.labels == {"role": "worker"}
    assert decorations.annotations == {}


def test_compile_refuses_undefined_names_and_bad_cel() -> None:
    (loaded,) = load_text(document(job=JOB.replace("to: Done", "to: Dnoe")), "demo.yaml")
    with pytest.raises(DefinitionError, match="undefined state 'Dnoe'"):
        compile_definition(loaded)
    (loaded,) = load_text(document(job=JOB.replace("restarts == 0", "restarts == ")), "d.yaml")
    with pytest.raises(DefinitionError, match="CEL syntax error"):
        compile_definition(loaded)
