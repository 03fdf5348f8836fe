"""`spec.extends`: a machine written as its differences from a base, merged before checking."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.definition import (
    DefinitionError,
    load_definitions,
    load_file,
    load_text,
    validate_paths,
)
from engine.definition.errors import sorted_diagnostics
from engine.definition.extends import DIRECTIVES
from engine.definition.loader import LoadedDefinition, parse_text, read_text
from engine.definition.validate import check_definitions, validate_report, validate_text
from engine.shipped import shipped_dir
from tests.unit.definition.test_validate import write
from tests.unit.definition.texts import GOVERNS, JOB, REPLICA, abstract, document, extending

MACHINES = Path(__file__).resolve().parents[3] / "machines"

# Line 6 onwards, as in `document`: job 6-14, replica 15-26, the rest 27-33.
NAMED_JOB = """\
  job:
    initial: Running
    states:
      Running: {description: runs, phase: Active}
      Done: {terminal: success}
      Broken: {terminal: failure}
    transitions:
      - {name: finish, from: Running, to: Done, when: "restarts == 0", reason: Finished}
      - {name: break, from: Running, to: Broken, "on": invalid, type: Warning}
"""

NAMED_REPLICA = """\
  replica:
    initial: Pending
    states:
      Pending: {}
      Running: {}
      Succeeded: {terminal: success}
      Failed: {terminal: failure}
    transitions:
      - {name: create, from: Pending, to: Pending, "on": podMissing, actions: [createPod]}
      - {name: run, from: Pending, to: Running, "on": podRunning}
      - {name: succeed, from: [Pending, Running], to: Succeeded, "on": podSucceeded}
      - {name: fail, from: [Pending, Running], to: Failed, "on": podFailed}
"""

BASE_REST = """\
  defaults:
    runPolicy: {cleanPodPolicy: None, suspend: false}
  pod:
    env: {A: "'a'"}
    labels: {role: "replica.type"}
  services:
    - {ports: [{name: http, port: 80}]}
"""

BASE = abstract(document(job=NAMED_JOB, replica=NAMED_REPLICA, extra=BASE_REST))


def parsed(body: str, base: str = BASE) -> tuple[list[LoadedDefinition], list[str]]:
    """The machine `extending(body)` in child.yaml, over `base` read from base.yaml."""
    bases, _ = read_text(base, "base.yaml")
    definitions, diagnostics = parse_text(extending(body), "child.yaml", bases=bases)
    checked = sorted_diagnostics(diagnostics + check_definitions(definitions))
    return definitions, [str(d) for d in checked]


def merged(body: str, base: str = BASE) -> LoadedDefinition:
    definitions, problems = parsed(body, base)
    assert problems == []
    (child,) = definitions
    return child


def problems(body: str, base: str = BASE) -> list[str]:
    return parsed(body, base)[1]


def names(loaded: LoadedDefinition, level: str = "replica") -> list[str | None]:
    return [t.name for t in getattr(loaded.definition.spec, level).transitions]


# --- what the merged machine is ---------------------------------------------------------


def test_a_machine_that_only_extends_is_its_base_governing_its_own_kind() -> None:
    (base,), _ = read_text(BASE, "base.yaml")
    child = merged("")
    spec = {k: v for k, v in base.data["spec"].items() if k != "abstract"}
    assert child.data["spec"] == {**spec, "governs": {"apiVersion": "example.dev/v1",
                                                      "kind": "Demo"}}
    assert names(child, "job") == ["finish", "break"]
    assert names(child) == ["create", "run", "succeed", "fail"]


def test_mappings_merge_key_by_key_and_null_removes_a_key() -> None:
    child = merged("""\
  job:
    states:
      Running: {description: null, phase: Going}
      Broken: null
      Waiting: {description: new}
    transitions:
      - {name: break, remove: true}
      - {name: wait, from: Running, to: Waiting, "on": suspended}
      - {name: go, from: Waiting, to: Running, "on": resumed}
  defaults:
    runPolicy: {suspend: null, backoffLimit: 3}
  pod:
    env: {B: "'b'"}
