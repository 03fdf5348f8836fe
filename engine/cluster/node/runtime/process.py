"""Containers as local processes: command and args run with the container's env and volumes, in
their own process group, with output appended to the container's log file.

The process starts in a private mount namespace (isolation.py, mounts.py) where the
pod's generated hosts file is its /etc/hosts, its volumes are mounted at their
mountPaths and a file of the node's at its terminationMessagePath; it runs in
`workingDir` or else a per-pod directory, and inherits the node's own environment under
the container's variables (so `python` and virtualenvs are found as in the shell that
started the node), without its KUBECONFIG and with the API server's address as the
`kubernetes` Service's variables (process_env.py). When the group leader exits the rest of
its group is killed, as a container's processes end with its main one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from engine.cluster.apiserver.admission.service_account_admission import (
    TOKEN_MOUNT_PATH,
    VOLUME_PREFIX,
)
from engine.cluster.apiserver.exec.container_ids import process_container_id
from engine.cluster.node.config.container_config import (
    ContainerConfig,
    SourceReader,
    config_waiting,
    read_sources,
    resolve,
    volume_waiting,
)
from engine.cluster.node.config.env import ContainerConfigError
from engine.cluster.node.config.sources import Sources
from engine.cluster.node.config.tokens import Tokens, token_refs
from engine.cluster.node.config.volume_files import (
    VolumeNotReadyError,
    prepare_volumes,
    volume_binds,
)
from engine.cluster.node.config.volumes import Mount, absolute, volume_contents
from engine.cluster.node.layout import NodeFiles
from engine.cluster.node.runtime import leftovers
from engine.cluster.node.runtime.hosts import (
    HOSTS_PATH,
    add_names,
    hosts_text,
    write_hosts_file,
)
from engine.cluster.node.runtime.interface import (
    CONFIG_ERROR_EXIT_CODE,
    START_ERROR_EXIT_CODE,
    ContainerStartError,
    ContainerWaitingError,
    Launch,
)
from engine.cluster.node.runtime.isolation import Entry, MountIsolation, inspect, namespace_command
from engine.cluster.node.runtime.mounts import (
    Bind,
    MountPlan,
    MountPlanError,
    host_path,
    plan_mounts,
)
from engine.cluster.node.runtime.process_env import ApiAddress, process_environment
from engine.cluster.node.status.termination import MAX_MESSAGE_BYTES, message_path, read_tail

ServiceNames = Callable[[str], list[str]]
# The uids of a namespace's pods on this node (whose running processes learn new names).
PodUids = Callable[[str], list[str]]
API_ACCESS_PATH = PurePosixPath(TOKEN_MOUNT_PATH)
# Requests the tokens of a pod's serviceAccountToken sources from the API server.
TokenReader = Callable[[Mapping[str, Any]], Tokens]


def _exit_code(returncode: int) -> int:
    """A signal's death reads as 128 + signal, as container runtimes report it."""
    return 128 - returncode if returncode < 0 else returncode


class ProcessAttempt:
    """A started process group; a thread waits for it and wakes the pod worker."""

    def __init__(self, popen: subprocess.Popen[bytes], *, record: Path,
                 wake: Callable[[], None], message_file: Path | None) -> None:
        self._popen = popen
        self._record = record
        self._message_file = message_file
        self._wake = wake
        self._code: int | None = None
        self.container_id = process_container_id(popen.pid)
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

    def written_message(self) -> bytes | None:
        if self._message_file is None:
            return None
        return read_tail(self._message_file, MAX_MESSAGE_BYTES)

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


