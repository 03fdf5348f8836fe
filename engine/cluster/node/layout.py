"""Where the node keeps its files: container logs (where the API server reads them) and its
state directory (attempt counts, process records, per-pod working directories, hosts files,
volumes, termination message files, and the empty scratch directory a private mount
namespace stages its mounts on).

One place for the layout, so starting, restarting and cleaning up agree on it. A container's
`<container>.log` holds its latest attempt, `<container>.previous.log` the attempt its
`lastState.terminated` describes: what the kubelet serves for `kubectl logs [--previous]`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from engine.cluster.apiserver.endpoints.logs import log_path


@dataclass(frozen=True)
class NodeFiles:
    logs_dir: Path
    state_dir: Path

    @property
    def attempts_file(self) -> Path:
        return self.state_dir / "simulate-attempts.jsonl"

    @property
    def legacy_attempts_file(self) -> Path:
        """Where versions before the append-only log kept the attempt counts."""
        return self.state_dir / "simulate-attempts.json"

    @property
    def processes_dir(self) -> Path:
        return self.state_dir / "processes"

    def pod_dir(self, uid: str) -> Path:
        return self.state_dir / "pods" / uid

    def work_dir(self, uid: str) -> Path:
        return self.pod_dir(uid) / "work"

    def hosts_file(self, uid: str) -> Path:
        return self.pod_dir(uid) / "hosts"

    def volumes_dir(self, uid: str) -> Path:
        return self.pod_dir(uid) / "volumes"

    def scratch_dir(self, uid: str) -> Path:
        return self.pod_dir(uid) / "scratch"

    def termination_file(self, uid: str, container: str) -> Path:
        """The file a process sees at its terminationMessagePath."""
        return self.pod_dir(uid) / "termination" / container

    def log(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> Path:
        return log_path(self.logs_dir, namespace, pod, container, previous=previous)

    def begin_log(self, namespace: str, pod: str, container: str, *, first: bool) -> Path:
        """The log file of a new attempt: the previous attempt's becomes (or already is)
        `.previous.log`; a first attempt starts clean (a pod recreated under the same name has
        new logs)."""
        current = self.log(namespace, pod, container)
        previous = self.log(namespace, pod, container, previous=True)
        current.parent.mkdir(parents=True, exist_ok=True)
        if first:
            current.unlink(missing_ok=True)
            previous.unlink(missing_ok=True)
        elif current.exists():
            if previous.exists() and os.path.samefile(current, previous):
                current.unlink()
            else:
                os.replace(current, previous)
        current.touch()
        return current

    def keep_as_previous(self, namespace: str, pod: str, container: str) -> None:
        """The attempt that just ended will be restarted: from now on its log is the previous
        one too, as for the kubelet, whose `--previous` serves the `lastState` attempt also
        while the container waits to restart (a hard link, so `.log` still shows it)."""
        current = self.log(namespace, pod, container)
        previous = self.log(namespace, pod, container, previous=True)
        staged = previous.with_name(f".{previous.name}.new")
        staged.unlink(missing_ok=True)
        try:
            os.link(current, staged)
        except FileNotFoundError:
            return
        except OSError:
            shutil.copyfile(current, staged)
        os.replace(staged, previous)

    def remove_pod(self, namespace: str, name: str, uid: str, *, logs: bool) -> None:
        """Forget a deleted pod's files (its logs only when no newer pod took the name)."""
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)
        if logs:
            shutil.rmtree(self.logs_dir / namespace / name, ignore_errors=True)
