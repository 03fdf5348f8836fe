"""A pod's restartPolicy, replacementPolicy and default command as a machine's CEL gives
them for one job or replica (rendering.py), and the words of a value that is none of those
allowed (a PodTemplateError, or an invalid job, where the engine uses them)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition import CompiledDefinition, compile_definition, load_text
from engine.definition.cel import CelEvaluationError
from engine.definition.rendering import (
    render_pod_decorations,
    render_replacement_policy,
    render_restart_policy,
)
from engine.definition.vocabulary import job_value
from tests.unit.definition.texts import document


def machine(pod: str = "") -> CompiledDefinition:
    (loaded,) = load_text(document(extra=f"  pod:\n{pod}" if pod else ""), "demo.yaml")
    return compile_definition(loaded)


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.dev/v1", "kind": "Demo",
            "metadata": {"name": "demo", "namespace": "team"}, "spec": spec}


def test_the_restart_policy_is_the_literal_or_what_its_cel_gives() -> None:
    assert render_restart_policy(machine(), {}) == "Never"
    assert render_restart_policy(machine("    restartPolicy: OnFailure\n"), {}) == "OnFailure"
    given = machine("    restartPolicy: \"policy == 'Always' ? 'Always' : policy\"\n")
    assert render_restart_policy(given, {"policy": "Always"}) == "Always"
    with pytest.raises(CelEvaluationError) as raised:
        render_restart_policy(given, {"policy": "Sometimes"})
    assert str(raised.value) == (
        "pod.restartPolicy gave 'Sometimes', not one of Never, OnFailure, Always")


def test_the_replacement_policy_is_the_literal_or_what_its_cel_gives_over_the_job() -> None:
    assert render_replacement_policy(machine(), job()) == "TerminatingOrFailed"
    assert render_replacement_policy(
        machine("    replacementPolicy: Failed\n"), job()) == "Failed"
    given = machine("    replacementPolicy: job.spec.policy\n")
    assert render_replacement_policy(given, job(policy="Failed")) == "Failed"
    with pytest.raises(CelEvaluationError) as raised:
        render_replacement_policy(given, job(policy="Never"))
    assert str(raised.value) == (
        "pod.replacementPolicy gave 'Never', not one of TerminatingOrFailed, Failed")


def _command(value: Any) -> tuple[str, ...] | None:
    compiled = machine("    command: job.spec.cmd\n")
    return render_pod_decorations(compiled, {"job": job_value(job(cmd=value))}).command


def test_the_default_command_is_a_list_of_strings_or_none() -> None:
    assert render_pod_decorations(machine(), {}).command is None
    assert _command(["sleep", "365d"]) == ("sleep", "365d")
    assert _command(None) is None
    for wrong in ("sleep 365d", ["sleep", 365]):
        with pytest.raises(CelEvaluationError) as raised:
            _command(wrong)
        assert str(raised.value) == f"pod.command gave {wrong!r}, not a list of strings"
