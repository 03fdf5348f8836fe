"""Helpers for the app's integration tests: waiting for a condition, a small PyTorchJob, and
which states a job picture highlights.

Waits are generous and never assert on elapsed time (machines here are noisy);
they fail with what they last saw, so a stuck job explains itself.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from engine.kube.client import KubeClient
from tests.kinds import PYTORCHJOBS

# engine/graph/dot.py draws what a job visited in this colour (_ON_PATH).
ON_PATH_COLOUR = "#d97706"
_SVG = "{http://www.w3.org/2000/svg}"

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T], done: Callable[[T], bool], *, what: str, timeout_s: float = 90.0
) -> T:
    """Call `probe` until `done(value)`; on timeout fail with the last value seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}; last seen: {value!r}")
        time.sleep(0.1)


def workers_job(name: str, *, workers: int, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A PyTorchJob of Workers only (restart policy ExitCode); `annotations` go on the pods."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "restartPolicy": "ExitCode",
                    "template": {
                        "metadata": {"annotations": dict(annotations)},
                        "spec": {"containers": [{
                            "name": "pytorch",
                            "image": "docker.io/library/python:3.12-slim",
                            "command": ["python3", "-c", "pass"],
                        }]},
                    },
                },
            },
        },
    }


def job_status(client: KubeClient, name: str) -> Mapping[str, Any]:
    status: Mapping[str, Any] = client.get(PYTORCHJOBS, name, "default").get("status") or {}
    return status


def highlighted_states(svg: bytes) -> set[str]:
    """The states (`job/s/NAME`, `replica/s/NAME`) drawn in the on-path colour."""
    found = set()
    for group in ET.fromstring(svg).iter(f"{_SVG}g"):
        if "node" not in (group.get("class") or "").split():
            continue
        title = group.findtext(f"{_SVG}title") or ""
        if "/s/" in title and any(
            shape.get("stroke") == ON_PATH_COLOUR
            for shape in group
            if shape.tag in {f"{_SVG}path", f"{_SVG}polygon", f"{_SVG}ellipse"}
        ):
            found.add(title)
    return found
