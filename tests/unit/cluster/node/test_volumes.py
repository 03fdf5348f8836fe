"""What each volume holds (items, paths, modes, optional, downward API) and the container's
mounts (mountPath, subPath, readOnly), as the kubelet computes them."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

from engine.cluster.apiserver.encoding.go_text import go_quote
from engine.cluster.node.config.env import ContainerConfigError
from engine.cluster.node.config.sources import SourceObject, SourceRef, Sources
from engine.cluster.node.config.volumes import (
    EmptyDir,
    File,
    HostPath,
    Mount,
    Projection,
    Unavailable,
    container_mounts,
    format_map,
    item_path,
    volume_contents,
)

SOURCES = Sources({
    SourceRef("configmap", "mpi"): SourceObject({"hostfile": "w0\n", "extra": "x"},
                                                {"hostfile": b"w0\n", "extra": b"x",
                                                 "blob": b"\0"}),
    SourceRef("secret", "creds"): SourceObject({"token": "t"}, {"token": b"t"}),
})


def pod(*volumes: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w-0", "namespace": "team", "uid": "u1", **metadata},
            "spec": {"volumes": list(volumes)}}


def content(volume: dict[str, Any], **metadata: Any) -> Any:
    return volume_contents(pod({"name": "v", **volume}, **metadata), SOURCES)["v"]


def test_every_key_with_the_default_mode() -> None:
    assert content({"configMap": {"name": "mpi"}}) == Projection({
        "blob": File(b"\0", 0o644), "extra": File(b"x", 0o644), "hostfile": File(b"w0\n", 0o644)})
    assert content({"secret": {"secretName": "creds", "defaultMode": 0o400}}) == Projection(
        {"token": File(b"t", 0o400)})


def test_explicit_empty_values_read_as_absent_ones() -> None:
    volume = {"configMap": {"name": "mpi", "defaultMode": None, "optional": False,
                            "items": [{"key": "extra", "path": "e", "mode": None}]}}
    assert content(volume) == Projection({"e": File(b"x", 0o644)})
    assert content({"configMap": {"name": "mpi", "items": []}}) == content(
        {"configMap": {"name": "mpi"}})


def test_items_map_keys_to_paths_with_their_own_modes() -> None:
    volume = {"configMap": {"name": "mpi", "defaultMode": 0o600, "items": [
        {"key": "hostfile", "path": "etc/hostfile", "mode": 0o755},
        {"key": "extra", "path": "./extra.txt"},
        {"key": "hostfile", "path": "again", "mode": 0}]}}
    assert content(volume) == Projection({
        "etc/hostfile": File(b"w0\n", 0o755), "extra.txt": File(b"x", 0o600),
        "again": File(b"w0\n", 0)})


@pytest.mark.parametrize(
    ("volume", "message"),
    [
        ({"configMap": {"name": "absent"}},
         'MountVolume.SetUp failed for volume "v" : configmap "absent" not found'),
        ({"secret": {"secretName": "absent"}},
         'MountVolume.SetUp failed for volume "v" : secret "absent" not found'),
        ({"configMap": {"name": "mpi", "items": [{"key": "nope", "path": "p"}]}},
         'MountVolume.SetUp failed for volume "v" : configmap references non-existent config '
         "key: nope"),
        ({"secret": {"secretName": "creds", "items": [{"key": "nope", "path": "p"}]}},
         'MountVolume.SetUp failed for volume "v" : references non-existent secret key: nope'),
    ],
)
def test_a_missing_object_or_key_makes_the_volume_unavailable(volume: dict[str, Any],
                                                              message: str) -> None:
    assert content(volume) == Unavailable(message)


def test_optional_missing_objects_and_keys_give_what_there_is() -> None:
    assert content({"configMap": {"name": "absent", "optional": True}}) == Projection()
    assert content({"secret": {"secretName": "absent", "optional": True}}) == Projection()
    listed = {"configMap": {"name": "mpi", "optional": True, "items": [
        {"key": "nope", "path": "p"}, {"key": "extra", "path": "e"}]}}
    assert content(listed) == Projection({"e": File(b"x", 0o644)})


@pytest.mark.parametrize("path", ["", "/abs", "../up", "a/../b", "..hidden", ".", "a/.."])
def test_item_paths_stay_inside_the_volume(path: str) -> None:
    with pytest.raises(ContainerConfigError, match="must be relative"):
        item_path(path, "volume v")


def test_item_paths_are_normalised() -> None:
    assert item_path("a//b/./c", "volume v") == "a/b/c"
    assert item_path("a..b/c..", "volume v") == "a..b/c.."


@pytest.mark.parametrize("mode", [-1, 0o1000, 4096])
def test_modes_beyond_0777_are_refused(mode: int) -> None:
    with pytest.raises(ContainerConfigError, match="mode"):
        content({"configMap": {"name": "mpi", "defaultMode": mode}})


def test_the_widest_and_narrowest_modes_are_kept() -> None:
    volume = {"secret": {"secretName": "creds", "defaultMode": 0o777}}
    assert content(volume) == Projection({"token": File(b"t", 0o777)})
    volume = {"secret": {"secretName": "creds", "defaultMode": 0}}
    assert content(volume) == Projection({"token": File(b"t", 0)})


def test_downward_api_files() -> None:
    volume = {"downwardAPI": {"defaultMode": 0o444, "items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}, "mode": 0o400},
        {"path": "meta/name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "index", "fieldRef": {"fieldPath": "metadata.labels['index']"}},
    ]}}
    got = content(volume, labels={"role": "worker", "index": "0"},
                  annotations={"note": 'say "hi"\n'})
    assert got == Projection({
        "labels": File(b'index="0"\nrole="worker"', 0o444),
        "annotations": File(b'note="say \\"hi\\"\\n"', 0o400),
        "meta/name": File(b"w-0", 0o444),
        "index": File(b"0", 0o444),
    })


@pytest.mark.parametrize(
    ("item", "words"),
    [({"path": "ip", "fieldRef": {"fieldPath": "status.podIP"}}, "not supported in a downward"),
     ({"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu"}}, "resourceFieldRef")],
)
def test_downward_api_fields_the_node_cannot_provide(item: dict[str, Any], words: str) -> None:
    with pytest.raises(ContainerConfigError, match=words):
        content({"downwardAPI": {"items": [item]}})


def test_go_quoting_and_the_label_file_format() -> None:
    assert go_quote('a"b\\c\td\x01é') == '"a\\"b\\\\c\\td\\x01é"'
    assert format_map({"b": "2", "a": "1"}) == 'a="1"\nb="2"'
    assert format_map({}) == ""


def test_empty_dir_host_path_and_unsupported_types() -> None:
    host = {"path": "/data//x/", "type": "Directory"}
    contents = volume_contents(pod({"name": "e", "emptyDir": {"medium": "Memory"}},
                                   {"name": "h", "hostPath": host},
                                   {"name": "p", "persistentVolumeClaim": {"claimName": "c"}}),
                               SOURCES)
    assert contents == {"e": EmptyDir(), "h": HostPath(PurePosixPath("/data/x"), "Directory")}


def mounts(*entries: dict[str, Any], env: dict[str, str] | None = None) -> list[Mount]:
    volumes = [{"name": "cfg", "configMap": {"name": "mpi"}}, {"name": "tmp", "emptyDir": {}},
               {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}}]
    container = {"name": "main", "volumeMounts": list(entries)}
    return container_mounts(pod(*volumes), container, env or {})


def test_mounts_projections_are_always_read_only() -> None:
    assert mounts({"name": "cfg", "mountPath": "/etc/mpi/"},
                  {"name": "tmp", "mountPath": "data//x", "readOnly": True},
                  {"name": "tmp", "mountPath": "/scratch", "subPath": "a/b"}) == [
        Mount("cfg", PurePosixPath("/etc/mpi"), "", True),
        Mount("tmp", PurePosixPath("/data/x"), "", True),
        Mount("tmp", PurePosixPath("/scratch"), "a/b", False),
    ]


def test_sub_path_expr_is_expanded_with_the_containers_variables() -> None:
    found = mounts({"name": "tmp", "mountPath": "/out", "subPathExpr": "logs/$(POD)"},
                   env={"POD": "w-0"})
    assert found[0].sub_path == "logs/w-0"


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"name": "nope", "mountPath": "/x"}, 'cannot find volume "nope"'),
        ({"name": "pvc", "mountPath": "/x"}, "persistentVolumeClaim volumes are not supported"),
        ({"name": "tmp", "mountPath": "/x", "subPath": "/abs"}, "must not be an absolute path"),
        ({"name": "tmp", "mountPath": "/a/.."}, "cannot be mounted at /"),
        ({"name": "tmp", "mountPath": "/x", "subPath": "a/../../b"}, "must not contain '..'"),
    ],
)
def test_mounts_the_node_refuses(entry: dict[str, Any], words: str) -> None:
    with pytest.raises(ContainerConfigError, match=words):
        mounts(entry)
