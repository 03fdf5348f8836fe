"""Containers as local processes: command and args run with the container's env, in their own
process group, with output appended to the container's log file.

The process sees the pod's generated hosts file as /etc/hosts (hosts.py), runs
in `workingDir` or else a per-pod directory, and inherits the node's own
environment under the container's variables (so `python` and virtualenvs are
found as in the shell that started the node). When the group leader exits the
rest of its group is killed, as a container's processes end with its main one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from engine.cluster.node import leftovers
from engine.cluster.node.env import ContainerConfigError, command_line, container_env
from engine.cluster.node.hosts import HostsIsolation, hosts_text, write_hosts_file
from engine.cluster.node.layout import NodeFiles
from engine.cluster.node.runtime import (
    CONFIG_ERROR_EXIT_CODE,
    START_ERROR_EXIT_CODE,
    ContainerStartError,
    Launch,
)

ServiceNames = Callable[[str], list[str]]


def _exit_code(returncode: int) -> int:
    """A signal's death reads as 128 + signal, as container runtimes report it."""
    return 128 - returncode if returncode < 0 else returncode


class ProcessAttempt:
    """A started process group; a thread waits for it and wakes the pod worker."""

    def __init__(self, popen: subprocess.Popen[bytes], *, record: Path,
                 wake: Callable[[], None]) -> None:
        self._popen = popen
        self._record = record
        self._wake = wake
        self._code: int | None = None
        self.container_id = f"jobmachine-process://{popen.pid}"
        self._waiter = threading.Thread(target=self._wait, name=f"process {popen.pid}",
                                        daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        code = _exit_code(self._popen.wait())
        self._signal(signal.SIGKILL)
        self._record.unlink(missing_ok=True)
        self._code = code
        self._wake()

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self._popen.pid, signum)

    def exit_code(self) -> int | None:
        return self._code

    def deadline(self) -> float | None:
        return None

    def terminate(self) -> None:
        if self._code is None:
            self._signal(signal.SIGTERM)

    def kill(self) -> None:
        if self._code is None:
            self._signal(signal.SIGKILL)


def _failure(log: Path, reason: str, message: str, exit_code: int) -> ContainerStartError:
    with open(log, "a") as stream:
        stream.write(f"jobmachine local node: cannot start the container: {message}\n")
    return ContainerStartError(reason, message, exit_code=exit_code)


def _check_executable(program: str, *, cwd: Path, path: str | None) -> str | None:
    """Why `program` cannot be executed, or None when it can."""
    if "/" in program:
        target = cwd / program
        if target.is_file() and os.access(target, os.X_OK):
            return None
        return f'exec: "{program}": no such executable file'
    if shutil.which(program, path=path) is None:
        return f'exec: "{program}": executable file not found in $PATH'
    return None


class ProcessRuntime:
    """Runs containers as processes on this machine."""

    mode = "process"

    def __init__(self, files: NodeFiles, *, hosts: HostsIsolation,
                 services: ServiceNames) -> None:
        self._files = files
        self._hosts = hosts
        self._services = services

    def resume(self, launch: Launch) -> None:
        """A process does not survive its node: the attempt is lost."""
        return None

    def start(self, launch: Launch) -> ProcessAttempt:
        pod, container = launch.pod, launch.container
        metadata = pod["metadata"]
        name = str(container.get("name"))
        log = self._files.begin_log(metadata["namespace"], metadata["name"], name,
                                    first=launch.first)
        try:
            variables = container_env(pod, container)
            argv = command_line(container, variables)
        except ContainerConfigError as exc:
            raise _failure(log, exc.reason, str(exc), CONFIG_ERROR_EXIT_CODE) from exc
        cwd = self._working_dir(pod, container, log)
        env = self._environment(pod, variables)
        problem = _check_executable(argv[0], cwd=cwd, path=env.get("PATH"))
        if problem:
            raise _failure(log, "StartError", problem, START_ERROR_EXIT_CODE)
        hosts = self._files.hosts_file(metadata["uid"])
        write_hosts_file(hosts, hosts_text(pod, self._services(metadata["namespace"])))
        try:
            with open(log, "ab") as output:
                popen = subprocess.Popen(
                    self._hosts.wrap(hosts, argv), stdin=subprocess.DEVNULL, stdout=output,
                    stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True,
                )
        except OSError as exc:
            raise _failure(log, "StartError", str(exc), START_ERROR_EXIT_CODE) from exc
        record = leftovers.record(self._files.processes_dir, f"{metadata['uid']}-{name}",
                                  popen.pid)
        return ProcessAttempt(popen, record=record, wake=launch.wake)

    def _working_dir(self, pod: Mapping[str, Any], container: Mapping[str, Any],
                     log: Path) -> Path:
        wanted = container.get("workingDir")
        if wanted:
            cwd = Path(str(wanted))
            if not cwd.is_dir():
                raise _failure(log, "StartError", f"workingDir {cwd} is not a directory here",
                               START_ERROR_EXIT_CODE)
            return cwd
        cwd = self._files.work_dir(pod["metadata"]["uid"])
        cwd.mkdir(parents=True, exist_ok=True)
        return cwd

    @staticmethod
    def _environment(pod: Mapping[str, Any], variables: Mapping[str, str]) -> dict[str, str]:
        spec = pod.get("spec") or {}
        hostname = str(spec.get("hostname") or pod["metadata"]["name"])
        return {**os.environ, "HOSTNAME": hostname, **variables}