def _empty_message_file(path: Path) -> None:
    """A new, empty termination message file for an attempt, writable whatever user the
    process runs as (the kubelet creates one per container instance, mode 0666)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    path.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH
               | stat.S_IWOTH)


def _check_executable(program: str, *, cwd: Path, path: str | None,
                      binds: Sequence[Bind]) -> str | None:
    """Why `program` cannot be executed, or None when it can (looked for where the
    container's mounts put it)."""
    if "/" in program:
        target = host_path(absolute(program), binds) if program.startswith("/") else cwd / program
        if target.is_file() and os.access(target, os.X_OK):
            return None
        return f'exec: "{program}": no such executable file'
    search = os.pathsep.join(str(host_path(absolute(entry), binds)) if entry.startswith("/")
                             else entry for entry in (path or "").split(os.pathsep))
    if shutil.which(program, path=search) is None:
        return f'exec: "{program}": executable file not found in $PATH'
    return None


def _spare(mounts: Sequence[Mount], binds: Sequence[Bind]) -> list[Bind]:
    """The binds of the service account volume that ServiceAccount admission adds to every
    pod: where this machine cannot mount it (no private mount namespace, or no covering of
    /var/run), the container runs without it, as without its termination message file,
    rather than waiting for ever; it then has no in-cluster credentials."""
    return [bind for mount, bind in zip(mounts, binds, strict=True)
            if mount.volume.startswith(VOLUME_PREFIX) and mount.path == API_ACCESS_PATH]


def _first_covered(plan: MountPlan) -> str:
    cover = plan.covers[0]
    relative = cover.create[0][0]
    return (f"{cover.directory / relative} does not exist on this machine, and covering "
            f"{cover.directory} in a private mount namespace is not available here")


class ProcessRuntime:
    """Runs containers as processes on this machine."""

    mode = "process"

    def __init__(self, files: NodeFiles, *, isolation: MountIsolation, services: ServiceNames,
                 sources: SourceReader, tokens: TokenReader | None = None,
                 api: ApiAddress | None = None, peers: PodUids | None = None) -> None:
        """`tokens`: how to get a pod's service account tokens (None: none can be had, a
        serviceAccountToken source fails); `api`: where the API server is for the pods'
        in-cluster config (None: no `kubernetes` Service variables); `peers`: the pods whose
        hosts files get the names a new process sees (None: none)."""
        self._files = files
        self._isolation = isolation
        self._services = services
        self._peers = peers
        self._sources = sources
        self._tokens = tokens
        self._api = api

    def resume(self, launch: Launch) -> None:
        """A process does not survive its node: the attempt is lost."""
        return None

    def start(self, launch: Launch) -> ProcessAttempt:
        pod, container = launch.pod, launch.container
        metadata = pod["metadata"]
        sources = read_sources(self._sources, pod, container)
        try:
            config, binds = self._config(pod, container, sources)
            isolated = self._isolated(pod, container, binds, spare=_spare(config.mounts, binds))
        except ContainerConfigError as exc:
            raise _failure(self._begin_log(launch), exc.reason, str(exc),
                           CONFIG_ERROR_EXIT_CODE) from exc
        log = self._begin_log(launch)
        view, cwd = self._working_dir(pod, container, binds, log)
        env = self._environment(pod, config.env)
        problem = _check_executable(config.argv[0], cwd=cwd, path=env.get("PATH"), binds=binds)
        if problem:
            raise _failure(log, "StartError", problem, START_ERROR_EXIT_CODE)
        argv, message_file = config.argv, None
        if isolated is not None:
            entry, plan, message_file = isolated
            self._write_hosts(pod)
            scratch = self._files.scratch_dir(metadata["uid"])
            scratch.mkdir(parents=True, exist_ok=True)
            if message_file is not None:
                _empty_message_file(message_file)
            argv = namespace_command(entry, plan, argv, scratch=scratch, workdir=view)
        attempt = self._spawn(launch, argv, env=env, cwd=cwd, log=log, message_file=message_file)
        for message in config.warnings:
            launch.warn("InvalidEnvironmentVariableNames", message)
        return attempt

    def _write_hosts(self, pod: Mapping[str, Any]) -> None:
        """The pod's hosts file, and what its namespace now resolves appended to the files
        of the namespace's other pods (a JobSet's worker that started before its leader's
        pod existed finds the leader's name once the leader's process starts)."""
        uid, namespace = pod["metadata"]["uid"], pod["metadata"]["namespace"]
        names = self._services(namespace)
        write_hosts_file(self._files.hosts_file(uid), hosts_text(pod, names))
        for peer in self._peers(namespace) if self._peers else []:
            if peer != uid:
                add_names(self._files.hosts_file(peer), names, namespace)

    def _begin_log(self, launch: Launch) -> Path:
        metadata = launch.pod["metadata"]
        return self._files.begin_log(metadata["namespace"], metadata["name"],
                                     str(launch.container.get("name")), first=launch.first)

    def _config(self, pod: Mapping[str, Any], container: Mapping[str, Any], sources: Sources
                ) -> tuple[ContainerConfig, list[Bind]]:
        """The volumes set up first (as the kubelet does: a missing volume source shows
        before a missing env source), then env, command line and the container's binds."""
        contents = volume_contents(pod, sources, tokens=self._pod_tokens(pod))
        try:
            directories = prepare_volumes(self._files.volumes_dir(pod["metadata"]["uid"]),
                                          contents)
        except VolumeNotReadyError as exc:
            raise volume_waiting(str(exc)) from exc
        config = resolve(pod, container, sources)
        return config, volume_binds(directories, config.mounts, contents)

    def _pod_tokens(self, pod: Mapping[str, Any]) -> Tokens:
        """Fresh tokens for the pod's serviceAccountToken sources (written with its volumes
        at each container start; not refreshed while a container runs)."""
        if not token_refs(pod):
            return {}
        return self._tokens(pod) if self._tokens is not None else {}

    def _isolated(self, pod: Mapping[str, Any], container: Mapping[str, Any], binds: list[Bind],
                  *, spare: Sequence[Bind] = ()) -> tuple[Entry, MountPlan, Path | None] | None:
        """How to start the process with its hosts file, volumes and termination message file
        (the file, when it has one); None: as it is, when no private mount namespace can be
        had here and no volume needs one. The `spare` binds are left out where they cannot be
        had."""
        entry = self._isolation.entry()
        if entry is None:
            binds = [b for b in binds if b not in spare]
            if binds:
                raise config_waiting(f"volume mount {binds[0].target} needs a private mount "
                                     "namespace, which is not available here")
            return None
        uid = pod["metadata"]["uid"]
        # The kubelet leaves /etc/hosts alone when a container mounts a volume there.
        hosts = [] if any(str(b.target) == HOSTS_PATH for b in binds) else [
            Bind(self._files.hosts_file(uid), PurePosixPath(HOSTS_PATH), directory=False)]
        target = message_path(container)
        message = None if any(b.target == target for b in binds) else Bind(
            self._files.termination_file(uid, str(container.get("name"))), target,
            directory=False)
        try:
            plan, message = self._plan([*hosts, *binds], message)
        except (ContainerConfigError, ContainerWaitingError):
            if not spare:
                raise
            plan, message = self._plan([*hosts, *(b for b in binds if b not in spare)], message)
        return entry, plan, message.source if message else None

    def _plan(self, binds: list[Bind], message: Bind | None) -> tuple[MountPlan, Bind | None]:
        """The mounts, with the termination message file where it can be had (a path that
        needs covering where covering is not available, or that cannot be mounted, leaves
        the container without the file rather than holding it back)."""
        if message is not None:
            with contextlib.suppress(MountPlanError):
                plan = plan_mounts([*binds, message], inspect)
                if not plan.covers or self._isolation.covers():
                    return plan, message
        try:
            plan = plan_mounts(binds, inspect)
        except MountPlanError as exc:
            raise ContainerConfigError(str(exc)) from exc
        if plan.covers and not self._isolation.covers():
            raise config_waiting(f"volume mount {_first_covered(plan)}")
        return plan, None

    def _spawn(self, launch: Launch, argv: list[str], *, env: dict[str, str], cwd: Path,
               log: Path, message_file: Path | None) -> ProcessAttempt:
        metadata = launch.pod["metadata"]
        try:
            with open(log, "ab") as output:
                popen = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                    env=env, cwd=cwd, start_new_session=True,
                )
        except (OSError, ValueError) as exc:
            raise _failure(log, "StartError", str(exc), START_ERROR_EXIT_CODE) from exc
        name = f"{metadata['uid']}-{launch.container.get('name')}"
        record = leftovers.record(self._files.processes_dir, name, popen.pid)
        return ProcessAttempt(popen, record=record, wake=launch.wake, message_file=message_file)

    def _working_dir(self, pod: Mapping[str, Any], container: Mapping[str, Any],
                     binds: Sequence[Bind], log: Path) -> tuple[PurePosixPath, Path]:
        """The working directory as the process sees it, and where that is on this machine."""
        wanted = container.get("workingDir")
        if wanted:
            view = absolute(str(wanted))
            cwd = host_path(view, binds)
            if not cwd.is_dir():
                raise _failure(log, "StartError", f"workingDir {view} is not a directory here",
                               START_ERROR_EXIT_CODE)
            return view, cwd
        cwd = self._files.work_dir(pod["metadata"]["uid"])
        cwd.mkdir(parents=True, exist_ok=True)
        return PurePosixPath(cwd), cwd

    def _environment(self, pod: Mapping[str, Any], variables: Mapping[str, str]
                     ) -> dict[str, str]:
        spec = pod.get("spec") or {}
        hostname = str(spec.get("hostname") or pod["metadata"]["name"])
        return process_environment(os.environ, variables, hostname=hostname, api=self._api)
