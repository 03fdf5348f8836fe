"""Name resolution for pod processes: a generated hosts file seen as /etc/hosts by them alone.

A kubelet gives each pod its own /etc/hosts and cluster DNS; here every Service
of the pod's namespace (and the pod's own names) resolve to 127.0.0.1, written
into a hosts file that is bind-mounted over /etc/hosts in a private mount
namespace (`unshare -m` as root, `unshare -rm` with a user namespace otherwise,
mapped back to the caller's uid so processes do not see themselves as root). The
machine's own /etc/hosts is never touched. Whether `unshare` works here is
probed once; without it processes run with the machine's /etc/hosts and a
warning is logged once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from loguru import logger

ADDRESS = "127.0.0.1"
CLUSTER_DOMAIN = "cluster.local"
_MOUNT = 'mount --bind "$1" /etc/hosts || exit 126; '
_AS_ROOT = _MOUNT + 'shift; exec "$@"'
# Inside the user namespace we are root; a nested one maps us back to our own ids.
_REMAPPED = _MOUNT + (
    'u=$2; g=$3; shift 3; exec unshare --user --map-user="$u" --map-group="$g" -- "$@"'
)
_PROBE_TIMEOUT_S = 10.0

Wrapper = Callable[[Path, list[str]], list[str]]


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


def hosts_text(pod: Mapping[str, Any], services: Iterable[str]) -> str:
    """The hosts file of a pod's processes, given the Service names of its namespace."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    lines = [
        "# Hosts file of a pod on the jobmachine local node.",
        f"{ADDRESS}\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        f"{ADDRESS}\t{' '.join(pod_names(pod))}",
    ]
    lines += [f"{ADDRESS}\t{_service_names(name, namespace)}" for name in sorted(set(services))]
    return "\n".join(lines) + "\n"


def write_hosts_file(path: Path, text: str) -> None:
    """Replace the file atomically (a process already running keeps the one it mounted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _as_root(hosts: Path, argv: list[str]) -> list[str]:
    return ["unshare", "--mount", "--", "sh", "-c", _AS_ROOT, "sh", str(hosts), *argv]


def _remapped(hosts: Path, argv: list[str]) -> list[str]:
    ids = [str(os.getuid()), str(os.getgid())]
    return ["unshare", "--user", "--map-root-user", "--mount", "--", "sh", "-c", _REMAPPED,
            "sh", str(hosts), *ids, *argv]


def _user_namespace(hosts: Path, argv: list[str]) -> list[str]:
    return ["unshare", "--user", "--map-root-user", "--mount", "--", "sh", "-c", _AS_ROOT,
            "sh", str(hosts), *argv]


def _works(wrapper: Wrapper) -> bool:
    """Whether `wrapper` really shows a process our hosts file as /etc/hosts."""
    with tempfile.TemporaryDirectory(prefix="jobmachine-hosts-probe-") as directory:
        hosts = Path(directory) / "hosts"
        expected = f"{ADDRESS}\tjobmachine-probe\n"
        hosts.write_text(expected)
        try:
            done = subprocess.run(
                wrapper(hosts, ["cat", "/etc/hosts"]), capture_output=True, text=True,
                timeout=_PROBE_TIMEOUT_S, check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and done.stdout == expected


class HostsIsolation:
    """Runs commands with their own /etc/hosts when this machine allows it (probed once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probed = False
        self._wrapper: Wrapper | None = None

    def _probe(self) -> Wrapper | None:
        if shutil.which("unshare") is None or shutil.which("mount") is None:
            return None
        candidates = [_as_root] if os.geteuid() == 0 else [_remapped, _user_namespace]
        return next((c for c in candidates if _works(c)), None)

    def wrapper(self) -> Wrapper | None:
        with self._lock:
            if not self._probed:
                self._wrapper = self._probe()
                self._probed = True
                if self._wrapper is None:
                    logger.bind(component="node.hosts").warning(
                        "cannot give pod processes their own /etc/hosts (unshare with a private "
                        "mount namespace is not available here): Service names will not resolve "
                        "for them"
                    )
            return self._wrapper

    def wrap(self, hosts: Path, argv: list[str]) -> list[str]:
        """The command line that runs `argv` with `hosts` as its /etc/hosts (or `argv` itself
        when that is impossible here)."""
        wrapper = self.wrapper()
        return argv if wrapper is None else wrapper(hosts, argv)
