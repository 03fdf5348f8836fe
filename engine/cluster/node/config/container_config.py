"""What a container needs from its pod before it starts (the ConfigMaps and Secrets it reads,
its env and command line, its mounts), and the kubelet's answer when some of it is missing:
the container waits, with the kubelet's reason, message and Warning event.

Both runtimes read and check sources the same way, so a pod whose ConfigMap or Secret is
missing waits in simulate mode as it does in process mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.node.config.env import (
    ContainerConfigError,
    command_line,
    container_env,
    env_from_warnings,
)
from engine.cluster.node.config.sources import (
    MissingSourceError,
    SourceRef,
    Sources,
    env_references,
    volume_references,
)
from engine.cluster.node.config.volumes import Mount, Unavailable, container_mounts, volume_contents
from engine.cluster.node.runtime.interface import ContainerWaitingError
from engine.kube.errors import ApiError

# Reads the referenced objects of a namespace from the API server.
SourceReader = Callable[[str, Iterable[SourceRef]], Sources]


def config_waiting(message: str) -> ContainerWaitingError:
    """What the kubelet shows when a container's config cannot be made yet."""
    return ContainerWaitingError("CreateContainerConfigError", message, event_reason="Failed",
                                 event_message=f"Error: {message}")


def volume_waiting(message: str) -> ContainerWaitingError:
    """What the kubelet shows when a volume cannot be set up yet (the container keeps its
    ContainerCreating or PodInitializing reason)."""
    return ContainerWaitingError(None, message, event_reason="FailedMount",
                                 event_message=message)


def read_sources(read: SourceReader, pod: Mapping[str, Any],
                 container: Mapping[str, Any]) -> Sources:
    """The ConfigMaps and Secrets of the pod's volumes and of the container's env, fresh."""
    refs = [*volume_references(pod), *env_references(container)]
    if not refs:
        return Sources()
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    try:
        return read(namespace, refs)
    except ApiError as exc:
        raise config_waiting(f"reading the pod's ConfigMaps and Secrets failed: {exc}") from exc


@dataclass(frozen=True)
class ContainerConfig:
    env: dict[str, str]
    argv: list[str]
    mounts: list[Mount]
    # InvalidEnvironmentVariableNames event messages.
    warnings: list[str]


def resolve(pod: Mapping[str, Any], container: Mapping[str, Any],
            sources: Sources) -> ContainerConfig:
    """The container's env, command line and mounts: a missing source waits
    (ContainerWaitingError), the impossible is refused (ContainerConfigError)."""
    try:
        env = container_env(pod, container, sources)
    except MissingSourceError as exc:
        raise config_waiting(str(exc)) from exc
    return ContainerConfig(env=env, argv=command_line(container, env),
                           mounts=container_mounts(pod, container, env),
                           warnings=env_from_warnings(pod, container, sources))


def volumes_set_up(pod: Mapping[str, Any]) -> bool:
    """Whether a container of the pod has started: its volumes were set up then, and stay
    (the kubelet keeps a mounted volume whose ConfigMap or Secret is deleted later)."""
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or ()),
                *(status.get("containerStatuses") or ())]
    return any(_started(s) for s in statuses)


def _started(status: Mapping[str, Any]) -> bool:
    state = status.get("state") or {}
    ended_before = (status.get("lastState") or {}).get("terminated")
    return "running" in state or "terminated" in state or bool(ended_before)


def check_sources(pod: Mapping[str, Any], container: Mapping[str, Any],
                  sources: Sources) -> None:
    """Wait, as process mode does, while a volume or env source is missing; anything else
    the spec says is not looked at (simulate mode)."""
    try:
        contents = {} if volumes_set_up(pod) else volume_contents(pod, sources)
    except ContainerConfigError:
        contents = {}
    unavailable = [c for c in contents.values() if isinstance(c, Unavailable)]
    if unavailable:
        raise volume_waiting(unavailable[0].message)
    try:
        container_env(pod, container, sources)
    except MissingSourceError as exc:
        raise config_waiting(str(exc)) from exc
    except ContainerConfigError:
        return
