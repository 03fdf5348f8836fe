"""The Node object the local node registers, and its heartbeat, as a kubelet writes them.

Capacity and allocatable are the node's `Capacity` (by default this machine's CPUs
and memory and 110 pods, the kubelet's default); the Ready condition's
lastHeartbeatTime is what tells a controller the node is alive.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

from engine.cluster.node.config.env import POD_IP
from engine.cluster.node.scheduling.capacity import Capacity

_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}


def _os_image() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        return platform.system()


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def conditions(*, heartbeat: str, since: str) -> list[dict[str, Any]]:
    """The node's conditions: Ready, and no resource pressure."""

    def condition(kind: str, ok: str, reason: str, message: str) -> dict[str, Any]:
        return {"type": kind, "status": ok, "reason": reason, "message": message,
                "lastHeartbeatTime": heartbeat, "lastTransitionTime": since}

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                  "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                  "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID",
                  "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "jobmachine local node is posting ready status"),
    ]


def node_object(name: str, *, mode: str, version: str, now: str, capacity: Capacity
                ) -> dict[str, Any]:
    """The Node to register, status included."""
    resources = dict(capacity.written)
    architecture = _ARCHITECTURES.get(platform.machine(), platform.machine())
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": architecture,
                "jobmachine.dev/node-mode": mode,
            },
        },
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": conditions(heartbeat=now, since=now),
            "addresses": [{"type": "InternalIP", "address": POD_IP},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id"),
                "systemUUID": _read("/sys/class/dmi/id/product_uuid"),
                "bootID": _read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": f"jobmachine-{mode}://0",
                "kubeletVersion": version,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": architecture,
            },
        },
    }