""")
    spec = child.data["spec"]
    assert spec["job"]["states"] == {
        "Running": {"phase": "Going"},  # description removed, phase replaced
        "Done": {"terminal": "success"},  # only in the base: kept
        "Waiting": {"description": "new"},  # only in the child: added
    }
    assert spec["job"]["initial"] == "Running"
    assert spec["defaults"] == {"runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3}}
    assert spec["pod"] == {"env": {"A": "'a'", "B": "'b'"}, "labels": {"role": "replica.type"}}


def test_lists_and_scalars_replace_whole() -> None:
    child = merged("""\
  replica:
    initial: Running
    transitions:
      - {name: create, actions: [createService]}
      - {name: succeed, from: [Running]}
      - {name: back, from: Running, to: Pending, "on": podMissing}
  services:
    - {replicaTypes: [Worker], ports: [{name: grpc, port: 90}]}
""")
    spec = child.data["spec"]
    assert spec["replica"]["initial"] == "Running"
    transitions = {t["name"]: t for t in spec["replica"]["transitions"]}
    assert transitions["create"]["actions"] == ["createService"]
    assert transitions["succeed"]["from"] == ["Running"]
    assert spec["services"] == [{"replicaTypes": ["Worker"], "ports": [{"name": "grpc",
                                                                       "port": 90}]}]


def test_a_named_transition_changes_only_the_fields_it_sets_and_keeps_its_place() -> None:
    child = merged('  job:\n    transitions:\n      - {name: finish, when: "restarts < 3"}\n')
    assert child.data["spec"]["job"]["transitions"] == [
        {"name": "finish", "from": "Running", "to": "Done", "when": "restarts < 3",
         "reason": "Finished"},
        {"name": "break", "from": "Running", "to": "Broken", "on": "invalid",
         "type": "Warning"},
    ]


def test_remove_drops_the_named_transition() -> None:
    child = merged("  replica:\n    transitions:\n      - {name: fail, remove: true}\n"
                   '      - {name: end, from: Running, to: Failed, "on": podFailed}\n')
    assert names(child) == ["create", "run", "succeed", "end"]
    assert child.data["spec"]["replica"]["transitions"][3]["from"] == "Running"


def test_new_transitions_go_before_or_after_a_named_one_or_last() -> None:
    child = merged("""\
  replica:
    transitions:
      - {name: lost, from: [Pending, Running], to: Failed, "on": podLost}
      - {name: early-exit, before: succeed, from: Running, to: Failed, "on": podSucceeded,
         when: "exitCode == 3"}
      - {name: rerun, after: create, from: Pending, to: Running, "on": podRunning,
         when: "replica.restarts > 0"}
      - {from: [Pending, Running], to: Failed, "on": podGone}
""")
    assert names(child) == ["create", "rerun", "run", "early-exit", "succeed", "fail", "lost",
                            None]
    assert child.definition.spec.replica.transitions[1].when == "replica.restarts > 0"


def test_two_new_transitions_before_the_same_one_keep_their_written_order() -> None:
    child = merged("""\
  replica:
    transitions:
      - {name: first, before: fail, from: Running, to: Failed, when: "exitCode == 1"}
      - {name: second, before: fail, from: Running, to: Failed, when: "exitCode == 2"}
""")
    assert names(child) == ["create", "run", "succeed", "first", "second", "fail"]


def test_two_new_transitions_after_the_same_one_keep_their_written_order() -> None:
    child = merged("""\
  replica:
    transitions:
      - {name: first, after: succeed, from: Running, to: Failed, when: "exitCode == 1"}
      - {name: second, after: succeed, from: Running, to: Failed, when: "exitCode == 2"}
""")
    assert names(child) == ["create", "run", "succeed", "first", "second", "fail"]


def test_a_named_transition_moves_with_before_or_after_and_keeps_its_fields() -> None:
    child = merged("  replica:\n    transitions:\n      - {name: create, after: succeed}\n"
                   "      - {name: fail, before: run}\n")
    assert names(child) == ["fail", "run", "succeed", "create"]
    assert child.data["spec"]["replica"]["transitions"][3] == {
        "name": "create", "from": "Pending", "to": "Pending", "on": "podMissing",
        "actions": ["createPod"],
    }


def test_a_named_transition_moved_after_another_lands_right_after_it() -> None:
    child = merged("  replica:\n    transitions:\n      - {name: create, after: run}\n")
    assert names(child) == ["run", "create", "succeed", "fail"]


def test_merge_directives_never_reach_the_merged_machine() -> None:
    child = merged("""\
  job:
    transitions:
      - {name: finish, remove: false, when: "restarts < 2"}
      - {name: stop, before: break, from: Running, to: Broken, "on": deleting}
  replica:
    transitions:
      - {name: run, after: succeed}
      - {name: fail, remove: true}
      - {name: end, from: Running, to: Failed, "on": podLost}
