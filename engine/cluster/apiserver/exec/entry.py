"""How a command enters a running process container of the local node: the container's own
mount namespace, root and working directory, its user namespace and its environment.

The node starts a container's process in a private mount namespace (its hosts file, volumes
and termination message file mounted there; a user namespace when not root, with a nested
one mapping back to the caller) and execs the program, so the process named by the
containerID is in every namespace the container has. Entering them is what a container
runtime's exec does, and it reuses what the node set up instead of setting it up again.
`nsenter` joins the user namespace that owns the mount namespace (the caller owns it, so it
may), then the mount namespace with the process's root and working directory, then the
process's own user namespace when it is a nested one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

# ioctl(2) on a namespace file: the user namespace that owns it (linux/nsfs.h).
_NS_GET_USERNS = 0xB701


class EntryError(Exception):
    """The container's process cannot be entered (gone, or `nsenter` is missing)."""


@dataclass
class Entry:
    """The command line prefix that runs a program in the container, the environment it
    runs with, and the namespace descriptors the prefix refers to (to pass to the child,
    then close)."""

    prefix: list[str]
    env: dict[str, str]
    fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def _identity(path: str | int | Path) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_dev, status.st_ino


def _environment(proc: Path) -> dict[str, str]:
    """The environment the node gave the process."""
    env = {}
    for item in (proc / "environ").read_bytes().split(b"\0"):
        name, equals, value = item.partition(b"=")
        if equals:
            env[os.fsdecode(name)] = os.fsdecode(value)
    return env


def enter(pid: int) -> Entry:
    """How to run a program inside the container whose process is `pid`."""
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise EntryError("nsenter (util-linux) is not installed on this machine")
    entry = Entry([nsenter], {})
    try:
        _prepare(entry, nsenter, pid)
    except (ProcessLookupError, FileNotFoundError) as exc:
        entry.close()
        raise EntryError(f"process {pid} has ended") from exc
    except OSError as exc:
        entry.close()
        raise EntryError(f"cannot enter process {pid}: {exc}") from exc
    return entry


def _prepare(entry: Entry, nsenter: str, pid: int) -> None:
    proc = Path(f"/proc/{pid}")
    if os.getsid(pid) != pid:
        raise EntryError(f"process {pid} is no longer the container's")
    entry.env = _environment(proc)
    joined_user = _identity("/proc/self/ns/user")
    if _identity(proc / "ns" / "mnt") != _identity("/proc/self/ns/mnt"):
        joined_user = _join_mount_namespace(entry, proc)
    entry.prefix.append(f"--wd={proc / 'cwd'}")
    if _identity(proc / "ns" / "user") != joined_user:
        entry.prefix += ["--", nsenter, f"--user={proc / 'ns' / 'user'}",
                         "--preserve-credentials"]
    entry.prefix.append("--")


def _join_mount_namespace(entry: Entry, proc: Path) -> tuple[int, int]:
    """Add the options that join the process's mount namespace, root and the user namespace
    owning them; the identity of the user namespace joined."""
    mount = os.open(proc / "ns" / "mnt", os.O_RDONLY | os.O_CLOEXEC)
    try:
        owner = fcntl.ioctl(mount, _NS_GET_USERNS)
    finally:
        os.close(mount)
    entry.fds.append(owner)
    owner_identity = _identity(owner)
    if owner_identity == _identity("/proc/self/ns/user"):
        entry.fds.remove(owner)
        os.close(owner)
    else:
        entry.prefix += [f"--user=/proc/self/fd/{owner}", "--preserve-credentials"]
    entry.prefix += [f"--mount={proc / 'ns' / 'mnt'}", f"--root={proc / 'root'}"]
    return owner_identity
