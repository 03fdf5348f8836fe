"""crds/ is generated from the models, byte for byte, and says when it is stale."""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.api.crd import all_crds
from engine.api.manifests import stale_crds, write_crds

CRDS = Path(__file__).parents[3] / "crds"
NAMES = [
    "statemachines.jobmachine.dev.yaml",
    "machinejobs.jobmachine.dev.yaml",
    "pytorchjobs.kubeflow.org.yaml",
    "tfjobs.kubeflow.org.yaml",
]


def test_one_file_per_crd_named_plural_dot_group(tmp_path: Path) -> None:
    written = write_crds(tmp_path / "out")

    assert [p.name for p in written] == NAMES
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(NAMES)


def test_the_files_hold_the_crds(tmp_path: Path) -> None:
    written = write_crds(tmp_path)

    assert [yaml.safe_load(p.read_text()) for p in written] == all_crds()


def test_regenerating_gives_the_same_bytes(tmp_path: Path) -> None:
    first = {p.name: p.read_bytes() for p in write_crds(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in write_crds(tmp_path / "b")}

    assert first == second


def test_checked_in_crds_are_up_to_date(tmp_path: Path) -> None:
    fresh = {p.name: p.read_bytes() for p in write_crds(tmp_path)}

    assert {name: (CRDS / name).read_bytes() for name in fresh} == fresh, (
        "crds/ is stale: run `jobmachine manifests crds`"
    )


def test_stale_names_missing_and_changed_files(tmp_path: Path) -> None:
    write_crds(tmp_path)
    (tmp_path / NAMES[0]).unlink()
    changed = tmp_path / NAMES[2]
    changed.write_text(changed.read_text().replace("State", "Status"))

    assert stale_crds(tmp_path) == [NAMES[0], NAMES[2]]
    write_crds(tmp_path)
    assert stale_crds(tmp_path) == []
