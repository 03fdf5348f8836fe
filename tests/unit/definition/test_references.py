"""governs.references: typed in CEL by their names, and worked out from a job."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition import (
    DefinitionError,
    ReferenceTarget,
    compile_definition,
    load_text,
    reference_targets,
)

MACHINE = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata: {name: thing}
spec:
  governs:
    apiVersion: example.com/v1
    kind: Thing
    references:
      runtime:
        apiVersion: "'example.com/v1'"
        kind: "has(job.spec.ref.kind) ? job.spec.ref.kind : 'ClusterRuntime'"
        name: "job.spec.ref.name"
        scope: "has(job.spec.ref.kind) && job.spec.ref.kind == 'Runtime' ? 'Namespaced' : 'Cluster'"
  job:
    initial: Waiting
    states:
      Waiting: {}
      Done: {terminal: success}
    transitions:
      - {from: Waiting, to: Done, when: "GUARD"}
  replica:
    initial: Pending
    states: {Pending: {}}
"""


def _compiled(guard: str = "size(references.runtime) > 0") -> Any:
    return compile_definition(load_text(MACHINE.replace("GUARD", guard), "thing.yaml")[0])


def _job(ref: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": "team", "name": "j"}, "spec": {"ref": ref}}


def test_a_reference_is_a_field_of_references() -> None:
    assert _compiled("references.runtime.spec.numNodes == 2").references.keys() == {"runtime"}


def test_a_name_the_machine_does_not_give_is_an_error_naming_those_it_does() -> None:
    with pytest.raises(DefinitionError) as raised:
        _compiled("size(references.runtim) > 0")
    assert "unknown field 'runtim' of references (did you mean 'runtime'?); its fields: " \
        "runtime" in str(raised.value)


def test_a_machine_without_references_has_none_to_read() -> None:
    text = MACHINE.replace("GUARD", "size(references.runtime) > 0")
    text = text[:text.index("    references:")] + text[text.index("  job:"):]
    with pytest.raises(DefinitionError, match="unknown field 'runtime' of references"):
        compile_definition(load_text(text, "thing.yaml")[0])


def test_reference_expressions_must_give_strings() -> None:
    with pytest.raises(DefinitionError, match="must give string, but it gives int"):
        compile_definition(load_text(MACHINE.replace("GUARD", "true").replace(
            'name: "job.spec.ref.name"', 'name: "1"'), "thing.yaml")[0])


def test_a_cluster_scoped_target_has_no_namespace() -> None:
    assert reference_targets(_compiled(), _job({"name": "torch"})) == {
        "runtime": ReferenceTarget("example.com/v1", "ClusterRuntime", None, "torch")}


def test_a_namespaced_target_is_in_the_jobs_namespace() -> None:
    assert reference_targets(_compiled(), _job({"kind": "Runtime", "name": "torch"})) == {
        "runtime": ReferenceTarget("example.com/v1", "Runtime", "team", "torch")}


def test_a_target_that_cannot_be_computed_says_why() -> None:
    found = reference_targets(_compiled(), _job({"kind": "Runtime"}))["runtime"]
    assert isinstance(found, str) and found.startswith("references.runtime.name: ")


def test_an_empty_name_names_nothing() -> None:
    assert reference_targets(_compiled(), _job({"name": ""})) == {
        "runtime": "references.runtime.name gave '', not a non-empty string"}


def test_a_scope_other_than_the_two_is_refused() -> None:
    compiled = compile_definition(load_text(MACHINE.replace("GUARD", "true").replace(
        "? 'Namespaced' : 'Cluster'", "? 'Namespaced' : 'Global'"), "thing.yaml")[0])
    assert reference_targets(compiled, _job({"name": "torch"})) == {
        "runtime": "references.runtime.scope gave 'Global', not Namespaced or Cluster"}


def test_a_reference_name_is_lower_camel_case() -> None:
    with pytest.raises(DefinitionError, match=r"thing.yaml:10:9: .*must match .*got .Runtime"):
        compile_definition(load_text(MACHINE.replace("GUARD", "true").replace(
            "      runtime:\n", "      Runtime:\n"), "thing.yaml")[0])


def test_a_target_is_spoken_of_as_kind_namespace_name_and_api_version() -> None:
    """As the engine's log lines name a target it cannot find."""
    assert str(ReferenceTarget("example.com/v1", "Runtime", "team", "torch")) == (
        "Runtime team/torch (example.com/v1)")
    assert str(ReferenceTarget("example.com/v1", "ClusterRuntime", None, "torch")) == (
        "ClusterRuntime torch (example.com/v1)")
