"""How this machine lets a container's processes have their own mounts, probed once: the
command line that starts them in a private mount namespace set up by mounts.py.

As root, `unshare -m`; otherwise `unshare -rm` (a user namespace), with a nested user
namespace mapping the process back to the caller's uid and gid so it does not see itself as
root, or without that when the nested one is refused. Two abilities are probed, each once
and only when first needed: bind mounts (the hosts file, volumes over existing paths) and
covers (volumes at paths that do not exist here, which need a tmpfs, rbind and mount --move).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from loguru import logger

from engine.cluster.node.runtime.mounts import Bind, MountPlan, PathKind, plan_mounts, render

_PROBE_TIMEOUT_S = 20.0
_PROBE_TEXT = "127.0.0.1\tjobmachine-probe\n"
_USER_NAMESPACE = ("unshare", "--user", "--map-root-user", "--mount", "--")


@dataclass(frozen=True)
class Entry:
    """One way into a private mount namespace."""

    prefix: tuple[str, ...]
    # Map the process back to the caller's uid and gid through a nested user namespace.
    remap: bool

    def command(self, script: str, argv: Sequence[str]) -> list[str]:
        return [*self.prefix, "sh", "-c", script, "sh", *argv]


AS_ROOT = Entry(("unshare", "--mount", "--"), remap=False)
REMAPPED = Entry(_USER_NAMESPACE, remap=True)
USER_NAMESPACE = Entry(_USER_NAMESPACE, remap=False)


def inspect(path: PurePosixPath) -> PathKind:
    """What `path` is on this machine (symlinks followed)."""
    if os.path.isdir(path):
        return "directory"
    return "file" if os.path.exists(path) else None


def _ids() -> tuple[int, int]:
    return os.getuid(), os.getgid()


def namespace_command(entry: Entry, plan: MountPlan, argv: Sequence[str], *, scratch: Path,
                      workdir: PurePosixPath) -> list[str]:
    """The command line that runs `argv` in `workdir` with the plan's mounts."""
    script = render(plan, scratch=scratch, workdir=workdir,
                    remap=_ids() if entry.remap else None)
    return entry.command(script, argv)


def _probe(entry: Entry, *, covers: bool) -> bool:
    """Whether `entry` really gives a process our file at /etc/hosts (and, for covers, at a
    path under / and one under a directory that do not exist here)."""
    with tempfile.TemporaryDirectory(prefix="jobmachine-mounts-probe-") as directory:
        base = Path(directory)
        probe = base / "hosts"
        probe.write_text(_PROBE_TEXT)
        (base / "scratch").mkdir()
        binds = [Bind(probe, PurePosixPath("/etc/hosts"), directory=False)]
        reads = ["/etc/hosts"]
        if covers:
            top = PurePosixPath(f"/jobmachine-probe-{uuid.uuid4().hex[:12]}/probe")
            nested = PurePosixPath(directory) / "missing" / "probe"
            binds += [Bind(probe, top, read_only=True, directory=False),
                      Bind(probe, nested, directory=False)]
            reads += [str(top), str(nested)]
        command = namespace_command(entry, plan_mounts(binds, inspect), ["cat", *reads],
                                    scratch=base / "scratch", workdir=PurePosixPath("/"))
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=_PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and done.stdout == _PROBE_TEXT * len(reads)


class MountIsolation:
    """Probes (once each) whether processes can get their own mounts here, and how."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entry: Entry | None = None
        self._entry_probed = False
        self._covers: bool | None = None
        self._log = logger.bind(component="node.mounts")

    def entry(self) -> Entry | None:
        """How to enter a private mount namespace with bind mounts, or None."""
        with self._lock:
            if not self._entry_probed:
                self._entry_probed = True
                self._entry = self._probe_entry()
                if self._entry is None:
                    self._log.warning(
                        "cannot give pod processes their own mounts (unshare with a private "
                        "mount namespace is not available here): Service names will not "
                        "resolve for them, and pods that mount volumes will not start")
            return self._entry

    def covers(self) -> bool:
        """Whether volumes can be mounted at paths that do not exist on this machine."""
        entry = self.entry()
        with self._lock:
            if self._covers is None:
                self._covers = entry is not None and _probe(entry, covers=True)
                if not self._covers:
                    self._log.warning(
                        "cannot mount volumes at paths that do not exist on this machine "
                        "(covering a directory with a tmpfs in a private mount namespace "
                        "failed): pods that need it will not start")
            return self._covers

    @staticmethod
    def _probe_entry() -> Entry | None:
        if shutil.which("unshare") is None or shutil.which("mount") is None:
            return None
        candidates = [AS_ROOT] if os.geteuid() == 0 else [REMAPPED, USER_NAMESPACE]
        return next((c for c in candidates if _probe(c, covers=False)), None)