""")
    for level in ("job", "replica"):
        for written in child.data["spec"][level]["transitions"]:
            assert set(written).isdisjoint(DIRECTIVES), written
        for transition in getattr(child.definition.spec, level).transitions:
            assert (transition.before, transition.after, transition.remove) == (None, None, None)
    assert names(child, "job") == ["finish", "stop", "break"]
    assert names(child) == ["create", "succeed", "run", "end"]


def test_abstract_and_extends_are_not_inherited_and_metadata_is_the_machines_own() -> None:
    base = BASE.replace("metadata: {name: base}",
                        "metadata: {name: base, labels: {team: ml}, annotations: {a: b}}")
    child = merged("", base=base)
    assert child.data["metadata"] == {"name": "child"}
    assert "labels" not in child.definition.metadata.model_dump()
    assert {"abstract", "extends"}.isdisjoint(child.data["spec"])
    assert not child.abstract
    assert child.bases == ("base",)


MIDDLE = """\
---
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata: {name: middle}
spec:
  abstract: true
  extends: base
  job:
    transitions:
      - {name: finish, when: "restarts < 5"}
"""


def test_the_nearest_base_wins_and_bases_are_listed_nearest_first() -> None:
    bases, _ = read_text(BASE + MIDDLE, "bases.yaml")
    definitions, diagnostics = parse_text(
        extending('  job:\n    transitions:\n      - {name: finish, reason: Done}\n',
                  base="middle"), "child.yaml", bases=bases)
    assert diagnostics == []
    (loaded,) = definitions
    assert loaded.bases == ("middle", "base")
    (finish, _) = loaded.data["spec"]["job"]["transitions"]
    assert finish == {"name": "finish", "from": "Running", "to": "Done",
                      "when": "restarts < 5", "reason": "Done"}


def test_a_machine_extending_another_may_itself_be_abstract(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", BASE)
    write(tmp_path, "middle.yaml", MIDDLE)
    write(tmp_path, "child.yaml", extending(base="middle"))
    assert validate_paths([tmp_path]) == []
    assert [c.name for c in load_definitions([tmp_path])] == ["child"]


def test_the_merged_machine_runs_what_it_inherited(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", BASE)
    write(tmp_path, "child.yaml", extending(
        '  job:\n    transitions:\n      - {name: finish, when: "restarts < 3"}\n'))
    (compiled,) = load_definitions([tmp_path])
    finish, broken = compiled.job.transitions
    assert (finish.sources, finish.target, finish.reason) == (("Running",), "Done", "Finished")
    assert finish.guard is not None and finish.guard.source == "restarts < 3"
    assert (broken.target, broken.on, broken.event_type) == ("Broken", "invalid", "Warning")
    assert [t.target for t in compiled.replica.transitions] == [
        "Pending", "Running", "Succeeded", "Failed"]
    assert compiled.source["spec"]["pod"]["env"] == {"A": "'a'"}


# --- where bases are found --------------------------------------------------------------


def test_the_base_may_come_later_in_the_same_text() -> None:
    text = extending() + "---\n" + BASE
    assert [(d.name, d.bases) for d in load_text(text, "all.yaml")] == [
        ("child", ("base",)), ("base", ())]
    assert validate_text(text, "all.yaml") == []


def test_the_base_may_be_in_another_file_given_with_it(tmp_path: Path) -> None:
    base = write(tmp_path, "bases/base.yaml", BASE)
    child = write(tmp_path, "kinds/child.yaml", extending())
    assert validate_paths([base, child]) == []
    assert [str(d) for d in validate_paths([child])] == [
        f"{child}:5:12: error: no machine named 'base' to extend; looked in the files given, "
        f"{child.parent}/, the shipped machines ({shipped_dir('machines')}/)"
    ]


def test_a_shipped_machine_is_a_base_and_validate_says_so(tmp_path: Path) -> None:
    child = write(tmp_path, "kinds/child.yaml", extending(base="kubeflow"))
    report = validate_report([child])
    assert report.diagnostics == []
    assert report.notes == [f"{child}:5:12: note: machine 'child' extends 'kubeflow' from "
                            f"{shipped_dir('machines') / 'kubeflow.yaml'}"]
    assert report.summary() == "1 machine, 0 errors, 0 warnings"


def test_the_note_of_the_base_used_is_at_extends_wherever_it_is_written(tmp_path: Path) -> None:
    """Not at spec's first entry: `extends` is not part of the merged machine, whose
    positions the other diagnostics use."""
    text = extending(base="kubeflow")
    written = text.replace("  extends: kubeflow\n", "")
    assert written != text
    child = write(tmp_path, "later.yaml", written.rstrip("\n") + "\n  extends: kubeflow\n")
    assert child.read_text().splitlines()[5] == "  extends: kubeflow"  # after governs
    report = validate_report([child])
    assert report.diagnostics == []
    assert report.notes == [f"{child}:6:12: note: machine 'child' extends 'kubeflow' from "
                            f"{shipped_dir('machines') / 'kubeflow.yaml'}"]


def test_the_base_is_found_among_the_machine_files_of_the_same_folder(tmp_path: Path) -> None:
    write(tmp_path, "base.yml", BASE)
    write(tmp_path, "notes.txt", "spec: [")
    child = write(tmp_path, "child.yaml", extending())
    (loaded,) = load_file(child)
    assert loaded.bases == ("base",)
    assert validate_paths([child]) == []
    assert [c.name for c in load_definitions([child])] == ["child"]


def test_a_base_given_with_the_machine_wins_over_one_in_its_folder(tmp_path: Path) -> None:
    given = write(tmp_path, "given/base.yaml", BASE.replace("reason: Finished", "reason: Given"))
    write(tmp_path, "kinds/base.yaml", BASE.replace("reason: Finished", "reason: Folder"))
    child = write(tmp_path, "kinds/child.yaml", extending())
    (compiled,) = load_definitions([given, child])
    assert compiled.job.transitions[0].reason == "Given"
    (alone,) = load_file(child)
    assert alone.data["spec"]["job"]["transitions"][0]["reason"] == "Folder"


def test_a_base_in_the_folder_that_cannot_be_used_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", BASE.replace("    initial: Running\n",
                                              "    initial: Running\n    initial: Running\n"))
    child = write(tmp_path, "child.yaml", extending())
    assert [str(d) for d in validate_paths([child])] == [
        f"{child}:5:12: error: machine 'base' cannot be extended: {tmp_path}/base.yaml has "
        "errors of its own"
    ]
    with pytest.raises(DefinitionError, match="cannot be extended"):
        load_definitions([child])


def test_a_base_in_the_folder_that_is_broken_only_in_its_folder_is_reported(
    tmp_path: Path,
) -> None:
    write(tmp_path, "base.yaml", BASE.replace("Running: {description: runs, phase: Active}",
                                              "Running: {colour: red}"))
    child = write(tmp_path, "child.yaml", extending())
    assert [str(d) for d in validate_paths([child])] == [
        f"{tmp_path}/base.yaml:9:17: error: unknown field 'colour'; allowed fields: phase, "
        "condition, terminal, onEnter, requeueAfter, timeout, holdReplicas, description, "
        "reachedOnlyBy, steady"
    ]


# --- errors -------------------------------------------------------------------------------


def test_no_machine_to_extend() -> None:
    definitions, found = parsed("", base=BASE.replace("name: base", "name: other"))
    assert definitions == []
    assert found == ["child.yaml:5:12: error: no machine named 'base' to extend"]


def test_a_loop_of_extends_is_reported_for_each_machine_in_it() -> None:
    one = extending(name="one", base="two", kind="One")
    two = extending(name="two", base="one", kind="Two")
    assert [str(d) for d in validate_text(one + "---\n" + two, "loop.yaml")] == [
        "loop.yaml:5:12: error: machines extend each other in a loop: two -> one -> two",
        "loop.yaml:12:12: error: machines extend each other in a loop: one -> two -> one",
    ]
    itself = extending(name="self", base="self")
    assert [str(d) for d in validate_text(itself, "self.yaml")] == [
        "self.yaml:5:12: error: machines extend each other in a loop: self -> self"
    ]


def test_a_chain_of_more_than_sixteen_bases_is_refused() -> None:
    chain = [extending(name=f"m{i}", base=f"m{i + 1}", kind=f"M{i}") for i in range(17)]
    root = abstract(document()).replace("name: base", "name: m17")
    found = validate_text("---\n".join([*chain, root]), "chain.yaml")
    assert [d.message for d in found] == ["more than 16 machines extend each other"]


def test_remove_of_a_transition_the_base_lacks() -> None:
    assert problems("  job:\n    transitions:\n      - {name: nope, remove: true}\n") == [
        "child.yaml:9:30: error: no transition named 'nope' to remove"
    ]


def test_remove_without_a_name() -> None:
    assert problems("  replica:\n    transitions:\n      - {remove: true}\n") == [
        "child.yaml:9:18: error: 'remove: true' needs the 'name' of a transition of the base"
    ]


def test_before_or_after_an_unknown_transition_lists_the_named_ones() -> None:
    body = """\
  job:
    transitions:
      - {name: a, before: finsh, from: Running, to: Done, "on": deleting}
  replica:
    transitions:
      - {name: b, after: sucess, from: Running, to: Failed, "on": podLost}
