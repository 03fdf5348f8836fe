"""The hosts file a pod's processes see as /etc/hosts."""

from __future__ import annotations

import socket
from typing import Any

from engine.cluster.node.runtime.hosts import hosts_text, pod_names


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job-worker-0", "namespace": "team"}, "spec": spec}


def test_services_of_the_namespace_resolve_to_this_machine_by_every_name_form() -> None:
    text = hosts_text(pod(), ["job-master-0", "job-worker-0", "job-master-0"])
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"127.0.0.1\tjob-worker-0 {socket.gethostname()}",
        "127.0.0.1\tjob-master-0 job-master-0.team job-master-0.team.svc "
        "job-master-0.team.svc.cluster.local",
        "127.0.0.1\tjob-worker-0 job-worker-0.team job-worker-0.team.svc "
        "job-worker-0.team.svc.cluster.local",
    ]
    assert text.endswith("\n")


def test_a_pod_knows_its_hostname_and_subdomain() -> None:
    assert pod_names(pod(hostname="w0")) == ["job-worker-0", "w0"]
    assert pod_names(pod(hostname="w0", subdomain="job")) == [
        "job-worker-0", "w0", "w0.job", "w0.job.team", "w0.job.team.svc",
        "w0.job.team.svc.cluster.local",
    ]
    assert pod_names(pod(subdomain="job"))[:2] == ["job-worker-0", "job-worker-0.job"]


def test_the_machines_own_host_name_resolves_as_it_would_outside() -> None:
    """The processes keep the machine's host name; gloo (JAX's CPU collectives) looks it up."""
    names = hosts_text(pod(), []).splitlines()[3].split("\t")[1].split()
    assert names == ["job-worker-0", socket.gethostname()]
