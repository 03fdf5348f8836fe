"""Simulated exit codes, run time and termination messages from pod annotations."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from engine.cluster.node.runtime.sim_annotations import (
    DEFAULT_RUN_SECONDS,
    SimulationError,
    exit_code,
    parse_exit_codes,
    run_seconds,
    termination_message,
)


def pod(annotations: dict[str, str], containers: tuple[str, ...] = ("main", "sidecar")
        ) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations},
            "spec": {"containers": [{"name": n} for n in containers]}}


def test_codes_per_attempt_with_the_last_one_repeating() -> None:
    sim = pod({"sim.jobmachine.dev/exit-codes": "137, 0"})
    assert [exit_code(sim, "main", n) for n in (1, 2, 3, 4)] == [137, 0, 0, 0]


def test_the_plain_annotation_is_for_the_first_container_only() -> None:
    sim = pod({"sim.jobmachine.dev/exit-codes": "1"})
    assert exit_code(sim, "main", 1) == 1
    assert exit_code(sim, "sidecar", 1) == 0


def test_a_named_annotation_wins_for_its_container() -> None:
    sim = pod({"sim.jobmachine.dev/exit-codes": "1",
               "sim.jobmachine.dev/exit-codes.main": "2,3",
               "sim.jobmachine.dev/exit-codes.sidecar": "4"})
    assert [exit_code(sim, "main", n) for n in (1, 2)] == [2, 3]
    assert exit_code(sim, "sidecar", 5) == 4


def restarted(policy: str | None, annotations: dict[str, str]) -> dict[str, Any]:
    sim = pod(annotations)
    if policy is not None:
        sim["spec"]["restartPolicy"] = policy
    return sim


@pytest.mark.parametrize("policy", ["Never", "OnFailure"])
def test_without_annotations_every_attempt_succeeds_after_the_default_time(policy: str) -> None:
    assert exit_code(restarted(policy, {}), "main", 3) == 0
    assert run_seconds(restarted(policy, {})) == DEFAULT_RUN_SECONDS
    assert run_seconds(restarted(policy, {"sim.jobmachine.dev/run-seconds": " 0.5 "})) == 0.5


@pytest.mark.parametrize("policy", ["Always", None])
def test_a_pod_restarted_always_that_says_nothing_runs_until_it_is_stopped(
    policy: str | None,
) -> None:
    # A server (kubectl create deployment web --image=nginx), not a crash loop.
    assert run_seconds(restarted(policy, {})) == math.inf
    assert run_seconds(restarted(policy, {"sim.jobmachine.dev/run-seconds": "3"})) == 3.0
    for codes in ("sim.jobmachine.dev/exit-codes", "sim.jobmachine.dev/exit-codes.sidecar"):
        assert run_seconds(restarted(policy, {codes: "0"})) == DEFAULT_RUN_SECONDS


@pytest.mark.parametrize(
    ("text", "words"),
    [("", "not a comma-separated list"), ("1,,2", "not a comma-separated list"),
     ("1,x", '"x" is not an exit code'), ("256", "not within 0-255"),
     ("-1", "not within 0-255")],
)
def test_bad_exit_codes_name_the_annotation(text: str, words: str) -> None:
    with pytest.raises(SimulationError, match=re.escape("sim.jobmachine.dev/exit-codes")) as caught:
        parse_exit_codes("sim.jobmachine.dev/exit-codes", text)
    assert words in str(caught.value)


@pytest.mark.parametrize("text", ["soon", "-1", "nan", "inf"])
def test_bad_run_seconds(text: str) -> None:
    with pytest.raises(SimulationError, match=re.escape("sim.jobmachine.dev/run-seconds")):
        run_seconds(pod({"sim.jobmachine.dev/run-seconds": text}))


def test_a_termination_message_per_container_or_for_the_first() -> None:
    sim = pod({"sim.jobmachine.dev/termination-message": "first words",
               "sim.jobmachine.dev/termination-message.sidecar": "side words"})
    assert termination_message(sim, "main") == "first words"
    assert termination_message(sim, "sidecar") == "side words"
    assert termination_message(pod({}), "main") is None
    assert termination_message(pod({"sim.jobmachine.dev/termination-message": "x"}),
                               "sidecar") is None