"""
    assert problems(body) == [
        "child.yaml:9:27: error: no transition named 'finsh' to go before; named transitions: "
        "finish, break",
        "child.yaml:12:26: error: no transition named 'sucess' to go after; named transitions: "
        "create, run, succeed, fail",
    ]


def test_merge_directives_in_a_machine_that_extends_nothing() -> None:
    job = JOB.replace('when: "restarts == 0"', "name: t, before: x, after: y, remove: false")
    assert [str(d) for d in validate_text(document(job=job), "demo.yaml")] == [
        f"demo.yaml:12:{column}: error: '{key}' only means something in a machine that "
        "extends another (spec.extends)"
        for column, key in ((44, "before"), (55, "after"), (65, "remove"))
    ]


def test_merge_directives_in_the_base_of_a_machine_are_reported_too() -> None:
    base = BASE.replace("{name: break,", "{name: break, after: finish,")
    assert problems("", base=base) == [
        "base.yaml:14:23: error: 'after' only means something in a machine that extends "
        "another (spec.extends)"
    ]


def test_directives_are_consumed_when_the_base_level_has_no_transitions() -> None:
    base = BASE.replace("""\
    transitions:
      - {name: finish, from: Running, to: Done, when: "restarts == 0", reason: Finished}
      - {name: break, from: Running, to: Broken, "on": invalid, type: Warning}
