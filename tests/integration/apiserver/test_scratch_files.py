"""Where the embedded API server keeps its files (certificates, kubeconfig): in the data dir
when there is one, and nothing elsewhere, so that a process killed mid-way (a crash, a
test's SIGKILL) leaves no scratch folder behind in /tmp; without one, in a scratch folder
that is gone once the server stops."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from engine.cluster import running_apiserver


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's temporary folder, for this test only."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_server_with_a_data_dir_makes_no_scratch_folder(tmp_path: Path, scratch: Path) -> None:
    with running_apiserver(data_dir=tmp_path / "data") as server:
        assert list(scratch.iterdir()) == []
        assert Path(server.kubeconfig).parent == tmp_path / "data"
    assert list(scratch.iterdir()) == []


def test_a_server_without_one_removes_its_scratch_folder_when_it_stops(scratch: Path) -> None:
    with running_apiserver() as server:
        folders = list(scratch.iterdir())
        assert [f.name.startswith("jobmachine-apiserver-") for f in folders] == [True]
        assert Path(server.kubeconfig).parent == folders[0]
    assert list(scratch.iterdir()) == []
