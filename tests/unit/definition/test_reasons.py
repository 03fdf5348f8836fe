"""`${job.kind}` in reasons: replaced by the governed kind when loaded; nothing else may appear."""

from __future__ import annotations

from pathlib import Path

from engine.definition import CompiledDefinition, compile_definition, load_file, load_text
from engine.definition.compiled import CompiledAction
from engine.definition.loader import read_text
from engine.definition.validate import load_definitions, validate_text
from tests.unit.definition.texts import REPLICA, abstract, document, extending

MACHINES = Path(__file__).resolve().parents[3] / "machines"

# Every place a reason is written, in both action forms (job: lines 6-22; replica: 23-35).
JOB = """\
  job:
    initial: Running
    states:
      Running:
        condition: {type: Running, reason: "${job.kind}Running"}
        onEnter:
          - setCondition: {type: Started, reason: "${job.kind}Started"}
          - {name: event, args: {reason: "${job.kind}Began"}}
      Done: {terminal: success}
    transitions:
      - from: Running
        to: Done
        reason: "${job.kind}Finished"
        message: "${job.kind} ${job.metadata.name} finished"
        actions:
          - event: {reason: "${job.kind}Done", type: Normal}
          - {name: setCondition, args: {type: Finished, reason: "${job.kind}Finished"}}
"""

REPLICA_WITH_REASON = REPLICA.replace(
    '"on": podRunning}',
    '"on": podRunning, actions: [{setCondition: {type: Ready, reason: "${job.kind}Ready"}}]}',
)

TEXT = document(job=JOB, replica=REPLICA_WITH_REASON)


def reason_of(action: CompiledAction) -> str:
    """A literal reason, or (setCondition and event take templates) the template's text."""
    if "reason" in action.literals:
        return str(action.literals["reason"])
    return action.templates["reason"].source


def _has_reason(action: CompiledAction) -> bool:
    return "reason" in action.literals or "reason" in action.templates


def every_reason(compiled: CompiledDefinition) -> list[str]:
    found = []
    for machine in (compiled.job, compiled.replica):
        for state in machine.states.values():
            if state.condition is not None and state.condition.reason is not None:
                found.append(state.condition.reason)
            found += [reason_of(a) for a in state.on_enter if _has_reason(a)]
        for transition in machine.transitions:
            found.append(transition.reason)
            found += [reason_of(a) for a in transition.actions if _has_reason(a)]
    return found


def test_the_placeholder_becomes_the_governed_kind_wherever_a_reason_is_written() -> None:
    assert validate_text(TEXT, "demo.yaml") == []
    (loaded,) = load_text(TEXT, "demo.yaml")
    compiled = compile_definition(loaded)
    running = compiled.job.states["Running"]
    assert running.condition is not None and running.condition.reason == "DemoRunning"
    assert [reason_of(a) for a in running.on_enter] == ["DemoStarted", "DemoBegan"]
    (finish,) = compiled.job.transitions
    assert finish.reason == "DemoFinished"
    assert [reason_of(a) for a in finish.actions] == ["DemoDone", "DemoFinished"]
    assert [reason_of(a) for a in compiled.replica.transitions[1].actions] == ["DemoReady"]
    written = loaded.data["spec"]["job"]["transitions"][0]
    assert written["reason"] == "DemoFinished"
    assert written["actions"][1] == {"name": "setCondition",
                                     "args": {"type": "Finished", "reason": "DemoFinished"}}


def test_messages_are_templates_and_keep_their_placeholders() -> None:
    (loaded,) = load_text(TEXT, "demo.yaml")
    written = loaded.data["spec"]["job"]["transitions"][0]
    assert written["message"] == "${job.kind} ${job.metadata.name} finished"
    (finish,) = compile_definition(loaded).job.transitions
    assert finish.message is not None
    job = {"kind": "Other", "metadata": {"name": "j"}}
    assert finish.message.render({"job": job}) == ("Other j finished", [])


def test_each_machine_extending_a_base_gets_its_own_kind() -> None:
    bases, _ = read_text(abstract(TEXT), "base.yaml")
    text = extending(name="alpha", kind="Alpha") + "---\n" + extending(name="beta", kind="Beta")
    alpha, beta = (compile_definition(d) for d in load_text(text, "kinds.yaml", bases=bases))
    assert every_reason(alpha) == [
        "AlphaRunning", "AlphaStarted", "AlphaBegan", "AlphaFinished", "AlphaDone",
        "AlphaFinished", "Pending", "Running", "AlphaReady", "Succeeded", "Failed",
    ]
    assert every_reason(beta) == [r.replace("Alpha", "Beta") for r in every_reason(alpha)]


def test_an_abstract_machine_keeps_its_placeholders() -> None:
    (loaded,) = load_text(abstract(TEXT), "base.yaml")
    assert loaded.data["spec"]["job"]["transitions"][0]["reason"] == "${job.kind}Finished"
    assert validate_text(abstract(TEXT), "base.yaml") == []


def test_any_other_placeholder_in_a_reason_is_an_error() -> None:
    """A state's or transition's reason is a word; setCondition's and event's may be
    templates (JobSet's `FailurePolicy_${rule}`), so `${job.name}` is left to them."""
    text = TEXT.replace('reason: "${job.kind}', 'reason: "${job.name}')
    found = [str(d) for d in validate_text(text, "demo.yaml")]
    where = ["10:44", "18:17"]
    words = ["Running", "Finished"]
    assert found == [
        f"demo.yaml:{at}: error: reason '${{job.name}}{word}' is a word, not a "
        "template: the only placeholder a reason may hold is ${job.kind} (the kind the "
        "machine governs)"
        for at, word in zip(where, words, strict=True)
    ]


def test_the_placeholder_must_be_written_exactly() -> None:
    text = TEXT.replace('reason: "${job.kind}Finished"\n', 'reason: "${ job.kind }Finished"\n')
    assert [str(d) for d in validate_text(text, "demo.yaml")] == [
        "demo.yaml:18:17: error: reason '${ job.kind }Finished' is a word, not a template: the "
        "only placeholder a reason may hold is ${job.kind} (the kind the machine governs)"
    ]


def test_the_reason_with_the_kind_in_it_must_still_be_camel_case() -> None:
    text = TEXT.replace('reason: "${job.kind}Finished"\n', 'reason: "${job.kind} finished"\n')
    assert [str(d) for d in validate_text(text, "demo.yaml")] == [
        "demo.yaml:18:17: error: reason 'Demo finished' must be CamelCase (a capital letter, "
        "then letters and digits)"
    ]


def test_the_shipped_kubeflow_kinds_name_their_reasons_after_their_kind() -> None:
    compiled = {c.name: c for c in load_definitions([MACHINES])}
    for name, kind in (("pytorchjob", "PyTorchJob"), ("tfjob", "TFJob")):
        reasons = every_reason(compiled[name])
        assert not [r for r in reasons if "$" in r]
        created = compiled[name].job.states["Created"].condition
        assert created is not None and created.reason == f"{kind}Created"
        assert {f"{kind}Running", f"{kind}Succeeded", f"{kind}Failed", f"{kind}Suspended",
                f"{kind}Resumed", f"{kind}Restarted", f"{kind}Restarting"} <= set(reasons)
    (kubeflow,) = load_file(MACHINES / "kubeflow.yaml")
    written = kubeflow.data["spec"]["job"]["states"]["Created"]["condition"]["reason"]
    assert written == "${job.kind}Created"
