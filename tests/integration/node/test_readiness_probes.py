"""Readiness probes run by the local node: pods turn Ready when their probes pass.

Process mode: an exec probe that passes once a file exists, an HTTP GET against a server the
container starts, and a TCP probe against a port nobody opens (never ready, with the
kubelet's Unhealthy events). Simulate mode: a pod becomes ready once its simulated delay has
passed. A pod without a probe is ready as soon as it runs, as before.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

from tests.integration.node.conftest import Cluster, pod
from tests.polling import eventually

PY = sys.executable
FOREVER = "import time; time.sleep(600)"


def container(script: str, **fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "python:3.11", "command": [PY, "-c", script], **fields}


def condition(cluster: Cluster, name: str, kind: str) -> str | None:
    found = cluster.read(name) or {}
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == kind), None)


def ready(cluster: Cluster, name: str) -> bool:
    return condition(cluster, name, "Ready") == "True"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_an_exec_probe_makes_the_pod_ready_once_it_passes(processes: Cluster,
                                                           tmp_path: Path) -> None:
    flag = tmp_path / "ready-flag"
    probe = {"exec": {"command": ["test", "-e", str(flag)]}, "periodSeconds": 1}
    processes.create(pod("web", container(FOREVER, readinessProbe=probe),
                         restart_policy="Always"))
    processes.wait_phase("web", "Running")
    eventually(lambda: (processes.container("web").get("state") or {}).get("running"))
    assert processes.container("web")["ready"] is False
    assert condition(processes, "web", "ContainersReady") == "False"
    flag.write_text("yes")
    eventually(lambda: ready(processes, "web"), timeout=15)
    assert processes.container("web")["ready"] is True
    assert condition(processes, "web", "ContainersReady") == "True"
    processes.core.delete_namespaced_pod("web", "default", grace_period_seconds=0)


def test_an_http_probe_waits_for_the_server_the_container_starts(processes: Cluster) -> None:
    port = free_port()
    script = ("import time, http.server; time.sleep(1.5); "
              f"http.server.HTTPServer(('127.0.0.1', {port}), "
              "http.server.SimpleHTTPRequestHandler).serve_forever()")
    probe = {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1,
             "successThreshold": 1, "failureThreshold": 1}
    processes.create(pod("server", container(script, readinessProbe=probe,
                                             ports=[{"name": "http", "containerPort": port}]),
                         restart_policy="Always"))
    processes.wait_phase("server", "Running")
    eventually(lambda: ready(processes, "server"), timeout=20)
    processes.core.delete_namespaced_pod("server", "default", grace_period_seconds=0)


def test_a_failing_probe_keeps_the_pod_unready_and_says_why(processes: Cluster) -> None:
    probe = {"tcpSocket": {"port": free_port()}, "periodSeconds": 1}
    processes.create(pod("closed", container(FOREVER, readinessProbe=probe),
                         restart_policy="Always"))
    processes.wait_phase("closed", "Running")

    def unhealthy() -> list[Any]:
        return [e for e in processes.events("closed") if e.reason == "Unhealthy"]

    [event] = eventually(unhealthy, timeout=15)
    assert event.type == "Warning"
    assert event.message.startswith("Readiness probe failed: dial tcp 127.0.0.1:")
    assert event.involved_object.field_path == "spec.containers{main}"
    assert not ready(processes, "closed")
    processes.core.delete_namespaced_pod("closed", "default", grace_period_seconds=0)


def test_a_simulated_pod_is_ready_after_its_delay(simulated: Cluster) -> None:
    notes = {"sim.jobmachine.dev/run-seconds": "600", "sim.jobmachine.dev/ready-seconds": "1"}
    probe = {"exec": {"command": ["true"]}, "periodSeconds": 1}
    body = pod("sim", {"name": "main", "image": "busybox", "readinessProbe": probe},
               annotations=notes, restart_policy="Always")
    simulated.create(body)
    simulated.wait_phase("sim", "Running")
    assert simulated.container("sim").get("ready") is False
    eventually(lambda: ready(simulated, "sim"), timeout=15)
    plain = pod("plain", annotations={"sim.jobmachine.dev/run-seconds": "600"},
                restart_policy="Always")
    simulated.create(plain)
    eventually(lambda: ready(simulated, "plain"), timeout=15)
    for name in ("sim", "plain"):
        simulated.core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
