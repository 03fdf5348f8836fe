"""kubectl and the local node's capacity: `jobmachine up --node-capacity` as a user runs it.

This module runs the real `jobmachine up` command (simulate mode, 1 cpu, 1Gi, 2 GPUs) as a
subprocess, once for all its tests, and stops it with Ctrl-C (SIGINT) at the end; kubectl
gets a fresh cache directory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import KUBECTL, Kubectl
from tests.e2e.up_process import JOBMACHINE, WAIT, running_up
from tests.polling import eventually

pytestmark = pytest.mark.e2e

CAPACITY = "cpu=1,memory=1Gi,nvidia.com/gpu=2"
NODE = "jobmachine-local"
UNSCHEDULABLE = ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                 "available: 1 No preemption victims found for incoming pod.")


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl against a `jobmachine up --node-capacity cpu=1,memory=1Gi,nvidia.com/gpu=2`."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    home = tmp_path_factory.mktemp("capacity")
    with running_up(home, "--node-mode", "simulate", "--node-capacity", CAPACITY,
                    "-q") as up:
        env = {**up.env, "KUBECONFIG": str(up.kubeconfig),
               "KUBECACHEDIR": str(home / "cache"), "HOME": str(home)}
        yield Kubectl(env, "default")


def section(text: str, title: str) -> list[list[str]]:
    """The rows of one section of `kubectl describe` (the indented lines after `title:`),
    each split into its columns."""
    lines = text.splitlines()
    start = lines.index(f"{title}:") + 1
    rows = []
    for line in lines[start:]:
        if not line.startswith(" "):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def _pod(name: str, resources: str, run_seconds: str = "3600") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations:\n"
        f"    sim.jobmachine.dev/run-seconds: \"{run_seconds}\"\nspec:\n"
        "  restartPolicy: Never\n"
        "  containers:\n  - name: main\n    image: busybox:1.36\n    resources:\n"
        f"{resources}"
    )


GPU_POD = _pod("trainer", "      requests: {cpu: 500m, nvidia.com/gpu: 1}\n"
                          "      limits: {nvidia.com/gpu: 1}\n")
BIG_POD = _pod("too-big", "      requests: {cpu: 1}\n")


def test_describe_node_shows_the_capacity_given_to_up(kubectl: Kubectl) -> None:
    described = kubectl("describe", "node", NODE).stdout
    disk = f"{shutil.disk_usage('/').total // 1024}Ki"
    expected = [["cpu:", "1"], ["ephemeral-storage:", disk], ["memory:", "1Gi"],
                ["nvidia.com/gpu:", "2"], ["pods:", "110"]]
    assert section(described, "Capacity") == expected
    assert section(described, "Allocatable") == expected


def test_a_bound_pod_is_allocated_and_one_that_does_not_fit_waits(kubectl: Kubectl) -> None:
    """`trainer` (500m, 1 GPU) runs and shows in Allocated resources; `too-big` (1 cpu) stays
    Pending with kube-scheduler's FailedScheduling event."""
    try:
        kubectl.apply(GPU_POD)
        kubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/trainer",
                "--timeout=60s", timeout=90)
        allocated = section(kubectl("describe", "node", NODE).stdout, "Allocated resources")
        assert allocated[:2] == [["(Total limits may be over 100 percent, i.e., overcommitted.)"],
                                 ["Resource", "Requests", "Limits"]]
        rows = {row[0]: row[1:] for row in allocated[3:]}
        assert rows["cpu"] == ["500m (50%)", "0 (0%)"]
        assert rows["nvidia.com/gpu"] == ["1", "1"]

        kubectl.apply(BIG_POD)

        def failed_scheduling() -> list[list[str]]:
            described = kubectl("describe", "pod", "too-big").stdout
            return [row for row in section(described, "Events") if "FailedScheduling" in row]

        (event,) = eventually(failed_scheduling, timeout=WAIT, interval=0.5)
        assert (event[0], event[1], event[3:]) == (
            "Warning", "FailedScheduling", ["default-scheduler", UNSCHEDULABLE])
        listed = kubectl("get", "pod", "too-big").stdout.splitlines()
        assert listed[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert listed[1].split()[:4] == ["too-big", "0/1", "Pending", "0"]
        conditions = section(kubectl("describe", "pod", "too-big").stdout, "Conditions")
        assert conditions == [["Type", "Status"], ["PodScheduled", "False"]]
    finally:
        kubectl("delete", "pod", "trainer", "too-big", "--ignore-not-found", "--timeout=60s",
                timeout=90)


def test_up_refuses_a_capacity_that_is_not_a_quantity(tmp_path: Path) -> None:
    command = [JOBMACHINE, "up", "--data-dir", str(tmp_path / "data"), "--port", "0",
               "--node-mode", "simulate", "--node-capacity", "cpu=x", "-q"]
    result = subprocess.run(command, capture_output=True,
                            text=True, timeout=WAIT, check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: node capacity 'cpu=x': 'x' is not a quantity (e.g. 2, 500m, 16Gi)"]
    assert result.stdout == ""
