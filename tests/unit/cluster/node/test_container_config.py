"""What the kubelet shows for a container whose ConfigMap or Secret is missing, in both modes:
CreateContainerConfigError for env, the volume's FailedMount (keeping ContainerCreating) for
volumes; and what simulate mode leaves alone."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from engine.cluster.node.config.container_config import check_sources, read_sources, resolve
from engine.cluster.node.config.env import ContainerConfigError
from engine.cluster.node.config.sources import SourceObject, SourceRef, Sources
from engine.cluster.node.runtime.interface import ContainerWaitingError
from engine.kube.errors import unavailable

POD: dict[str, Any] = {
    "metadata": {"name": "w-0", "namespace": "team", "uid": "u1"},
    "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "mpi"}}]},
}
ENV_REF = {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "x"}}}
MPI = {SourceRef("configmap", "mpi"): SourceObject({"hostfile": "w0"}, {"hostfile": b"w0"})}


def test_a_missing_env_source_is_create_container_config_error() -> None:
    container = {"name": "main", "command": ["true"], "env": [ENV_REF]}
    with pytest.raises(ContainerWaitingError) as caught:
        resolve(POD, container, Sources(MPI))
    waiting = caught.value
    assert (waiting.reason, waiting.message) == ("CreateContainerConfigError",
                                                 'configmap "settings" not found')
    assert (waiting.event_reason, waiting.event_message) == (
        "Failed", 'Error: configmap "settings" not found')


def test_resolve_gives_env_command_and_mounts() -> None:
    container = {"name": "main", "command": ["echo", "$(X)"], "env": [ENV_REF],
                 "volumeMounts": [{"name": "cfg", "mountPath": "/etc/mpi"}]}
    found = Sources({**MPI, SourceRef("configmap", "settings"): SourceObject({"x": "1"}, {})})
    config = resolve(POD, container, found)
    assert (config.env, config.argv, config.warnings) == ({"X": "1"}, ["echo", "1"], [])
    assert [str(m.path) for m in config.mounts] == ["/etc/mpi"]


def test_simulate_mode_waits_for_volumes_first_then_env() -> None:
    container = {"name": "main", "env": [ENV_REF]}
    with pytest.raises(ContainerWaitingError) as caught:
        check_sources(POD, container, Sources())
    assert caught.value.reason is None
    assert caught.value.event_reason == "FailedMount"
    assert caught.value.message == (
        'MountVolume.SetUp failed for volume "cfg" : configmap "mpi" not found')
    with pytest.raises(ContainerWaitingError, match='configmap "settings" not found'):
        check_sources(POD, container, Sources(MPI))


def test_simulate_mode_ignores_what_it_does_not_run() -> None:
    container = {"name": "main", "env": [
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
        "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}
    pod = {**POD, "spec": {"volumes": [{"name": "bad", "configMap": {
        "name": "mpi", "items": [{"key": "hostfile", "path": "../up"}]}}]}}
    check_sources(pod, container, Sources(MPI))
    with pytest.raises(ContainerConfigError):
        resolve(POD, container, Sources(MPI))


def test_reading_sources_asks_for_every_reference_and_waits_when_the_server_fails() -> None:
    asked: list[tuple[str, list[SourceRef]]] = []

    def read(namespace: str, refs: Iterable[SourceRef]) -> Sources:
        asked.append((namespace, list(refs)))
        return Sources(MPI)

    container = {"name": "main", "env": [ENV_REF]}
    assert read_sources(read, POD, container) == Sources(MPI)
    assert asked == [("team", [SourceRef("configmap", "mpi"), SourceRef("configmap", "settings")])]
    assert read_sources(read, {"metadata": {"namespace": "team"}}, {"name": "m"}) == Sources()
    assert len(asked) == 1

    def failing(namespace: str, refs: Iterable[SourceRef]) -> Sources:
        raise unavailable(ConnectionRefusedError("connection refused"))

    with pytest.raises(ContainerWaitingError, match="connection refused"):
        read_sources(failing, POD, container)


def test_simulated_volumes_stay_once_a_container_has_started() -> None:
    started = {**POD, "status": {"containerStatuses": [
        {"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"exitCode": 1}}, "restartCount": 1}]}}
    check_sources(started, {"name": "main"}, Sources())
    fresh = {**POD, "status": {"containerStatuses": [
        {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}},
         "lastState": {}, "restartCount": 0}]}}
    with pytest.raises(ContainerWaitingError):
        check_sources(fresh, {"name": "main"}, Sources())
