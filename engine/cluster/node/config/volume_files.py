"""A pod's volumes on disk, in the node's state directory, and the binds that mount them.

Projections (configMap, secret, downwardAPI) are written as the kubelet's atomic writer does:
the files in a timestamped `..2006_01_02_15_04_05.NNN` directory, a `..data` link swapped to
it in one rename, and one link per top-level name (`hostfile -> ..data/hostfile`), so a
running container that has the volume mounted sees either the old or the new files, never a
mix. They are rewritten at each container start from the objects as the API server has them
then; a volume whose ConfigMap or Secret has since gone keeps what it had (the kubelet keeps
a mounted volume too). emptyDirs are created once per pod, mode 0777 as the kubelet makes
them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.cluster.node.config.env import ContainerConfigError
from engine.cluster.node.config.volumes import (
    Content,
    EmptyDir,
    File,
    HostPath,
    Mount,
    Projection,
    Unavailable,
)
from engine.cluster.node.runtime.mounts import Bind

DATA = "..data"
_DATA_TMP = "..data_tmp"
_HOST_TYPES = {"Directory": "directory", "File": "file", "DirectoryOrCreate": "directory",
               "FileOrCreate": "file"}


class VolumeNotReadyError(Exception):
    """A volume cannot be set up yet; the message is the kubelet's FailedMount message."""


def _current_files(data: Path) -> dict[str, File] | None:
    """What the projection holds now (None when never written)."""
    if not data.is_symlink():
        return None
    files: dict[str, File] = {}
    base = data.resolve()
    for path in base.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files[path.relative_to(base).as_posix()] = File(path.read_bytes(),
                                                            path.stat().st_mode & 0o7777)
    return files


def write_projection(directory: Path, files: Mapping[str, File]) -> None:
    """Make `directory` hold exactly `files`, in one atomic switch (nothing when unchanged)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / DATA
    if _current_files(data) == dict(files):
        return
    old = data.resolve() if data.is_symlink() else None
    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    fresh = Path(tempfile.mkdtemp(prefix=stamp, dir=directory))
    fresh.chmod(0o755)
    for relative, file in files.items():
        path = fresh / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(file.data)
        path.chmod(file.mode)
    link = directory / _DATA_TMP
    link.unlink(missing_ok=True)
    link.symlink_to(fresh.name)
    os.replace(link, data)
    visible = {relative.split("/")[0] for relative in files}
    for name in visible:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"{DATA}/{name}")
    for entry in directory.iterdir():
        stale = entry.name not in visible and not entry.name.startswith("..")
        if stale and entry.is_symlink() and os.readlink(entry).startswith(f"{DATA}/"):
            entry.unlink()
    if old is not None and old.parent == directory:
        shutil.rmtree(old, ignore_errors=True)


def _check_host_path(volume: str, host: HostPath) -> None:
    """The path must exist as its type says: the node never creates anything outside its
    state directory, so *OrCreate types only accept what is already there."""
    path = Path(host.path)
    wanted = _HOST_TYPES.get(host.type)
    failed = f'MountVolume.SetUp failed for volume "{volume}" : '
    if not path.exists():
        raise VolumeNotReadyError(
            f"{failed}hostPath type check failed: {path} does not exist (the local node does "
            "not create host paths)")
    if wanted == "directory" and not path.is_dir():
        raise VolumeNotReadyError(f"{failed}hostPath type check failed: {path} is not a directory")
    if wanted == "file" and not path.is_file():
        raise VolumeNotReadyError(f"{failed}hostPath type check failed: {path} is not a file")


def prepare_volume(directory: Path, name: str, content: Content) -> Path:
    """Set the volume up (or keep it as it is) and return the directory that holds it."""
    if isinstance(content, Projection):
        write_projection(directory, content.files)
    elif isinstance(content, EmptyDir):
        if not directory.is_dir():
            directory.mkdir(parents=True)
            directory.chmod(0o777)
    elif isinstance(content, HostPath):
        _check_host_path(name, content)
        return Path(content.path)
    elif isinstance(content, Unavailable) and not (directory / DATA).is_symlink():
        raise VolumeNotReadyError(content.message)
    return directory


def _bind_source(volume_dir: Path, mount: Mount, *, may_create: bool) -> Path:
    """The volume, or its subPath resolved (links followed) and kept inside the volume; a
    missing subPath is created as a directory, as the kubelet does."""
    if not mount.sub_path:
        return volume_dir
    root = volume_dir.resolve()
    source = (volume_dir / mount.sub_path).resolve()
    if not source.is_relative_to(root):
        raise ContainerConfigError(
            f"subPath {mount.sub_path} of volume {mount.volume} leads outside the volume")
    if not source.exists():
        if not may_create:
            raise ContainerConfigError(
                f"subPath {mount.sub_path} does not exist in volume {mount.volume} (the local "
                "node does not create host paths)")
        source.mkdir(mode=root.stat().st_mode & 0o777, parents=True)
    return source


def prepare_volumes(volumes_dir: Path, contents: Mapping[str, Content]) -> dict[str, Path]:
    """Set up every volume of the pod (the kubelet sets them all up before any container
    starts, mounted or not) and return where each one is. Only the node's user can reach
    them on this machine (Secrets are among them); processes reach them through their mounts."""
    volumes_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {name: prepare_volume(volumes_dir / name, name, content)
            for name, content in contents.items()}


def volume_binds(directories: Mapping[str, Path], mounts: Sequence[Mount],
                 contents: Mapping[str, Content]) -> list[Bind]:
    """The container's volumeMounts as binds of the prepared volumes."""
    binds = []
    for mount in mounts:
        host = isinstance(contents[mount.volume], HostPath)
        source = _bind_source(directories[mount.volume], mount, may_create=not host)
        binds.append(Bind(source, mount.path, mount.read_only, directory=source.is_dir()))
    return binds