""", "")
    body = """\
  job:
    transitions:
      - {name: finish, before: nothing, from: Running, to: Done}
      - {name: gone, remove: true}
"""
    assert problems(body, base=base) == [
        "child.yaml:9:32: error: no transition named 'nothing' to go before; named "
        "transitions: (none)",
        "child.yaml:10:30: error: no transition named 'gone' to remove",
    ]


def test_duplicate_transition_names_within_one_level() -> None:
    job = JOB.replace('when: "restarts == 0"', 'when: "restarts == 0", name: done') + (
        '      - {name: done, from: Running, to: Done, "on": deleting}\n')
    assert [str(d) for d in validate_text(document(job=job), "demo.yaml")] == [
        "demo.yaml:13:16: error: transition name 'done' is already used (line 12): names "
        "identify transitions for machines that extend this one"
    ]
    unique = job.replace("{name: done, from: Running", "{name: leave, from: Running")
    replica = REPLICA.replace('"on": podRunning}', '"on": podRunning, name: done}')
    assert validate_text(document(job=unique, replica=replica), "demo.yaml") == []


def test_duplicate_transition_names_inherited_from_the_base_are_reported_there() -> None:
    base = BASE.replace("{name: break,", "{name: finish,")
    assert problems("", base=base) == [
        "base.yaml:14:16: error: transition name 'finish' is already used (line 13): names "
        "identify transitions for machines that extend this one"
    ]


def test_a_name_written_twice_in_the_extending_machine_is_reported() -> None:
    body = """\
  job:
    transitions:
      - {name: extra, from: Running, to: Done, "on": deleting}
      - {name: extra, from: Running, to: Broken, "on": resumed}
"""
    assert problems(body) == [
        "child.yaml:10:16: error: transition name 'extra' is already used earlier in this "
        "machine: name each change once"
    ]


# --- where problems are reported ---------------------------------------------------------


def test_a_problem_in_an_inherited_part_is_reported_at_the_base_files_line(
    tmp_path: Path,
) -> None:
    base = write(tmp_path, "base.yaml", BASE.replace('"restarts == 0"', "\"restarts == 'x'\""))
    child = write(tmp_path, "child.yaml", extending("""\
  job:
    transitions:
      - {name: stop, before: finish, from: Running, to: Broken, "on": deleting}
      - {name: finish, reason: done}
