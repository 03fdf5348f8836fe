"""The private mount namespace a container's processes start in: what is mounted where, and the
shell script that does it inside `unshare`, pure.

Each `Bind` (a volume, the pod's hosts file) is bind-mounted over its target, shallowest
first. A target that exists on this machine is mounted over as it is. One that does not
(/etc/mpi) needs its nearest existing parent *covered*: a tmpfs, staged on the node's scratch
directory, gets the missing directories created and every entry of the parent bind-mounted
back (symlinks copied), then is moved over the parent, so the parent looks unchanged but for
the new mount points. Covering `/` builds the new root the same way and enters it
(`mount --move . /` then `chroot .`: the process is then not "chrooted", so a nested user
namespace is still allowed). A target under an earlier bind gets its mount point created in
that bind's source, which is in the node's state directory. Nothing is ever created on the
machine's own file system outside the state directory.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

ROOT = PurePosixPath("/")
# What a path is on this machine (symlinks followed), or None when it does not exist.
PathKind = Literal["directory", "file"] | None
Inspect = Callable[[PurePosixPath], PathKind]
_NEW_ROOT = "./root"
_FAIL = (
    'fail() { echo "jobmachine local node: cannot set up the container\'s mounts: $*" >&2; '
    "exit 126; }"
)
# Bind every entry of directory $1 into the staged tmpfs $2, except names already there.
_FILL = """fill() {
  for e in "${1%/}"/* "${1%/}"/.[!.]* "${1%/}"/..?*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    t="$2/${e##*/}"
    if [ -e "$t" ] || [ -L "$t" ]; then continue; fi
    if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$t"
    elif [ -d "$e" ]; then mkdir "$t" && mount -n --rbind "$e" "$t"
    else : > "$t" && mount -n --bind "$e" "$t"
    fi || return 1
  done
}"""


class MountPlanError(Exception):
    """A target that cannot be mounted here (a file where a directory is needed)."""


@dataclass(frozen=True)
class Bind:
    source: Path
    target: PurePosixPath
    read_only: bool = False
    # Whether the source is a directory (else a file: a subPath file, the hosts file).
    directory: bool = True


@dataclass(frozen=True)
class Cover:
    """An existing directory covered by a tmpfs holding its entries and these new paths
    (relative, with whether each is a directory)."""

    directory: PurePosixPath
    create: tuple[tuple[PurePosixPath, bool], ...]


@dataclass(frozen=True)
class Step:
    bind: Bind
    # Its target lies under an earlier bind: create the mount point there first.
    create: bool


@dataclass(frozen=True)
class MountPlan:
    covers: tuple[Cover, ...]
    steps: tuple[Step, ...]

    @property
    def root_covered(self) -> bool:
        return any(cover.directory == ROOT for cover in self.covers)


def _under(path: PurePosixPath, ancestor: PurePosixPath) -> bool:
    return path != ancestor and path.is_relative_to(ancestor)


def _existing_parent(target: PurePosixPath, inspect: Inspect) -> PurePosixPath:
    for parent in target.parents:
        kind = inspect(parent)
        if kind == "directory":
            return parent
        if kind is not None:
            raise MountPlanError(f"mount path {target}: {parent} is not a directory here")
    return ROOT


def plan_mounts(binds: Sequence[Bind], inspect: Inspect) -> MountPlan:
    """Where each bind goes and which directories need covering; `inspect` looks at this
    machine's file system."""
    ordered = sorted(binds, key=lambda bind: len(bind.target.parts))
    covers: dict[PurePosixPath, list[tuple[PurePosixPath, bool]]] = {}
    steps = []
    for index, bind in enumerate(ordered):
        earlier = [b.target for b in ordered[:index]]
        if any(_under(bind.target, target) for target in earlier):
            steps.append(Step(bind, create=True))
            continue
        kind = inspect(bind.target) if bind.target not in earlier else None
        wanted = "directory" if bind.directory else "file"
        if kind is not None and kind != wanted:
            raise MountPlanError(f"mount path {bind.target} is a {kind} here, not a {wanted}")
        if kind is None and bind.target not in earlier:
            parent = _existing_parent(bind.target, inspect)
            covers.setdefault(parent, []).append(
                (bind.target.relative_to(parent), bind.directory))
        steps.append(Step(bind, create=False))
    ordered_covers = sorted(covers.items(), key=lambda item: len(item[0].parts))
    return MountPlan(tuple(Cover(d, tuple(c)) for d, c in ordered_covers), tuple(steps))


