"""Loading machines reads each file once: a machine that extends one given beside it does
not read its folder again (`check machines/` parsed 113 files for 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.definition import loader
from engine.definition.validate import load_with_positions
from tests.kinds import MACHINES


def test_a_folder_of_machines_that_extend_each_other_is_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[str] = []
    original = loader.read_text
    monkeypatch.setattr(loader, "read_text",
                        lambda text, name: read.append(name) or original(text, name))
    loaded, _ = load_with_positions([str(MACHINES)])
    files = sorted(str(p) for p in MACHINES.glob("*.yaml"))
    assert sorted(read) == files
    assert any(source.bases for source, _ in loaded)  # some extend another


def test_a_base_missing_from_the_files_given_is_still_found_beside_them(
    tmp_path: Path,
) -> None:
    for name in ("kubeflow.yaml", "pytorchjob.yaml"):
        (tmp_path / name).write_text((MACHINES / name).read_text())
    loaded, diagnostics = load_with_positions([str(tmp_path / "pytorchjob.yaml")])
    assert [d for d in diagnostics if d.is_error] == []
    assert [s.definition.metadata.name for s, _ in loaded] == ["pytorchjob"]
