"""Name resolution for pod processes: a generated hosts file seen as /etc/hosts by them alone.

A kubelet gives each pod its own /etc/hosts and cluster DNS; here every Service
of the pod's namespace, every pod's `HOSTNAME.SUBDOMAIN` that cluster DNS would answer for
a headless Service (a JobSet's pods reach each other so: torchrun's PET_MASTER_ADDR is one)
and the pod's own names resolve to 127.0.0.1, written
into a hosts file that process.py bind-mounts over /etc/hosts in the process's
private mount namespace (isolation.py, mounts.py), and appended to the files of the
namespace's running processes when a later process starts. The machine's own /etc/hosts
is never touched; where no private mount namespace can be had, processes run
with it (isolation.py logs a warning once).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ADDRESS = "127.0.0.1"
CLUSTER_DOMAIN = "cluster.local"
HOSTS_PATH = "/etc/hosts"


def _service_names(name: str, namespace: str) -> str:
    qualified = f"{name}.{namespace}"
    return f"{name} {qualified} {qualified}.svc {qualified}.svc.{CLUSTER_DOMAIN}"


def pod_names(pod: Mapping[str, Any]) -> list[str]:
    """The names a pod knows itself by: its name, spec.hostname, and with spec.subdomain
    the hostname's fully qualified forms."""
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    name, namespace = str(metadata.get("name")), str(metadata.get("namespace") or "default")
    hostname = str(spec.get("hostname") or name)
    names = [name] if hostname == name else [name, hostname]
    subdomain = spec.get("subdomain")
    if subdomain:
        names += _service_names(f"{hostname}.{subdomain}", namespace).split()
    return names


def headless_names(services: Iterable[Mapping[str, Any]],
                   pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """`HOSTNAME.SUBDOMAIN` of each pod that cluster DNS gives a record under a headless
    Service of its namespace: the pod sets `spec.hostname` and `spec.subdomain` (the
    Service's name) and the Service (`clusterIP: None`) selects it by its labels.

    Readiness is not asked (every name is 127.0.0.1 here). A pod made after a process
    started reaches that process's file when its own process starts (`add_names`)."""
    selectors = {
        str((service.get("metadata") or {}).get("name")): dict(spec.get("selector") or {})
        for service in services
        if (spec := service.get("spec") or {}).get("clusterIP") == "None" and spec.get("selector")
    }
    names = []
    for pod in pods:
        spec = pod.get("spec") or {}
        hostname, subdomain = spec.get("hostname"), spec.get("subdomain")
        labels = (pod.get("metadata") or {}).get("labels") or {}
        selector = selectors.get(str(subdomain))
        if hostname and selector is not None and all(
                labels.get(key) == value for key, value in selector.items()):
            names.append(f"{hostname}.{subdomain}")
    return names


def hosts_text(pod: Mapping[str, Any], services: Iterable[str]) -> str:
    """The hosts file of a pod's processes, given the names its namespace resolves: its
    Services' and its pods' under headless Services (`headless_names`).

    The processes keep the machine's host name (they share its UTS namespace), so it is
    listed too: libraries that look their own host name up (gloo, under JAX's and
    PyTorch's CPU collectives) find it, as they find the pod's name in a cluster."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    names = pod_names(pod)
    machine = socket.gethostname()
    lines = [
        "# Hosts file of a pod on the jobmachine local node.",
        f"{ADDRESS}\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{ADDRESS}\t{' '.join(names + ([machine] if machine and machine not in names else []))}",
    ]
    lines += [_name_line(name, namespace) for name in sorted(set(services))]
    return "\n".join(lines) + "\n"


def _name_line(name: str, namespace: str) -> str:
    return f"{ADDRESS}\t{_service_names(name, namespace)}"


def add_names(path: Path, names: Iterable[str], namespace: str) -> None:
    """Append to the hosts file of a process already running the lines of `names` it lacks.

    Cluster DNS answers for a pod or Service made after a process started; the file that
    process mounted is the same inode, so what is appended reaches it. A file that is gone
    (its pod removed) is left gone."""
    _append_missing(path, [_name_line(name, namespace) for name in names])


def _append_missing(path: Path, lines: Iterable[str]) -> bool:
    """Append the lines the file lacks in one write, old lines untouched (rewriting it would
    hide, for an instant, a name a lookup then needs); False if there is no file."""
    try:
        present = set(path.read_text().splitlines())
    except FileNotFoundError:
        return False
    missing = [line for line in dict.fromkeys(lines) if line not in present]
    if missing:
        with path.open("a") as hosts:
            hosts.write("".join(f"{line}\n" for line in missing))
    return True


def write_hosts_file(path: Path, text: str) -> None:
    """Create the file atomically; one that exists (another container of the pod, or an
    earlier attempt, mounted it) gets the lines it lacks appended, so every process of the
    pod keeps seeing one file."""
    if _append_missing(path, text.splitlines()):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)
