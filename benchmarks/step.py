"""Benchmark: step 10,000 replica instances once each through a realistic machine.

Uses the shipped `machines/pytorchjob.yaml` and a realistic mix of replica
situations. Prints the median
of several rounds, per step and for the 10,000, then what `transitions`
costs: the same fixed-point search through the shared machine and by a plain
loop, both with the CEL variables already converted.

Run: python benchmarks/step.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.definition import (  # noqa: E402
    CompiledDefinition,
    Facts,
    load_definitions,
    step,
)
from engine.definition.cel import Activation  # noqa: E402
from engine.definition.compiled import (  # noqa: E402
    CompiledMachine,
    StepContext,
)

INSTANCES = 10_000
ROUNDS = 7

def definition() -> tuple[CompiledDefinition, str]:
    shipped = ROOT / "machines" / "pytorchjob.yaml"
    return load_definitions([shipped])[0], str(shipped.relative_to(ROOT))


def job_object(workers: int) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "pytorch:2", "command": ["python", "train.py"],
                 "ports": [{"name": "pytorchjob-port", "containerPort": 23456}]}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "mnist", "namespace": "default", "uid": "0000-1111"},
        "spec": {"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template},
            "Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": template},
        }, "runPolicy": {"backoffLimit": 3}},
        "status": {},
    }


# (state, observation, exit code): a mix like a busy cluster's, mostly steady.
SITUATIONS = [
    ("Running", "podRunning", -1),
    ("Running", "podRunning", -1),
    ("Running", "podRunning", -1),
    ("Running", "podRunning", -1),
    ("Pending", "podPending", -1),
    ("Pending", "podMissing", -1),
    ("Pending", "podRunning", -1),
    ("Running", "podSucceeded", 0),
    ("Running", "podFailed", 137),
    ("Running", "podFailed", 1),
]


def instances(count: int) -> list[tuple[str, Facts]]:
    job = job_object(workers=count)
    replicas = {"Master": {"desired": 1, "running": 1, "succeeded": 0, "failed": 0},
                "Worker": {"desired": count, "running": count, "succeeded": 0, "failed": 0}}
    run_policy = {"backoffLimit": 3, "cleanPodPolicy": "None", "suspend": False}
    found = []
    for index in range(count):
        state, observation, exit_code = SITUATIONS[index % len(SITUATIONS)]
        variables = {
            "job": job, "runPolicy": run_policy, "replicas": replicas, "restarts": 0,
            "error": "", "policy": "OnFailure", "exitCode": exit_code, "reason": "",
            "replica": {"type": "Worker", "index": index, "restarts": 0, "desired": count},
            "pod": {"name": f"mnist-worker-{index}", "phase": "Running", "exitCode": exit_code},
        }
        found.append((state, Facts(frozenset({observation}), variables)))
    return found


def warm(
    machine: CompiledMachine, work: list[tuple[str, Facts]]
) -> list[tuple[str, Facts, Activation]]:
    """Each instance with its guards' variables already converted into the evaluator."""
    found = []
    for state, facts in work:
        activation = Activation(facts.variables)
        for transition in machine.transitions:
            if transition.guard is not None:
                activation.context_for(transition.guard)
        found.append((state, facts, activation))
    return found


def dispatch(machine: CompiledMachine, state: str, facts: Facts, activation: Activation) -> None:
    """Fire to the fixed point through `transitions`, nothing else (no result, no rendering)."""
    context = StepContext(state, facts.observations, activation)
    while (fired := machine.fire(context)) is not None and fired.target != state:
        state = fired.target


def first_match(
    machine: CompiledMachine, state: str, facts: Facts, activation: Activation
) -> None:
    """The same choices `dispatch` makes, by a plain loop over the transitions."""
    while True:
        for transition in machine.transitions:
            if state not in transition.sources:
                continue
            if transition.on is not None and transition.on not in facts.observations:
                continue
            if transition.guard is None or transition.guard.evaluate(activation) is True:
                break
        else:
            return
        if transition.target == state:
            return
        state = transition.target


def timed(function: Any, work: list[Any], machine: CompiledMachine) -> float:
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for item in work:
            function(machine, *item)
        rounds.append(time.perf_counter() - start)
    return statistics.median(rounds)


def report(label: str, seconds: float, note: str = "") -> None:
    per_step = seconds / INSTANCES * 1e6
    print(f"{label:<24}{seconds * 1000:8.1f} ms per {INSTANCES}  {per_step:6.1f} µs/step  {note}")


def main() -> None:
    compiled, source = definition()
    machine = compiled.replica
    work = instances(INSTANCES)
    warmed = warm(machine, work)
    print(f"machine: {source}; {INSTANCES} replica instances, median of {ROUNDS} rounds")
    report("step()", timed(step, work, machine), "(the controller's call)")
    report("transitions dispatch", timed(dispatch, warmed, machine),
           "(fixed point via transitions, variables pre-converted)")
    report("plain loop", timed(first_match, warmed, machine),
           "(same choices without transitions, variables pre-converted)")


if __name__ == "__main__":
    main()
