"""The hosts file a pod's processes see as /etc/hosts."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from engine.cluster.node.runtime.hosts import (
    add_names,
    headless_names,
    hosts_text,
    pod_names,
    write_hosts_file,
)


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


def _service(name: str, *, selector: dict[str, str], headless: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"clusterIP": "None" if headless else "10.0.0.1", "selector": selector}}


def _member(name: str, hostname: str, subdomain: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"hostname": hostname, "subdomain": subdomain}}


def test_pods_under_a_headless_service_resolve_by_hostname_dot_subdomain() -> None:
    """Cluster DNS answers HOST.SUB (and its qualified forms) for a pod a headless Service
    SUB selects: how a JobSet's pods find each other (torchrun's PET_MASTER_ADDR)."""
    jobset = {"jobset.sigs.k8s.io/jobset-name": "mnist"}
    services = [_service("mnist", selector=jobset),
                _service("other", selector={"app": "other"}, headless=False)]
    pods = [
        _member("mnist-node-0-0-abcde", "mnist-node-0-0", "mnist", jobset),
        _member("mnist-node-0-1-fghij", "mnist-node-0-1", "mnist", jobset),
        _member("stray", "stray-0", "mnist", {"app": "stray"}),        # not selected
        _member("clustered", "clustered-0", "other", {"app": "other"}),  # not headless
        {"metadata": {"name": "plain", "labels": jobset}, "spec": {"subdomain": "mnist"}},
    ]
    names = headless_names(services, pods)
    assert names == ["mnist-node-0-0.mnist", "mnist-node-0-1.mnist"]
    text = hosts_text(pod(), ["mnist", *names])
    assert ("127.0.0.1\tmnist-node-0-0.mnist mnist-node-0-0.mnist.team "
            "mnist-node-0-0.mnist.team.svc mnist-node-0-0.mnist.team.svc.cluster.local"
            ) in text.splitlines()


def test_a_running_processs_file_gets_the_names_made_later_appended_in_place(
        tmp_path: Path) -> None:
    """The file a process mounted is the same inode for its life: new names are appended to
    it (old lines untouched), never written to a new file it would not see."""
    path = tmp_path / "hosts"
    write_hosts_file(path, hosts_text(pod(), ["job-master-0"]))
    before, inode = path.read_text(), path.stat().st_ino
    add_names(path, ["job-master-0", "leader-0.js", "leader-0.js"], "team")
    assert path.stat().st_ino == inode
    assert path.read_text() == before + (
        "127.0.0.1\tleader-0.js leader-0.js.team leader-0.js.team.svc "
        "leader-0.js.team.svc.cluster.local\n")
    # Another container of the pod starting later writes the same file, adding only what
    # is new.
    write_hosts_file(path, hosts_text(pod(), ["job-master-0", "leader-0.js", "late"]))
    assert path.stat().st_ino == inode
    assert path.read_text().count("leader-0.js.team.svc.cluster.local") == 1
    assert path.read_text().endswith(
        "127.0.0.1\tlate late.team late.team.svc late.team.svc.cluster.local\n")


def test_no_file_is_made_for_a_pod_that_has_none(tmp_path: Path) -> None:
    add_names(tmp_path / "gone" / "hosts", ["late"], "team")
    assert not (tmp_path / "gone").exists()