def _q(path: PurePosixPath | Path | str) -> str:
    return shlex.quote(str(path))


def _inside(root: str, path: PurePosixPath) -> str:
    """A path of the final view while it is being built (under the staged root, if any)."""
    return f"{root}{path}" if root else str(path)


def _create(path: str, directory: bool) -> str:
    if directory:
        return f"mkdir -p {_q(path)}"
    return f"{{ mkdir -p {_q(str(PurePosixPath(path).parent))} && : > {_q(path)}; }}"


def _cover_lines(cover: Cover, stage: str, root: str) -> list[str]:
    # The root is filled from the machine's own; anything else from the view being built.
    covered = "/" if cover.directory == ROOT else _inside(root, cover.directory)
    lines = [
        f"mkdir {stage} && mount -n -t tmpfs -o \"mode=$(stat -L -c %a {_q(covered)})\" "
        f"jobmachine-cover {stage} || fail 'staging a tmpfs for '{_q(cover.directory)}",
    ]
    lines += [f"{_create(f'{stage}/{rel}', directory)} || fail 'creating '{_q(rel)}"
              for rel, directory in cover.create]
    lines.append(f"fill {_q(covered)} {stage} || fail 'covering '{_q(cover.directory)}")
    if cover.directory != ROOT:
        lines.append(f"mount -n --move {stage} {_q(covered)} || "
                     f"fail 'covering '{_q(cover.directory)}")
    return lines


def _exec_lines(*, root: str, workdir: PurePosixPath, remap: tuple[int, int] | None
                ) -> list[str]:
    user = (f"unshare --user --map-user={remap[0]} --map-group={remap[1]} -- "
            if remap else "")
    if not root:
        return [f"cd {_q(workdir)} || fail 'no working directory '{_q(workdir)}",
                f'exec {user}"$@"']
    # chroot(1) changes to the new /, so the working directory is entered after it.
    return [
        f"cd {root} && mount -n --move . / || fail 'entering the new root'",
        f"exec chroot . {user}sh -c 'cd \"$1\" || exit 126; shift; exec \"$@\"' sh "
        f'{_q(workdir)} "$@"',
    ]


def render(plan: MountPlan, *, scratch: Path, workdir: PurePosixPath,
           remap: tuple[int, int] | None) -> str:
    """The script, run as `sh -c SCRIPT sh ARGV...` in a new mount namespace, that sets up
    the mounts and execs ARGV in `workdir` (through a nested user namespace mapping back to
    `remap` = (uid, gid), when given)."""
    lines = [_FAIL]
    root = _NEW_ROOT if plan.root_covered else ""
    if plan.covers:
        # Staged mounts are reached from the scratch directory as the working directory, which
        # still holds it when a cover hides the path it was reached by.
        lines += [
            _FILL,
            f"mount -n -t tmpfs -o mode=0700 jobmachine-scratch {_q(scratch)} && "
            f"mount -n --make-unbindable {_q(scratch)} && cd {_q(scratch)} || "
            "fail 'mounting the scratch directory'",
        ]
    for index, cover in enumerate(plan.covers):
        stage = _NEW_ROOT if cover.directory == ROOT else f"./cover{index}"
        lines += _cover_lines(cover, stage, root)
    for step in plan.steps:
        target = _inside(root, step.bind.target)
        if step.create:
            lines.append(f"[ -e {_q(target)} ] || {_create(target, step.bind.directory)} || "
                         f"fail 'creating the mount point '{_q(step.bind.target)}")
        lines.append(f"mount -n --bind {_q(step.bind.source)} {_q(target)} || "
                     f"fail 'mounting '{_q(step.bind.target)}")
    lines += [f"mount -n -o remount,bind,ro {_q(_inside(root, step.bind.target))} || "
              f"fail 'making '{_q(step.bind.target)}' read-only'"
              for step in plan.steps if step.bind.read_only]
    lines += _exec_lines(root=root, workdir=workdir, remap=remap)
    return "\n".join(lines) + "\n"


def host_path(path: PurePosixPath, binds: Sequence[Bind]) -> Path:
    """Where `path` of the container's view lives on this machine (inside the deepest bind
    holding it), to check a program or working directory before starting."""
    holders = [b for b in binds if path == b.target or _under(path, b.target)]
    if not holders:
        return Path(path)
    deepest = max(holders, key=lambda bind: len(bind.target.parts))
    return deepest.source / path.relative_to(deepest.target)
