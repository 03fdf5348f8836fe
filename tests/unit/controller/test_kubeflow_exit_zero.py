"""A Kubeflow replica whose pod failed although its main container exited 0 (another container
failed) has succeeded: the main container's exit decides. So on `podFailed` the exit code is
never 0, which is why kubeflow.yaml's `exitCode >= 0` and `exitCode < 0` guards have no edge
at 0 to test (tools/mutation/equivalents.yaml counts those mutants as equivalent)."""

from __future__ import annotations

import pytest

from tests.scenarios.world import (
    MASTER,
    Step,
    World,
    _pod,
    play,
    pytorch_job,
    running,
    worker,
)


def failed_with_exit_zero() -> dict[str, object]:
    """Phase Failed, the main container ended 0 (as when a sidecar failed)."""
    return _pod("Failed", state={"terminated": {"exitCode": 0, "reason": "Completed"}})


@pytest.mark.parametrize("policy", ["ExitCode", "Never", "OnFailure"])
def test_a_failed_pod_whose_main_container_exited_0_has_succeeded(policy: str) -> None:
    world = World(pytorch_job(workers=1, policy=policy))
    play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0's pod fails, its main container exited 0",
             {worker(0): failed_with_exit_zero()}, phase="Running",
             restarts=0, states={"Worker-0": "Succeeded"}),
    ])
