"""The mount plan of a container's private mount namespace: which targets are mounted over
as they are, which parents are covered, which mount points are made in an earlier bind."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from engine.cluster.node.runtime.mounts import (
    Bind,
    Cover,
    MountPlanError,
    PathKind,
    Step,
    host_path,
    plan_mounts,
    render,
)

P = PurePosixPath
# The machine as these tests see it.
MACHINE: dict[str, PathKind] = {"/": "directory", "/etc": "directory", "/etc/hosts": "file",
                                "/tmp": "directory", "/tmp/x": "directory", "/opt": "directory"}


def inspect(path: PurePosixPath) -> PathKind:
    return MACHINE.get(str(path))


def bind(target: str, *, directory: bool = True, read_only: bool = False) -> Bind:
    return Bind(Path("/state/volumes") / target.strip("/").replace("/", "_"), P(target),
                read_only, directory)


def test_existing_targets_are_mounted_over_as_they_are() -> None:
    hosts, tmp = bind("/etc/hosts", directory=False), bind("/tmp/x")
    plan = plan_mounts([tmp, hosts], inspect)
    assert plan.covers == ()
    assert plan.steps == (Step(tmp, create=False), Step(hosts, create=False))


def test_a_missing_target_covers_its_nearest_existing_parent() -> None:
    plan = plan_mounts([bind("/etc/mpi"), bind("/etc/a/b/file", directory=False),
                        bind("/etc/hosts", directory=False)], inspect)
    assert plan.covers == (Cover(P("/etc"), ((P("mpi"), True), (P("a/b/file"), False))),)
    assert not plan.root_covered


def test_covers_go_shallowest_first_and_the_root_can_be_covered() -> None:
    plan = plan_mounts([bind("/tmp/x/new"), bind("/etc/mpi"), bind("/data")], inspect)
    assert [c.directory for c in plan.covers] == [P("/"), P("/etc"), P("/tmp/x")]
    assert plan.root_covered


def test_a_target_under_an_earlier_bind_gets_its_mount_point_made_there() -> None:
    outer, inner = bind("/data"), bind("/data/cfg/sub")
    plan = plan_mounts([inner, outer], inspect)
    assert plan.covers == (Cover(P("/"), ((P("data"), True),)),)
    assert plan.steps == (Step(outer, create=False), Step(inner, create=True))


def test_the_same_target_twice_mounts_over_the_first() -> None:
    first, second = bind("/data"), Bind(Path("/elsewhere"), P("/data"))
    plan = plan_mounts([first, second], inspect)
    assert plan.steps == (Step(first, create=False), Step(second, create=False))
    assert len(plan.covers) == 1


@pytest.mark.parametrize(
    ("target", "directory", "words"),
    [("/etc/hosts", True, "is a file here, not a directory"),
     ("/tmp", False, "is a directory here, not a file"),
     ("/etc/hosts/inside", True, "/etc/hosts is not a directory")],
)
def test_what_cannot_be_mounted(target: str, directory: bool, words: str) -> None:
    with pytest.raises(MountPlanError, match=words):
        plan_mounts([bind(target, directory=directory)], inspect)


def test_the_script_covers_binds_then_makes_read_only_and_runs_in_the_working_directory() -> None:
    plan = plan_mounts([bind("/etc/mpi", read_only=True), bind("/etc/hosts", directory=False)],
                       inspect)
    script = render(plan, scratch=Path("/state/scratch"), workdir=P("/work dir"), remap=None)
    lines = script.splitlines()
    assert any(line.startswith("mount -n -t tmpfs -o mode=0700 jobmachine-scratch "
                               "/state/scratch") for line in lines)
    order = [next(i for i, line in enumerate(lines) if line.startswith(prefix)) for prefix in (
        "mkdir -p ./cover0/mpi", "fill /etc ./cover0", "mount -n --move ./cover0 /etc",
        "mount -n --bind /state/volumes/etc_mpi /etc/mpi",
        "mount -n --bind /state/volumes/etc_hosts /etc/hosts",
        "mount -n -o remount,bind,ro /etc/mpi")]
    assert order == sorted(order)
    assert lines[-2:] == ["cd '/work dir' || fail 'no working directory ''/work dir'",
                          'exec "$@"']


def test_binds_alone_need_no_scratch_and_remap_runs_through_a_nested_user_namespace() -> None:
    plan = plan_mounts([bind("/etc/hosts", directory=False)], inspect)
    script = render(plan, scratch=Path("/s"), workdir=P("/tmp"), remap=(1000, 100))
    assert "scratch" not in script
    assert script.splitlines()[-1] == (
        'exec unshare --user --map-user=1000 --map-group=100 -- "$@"')


def test_a_covered_root_is_built_aside_then_entered() -> None:
    plan = plan_mounts([bind("/data"), bind("/etc/mpi")], inspect)
    script = render(plan, scratch=Path("/s"), workdir=P("/data"), remap=None)
    assert "fill / ./root" in script
    assert "fill ./root/etc ./cover1" in script
    assert "mount -n --bind /state/volumes/data ./root/data" in script
    assert script.splitlines()[-2:] == [
        "cd ./root && mount -n --move . / || fail 'entering the new root'",
        "exec chroot . sh -c 'cd \"$1\" || exit 126; shift; exec \"$@\"' sh /data \"$@\""]


def test_host_path_follows_the_deepest_bind() -> None:
    binds = [Bind(Path("/state/a"), P("/data")), Bind(Path("/state/b"), P("/data/cfg"))]
    assert host_path(P("/data/cfg/run.sh"), binds) == Path("/state/b/run.sh")
    assert host_path(P("/data/x"), binds) == Path("/state/a/x")
    assert host_path(P("/data"), binds) == Path("/state/a")
    assert host_path(P("/datax"), binds) == Path("/datax")
