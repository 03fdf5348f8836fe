"""What compiling keeps of a definition for the engine beyond stepping: the file it came
from, the machine's failure rules in a job spec's words, an object's update policy, and a
state's name, its condition's message and a timeout of one second."""

from __future__ import annotations

from engine.definition.step import state_timeout
from tests.unit.definition.test_step import REPLICA, VARIABLES, compiled
from tests.unit.definition.texts import JOB

FAILURE_RULES = """\
  defaults:
    failureRules:
      - action: Ignore
        onPodConditions:
          - type: DisruptionTarget
      - {action: FailJob, replicaTypes: [Worker], onExitCodes: {operator: In, values: [42]}}
"""


def test_a_compiled_definition_keeps_the_file_it_was_loaded_from() -> None:
    """The model checker keeps what it learnt of a machine per file and name."""
    assert compiled().path == "demo.yaml"


def test_the_machine_failure_rules_are_kept_as_a_job_spec_writes_them() -> None:
    """They are matched after the job's own spec.failureRules, so they must read alike:
    the API's field names, and no null for a field the machine left out."""
    assert compiled(extra=FAILURE_RULES).default_failure_rules == (
        {"action": "Ignore", "replicaTypes": [],
         "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob", "replicaTypes": ["Worker"],
         "onExitCodes": {"operator": "In", "values": [42]}},
    )


def test_an_object_made_once_keeps_its_update_policy() -> None:
    """`update: Never` (made once when missing) and the default, Replace (rewritten)."""
    extra = ("  objects:\n"
             "    - {name: keys, apiVersion: v1, kind: Secret, update: Never}\n"
             "    - {name: cm, apiVersion: v1, kind: ConfigMap}\n")
    assert [o.update for o in compiled(extra=extra).objects] == ["Never", "Replace"]


def test_each_compiled_state_is_named_as_in_the_file() -> None:
    machine = compiled().replica
    assert {name: state.name for name, state in machine.states.items()} == {
        name: name for name in ("Pending", "Running", "Restarting", "Succeeded", "Failed")
    }


def test_a_timeout_of_one_second_is_a_timeout() -> None:
    """Only 0 turns a fixed timeout off; a second is the shortest one written in seconds."""
    replica = REPLICA.replace("Running: {requeueAfter: 30s, timeout: 1m}",
                              "Running: {requeueAfter: 30s, timeout: 1s}")
    assert state_timeout(compiled(replica=replica).replica, "Running", VARIABLES) == 1.0


def test_a_state_condition_message_is_its_own_template() -> None:
    """The job's condition says the entered state's message, rendered with the job's
    variables, rather than the transition's."""
    job = JOB.replace(
        "Done: {terminal: success}",
        'Done: {terminal: success, condition: {type: Succeeded, message: "${restarts} restarts"}}',
    )
    states = compiled(job=job).job.states
    template = states["Done"].condition_message
    assert template is not None
    assert template.render(VARIABLES) == ("2 restarts", [])
    assert states["Running"].condition_message is None