"""))
    assert [str(d) for d in validate_paths([base, child])] == [
        f"{base}:13:65: error: CEL type error: found no matching overload for '_==_' "
        "applied to '(int, string)'",
        f"{child}:10:32: error: reason 'done' must be CamelCase (a capital letter, then "
        "letters and digits)",
    ]


def test_a_base_problem_is_reported_once_however_many_machines_extend_it(
    tmp_path: Path,
) -> None:
    write(tmp_path, "base.yaml", BASE.replace("to: Done,", "to: Dnoe,"))
    write(tmp_path, "one.yaml", extending(name="one", kind="One"))
    write(tmp_path, "two.yaml", extending(name="two", kind="Two"))
    assert [str(d) for d in validate_paths([tmp_path])] == [
        f"{tmp_path}/base.yaml:13:43: error: undefined state 'Dnoe' in 'to'; states: "
        "Running, Done, Broken"
    ]


def test_a_problem_in_the_extending_machines_own_part_is_reported_there() -> None:
    body = '  replica:\n    transitions:\n      - {name: run, "on": podRuning}\n'
    found = problems(body)
    assert len(found) == 1
    assert found[0].startswith("child.yaml:9:27: error: unknown observation 'podRuning'")


# --- abstract machines ------------------------------------------------------------------


def test_an_abstract_machine_needs_no_governs_and_is_not_checked_alone(tmp_path: Path) -> None:
    broken = BASE.replace("to: Done,", "to: Dnoe,")
    assert validate_text(broken, "base.yaml") == []
    concrete = broken.replace("  abstract: true\n", GOVERNS)
    assert [str(d) for d in validate_text(concrete, "base.yaml")] == [
        "base.yaml:13:43: error: undefined state 'Dnoe' in 'to'; states: Running, Done, Broken"
    ]


def test_abstract_machines_are_not_compiled(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", BASE)
    write(tmp_path, "child.yaml", extending())
    assert [c.name for c in load_definitions([tmp_path])] == ["child"]
    (base,) = load_file(tmp_path / "base.yaml")
    assert base.abstract


def test_a_concrete_machine_without_governs_is_an_error() -> None:
    for header in ("", "  abstract: false\n"):
        found = validate_text(document().replace(GOVERNS, header), "demo.yaml")
        assert [str(d) for d in found] == [
            "demo.yaml:5:3: error: governs is required (only an abstract machine governs no "
            "kind)"
        ]


# --- the shipped Kubeflow machines --------------------------------------------------------


def test_tfjob_puts_its_chief_rule_right_before_the_inherited_succeed() -> None:
    (kubeflow,) = load_file(MACHINES / "kubeflow.yaml")
    (tfjob,) = load_file(MACHINES / "tfjob.yaml")
    assert tfjob.bases == ("kubeflow",)
    inherited = names(kubeflow)
    at = inherited.index("succeed")
    assert names(tfjob) == [*inherited[:at], "succeed-as-chief", *inherited[at:]]
    assert names(tfjob, "job") == names(kubeflow, "job")


def test_pytorchjob_changes_only_the_guards_it_writes() -> None:
    """...and adds the elastic maxRestarts bound right after the backoff limit."""
    (kubeflow,) = load_file(MACHINES / "kubeflow.yaml")
    (pytorch,) = load_file(MACHINES / "pytorchjob.yaml")
    base = {t.name: t for t in kubeflow.definition.spec.job.transitions}
    added = [t.name for t in pytorch.definition.spec.job.transitions if t.name not in base]
    assert added == ["elastic-max-restarts"]
    order = [t.name for t in pytorch.definition.spec.job.transitions]
    assert order[order.index("backoff-limit") + 1] == "elastic-max-restarts"
    for mine in pytorch.definition.spec.job.transitions:
        if mine.name in added:
            continue
        theirs = base[mine.name]
        assert mine.source == theirs.source and mine.to == theirs.to
        assert mine.message == theirs.message
        assert (mine.when == theirs.when) == (mine.name not in ("succeed", "run"))
    assert pytorch.definition.spec.replica.states == kubeflow.definition.spec.replica.states
    assert names(pytorch) == names(kubeflow)
    assert pytorch.definition.spec.pod.labels["training.kubeflow.org/job-name"] == (
        "job.metadata.name")
