"""Volumes on disk: projections written as the kubelet's atomic writer does, kept when their
source has gone, emptyDirs made once, and subPaths that stay inside their volume."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

import pytest

from engine.cluster.node.config.env import ContainerConfigError
from engine.cluster.node.config.volume_files import (
    DATA,
    VolumeNotReadyError,
    prepare_volumes,
    volume_binds,
    write_projection,
)
from engine.cluster.node.config.volumes import (
    Content,
    EmptyDir,
    File,
    HostPath,
    Mount,
    Projection,
    Unavailable,
)


def visible(directory: Path) -> dict[str, str]:
    """The user-visible links of a projected volume."""
    return {entry.name: os.readlink(entry) for entry in directory.iterdir()
            if entry.is_symlink() and not entry.name.startswith("..")}


def test_the_atomic_writer_layout(tmp_path: Path) -> None:
    volume = tmp_path / "cfg"
    write_projection(volume, {"hostfile": File(b"w0\n", 0o640), "bin/run": File(b"x", 0o755)})
    assert visible(volume) == {"hostfile": f"{DATA}/hostfile", "bin": f"{DATA}/bin"}
    stamp = os.readlink(volume / DATA)
    assert stamp.startswith("..") and (volume / stamp).is_dir()
    assert (volume / "hostfile").read_bytes() == b"w0\n"
    assert stat.S_IMODE((volume / "hostfile").stat().st_mode) == 0o640
    assert stat.S_IMODE((volume / "bin" / "run").stat().st_mode) == 0o755


def test_an_update_switches_everything_at_once_and_drops_what_is_gone(tmp_path: Path) -> None:
    volume = tmp_path / "cfg"
    write_projection(volume, {"a": File(b"1", 0o644), "b": File(b"2", 0o644)})
    first = os.readlink(volume / DATA)
    (volume / "mountpoint").mkdir()  # made for a nested mount: left alone
    write_projection(volume, {"a": File(b"changed", 0o644)})
    assert os.readlink(volume / DATA) != first
    assert not (volume / first).exists()
    assert visible(volume) == {"a": f"{DATA}/a"}
    assert (volume / "a").read_bytes() == b"changed"
    assert (volume / "mountpoint").is_dir()


def test_unchanged_content_is_not_rewritten(tmp_path: Path) -> None:
    volume = tmp_path / "cfg"
    files = {"a": File(b"1", 0o644)}
    write_projection(volume, files)
    first = os.readlink(volume / DATA)
    write_projection(volume, files)
    assert os.readlink(volume / DATA) == first
    write_projection(volume, {"a": File(b"1", 0o600)})
    assert os.readlink(volume / DATA) != first


def test_an_unavailable_volume_keeps_what_it_had_and_waits_when_it_had_nothing(
        tmp_path: Path) -> None:
    prepare_volumes(tmp_path, {"cfg": Projection({"a": File(b"1", 0o644)})})
    kept = prepare_volumes(tmp_path, {"cfg": Unavailable("gone")})
    assert (kept["cfg"] / "a").read_bytes() == b"1"
    with pytest.raises(VolumeNotReadyError, match="never"):
        prepare_volumes(tmp_path, {"other": Unavailable("never")})


def test_an_empty_dir_is_made_once_and_kept(tmp_path: Path) -> None:
    made = prepare_volumes(tmp_path, {"scratch": EmptyDir()})["scratch"]
    assert stat.S_IMODE(made.stat().st_mode) == 0o777
    (made / "note").write_text("kept")
    assert (prepare_volumes(tmp_path, {"scratch": EmptyDir()})["scratch"] / "note").exists()


def test_a_host_path_must_already_be_there(tmp_path: Path) -> None:
    there = tmp_path / "there"
    there.mkdir()
    assert prepare_volumes(tmp_path, {"h": HostPath(PurePosixPath(there), "Directory")}) == {
        "h": there}
    with pytest.raises(VolumeNotReadyError, match="is not a file"):
        prepare_volumes(tmp_path, {"h": HostPath(PurePosixPath(there), "File")})
    missing = PurePosixPath(tmp_path / "missing")
    with pytest.raises(VolumeNotReadyError, match="does not exist"):
        prepare_volumes(tmp_path, {"h": HostPath(missing, "DirectoryOrCreate")})
    assert not Path(missing).exists()


def mount(sub_path: str, volume: str = "cfg") -> Mount:
    return Mount(volume, PurePosixPath("/x"), sub_path, read_only=True)


def test_sub_paths_resolve_through_the_links_and_stay_inside(tmp_path: Path) -> None:
    contents: dict[str, Content] = {"cfg": Projection({"bin/run": File(b"x", 0o755)}),
                                    "tmp": EmptyDir()}
    directories = prepare_volumes(tmp_path, contents)
    binds = volume_binds(directories, [mount("bin/run"), mount(""), mount("new/dir", "tmp")],
                         contents)
    assert binds[0].source == (tmp_path / "cfg" / "bin" / "run").resolve()
    assert not binds[0].directory and binds[0].read_only
    assert binds[1].source == tmp_path / "cfg" and binds[1].directory
    assert binds[2].source == (tmp_path / "tmp" / "new" / "dir").resolve()
    assert binds[2].source.is_dir()
    (tmp_path / "tmp" / "out").symlink_to("/etc")
    with pytest.raises(ContainerConfigError, match="leads outside the volume"):
        volume_binds(directories, [mount("out", "tmp")], contents)


def test_a_missing_sub_path_of_a_host_path_is_not_created(tmp_path: Path) -> None:
    contents: dict[str, Content] = {"h": HostPath(PurePosixPath(tmp_path), "")}
    directories = prepare_volumes(tmp_path / "volumes", contents)
    with pytest.raises(ContainerConfigError, match="does not exist"):
        volume_binds(directories, [mount("absent", "h")], contents)
    assert not (tmp_path / "absent").exists()
