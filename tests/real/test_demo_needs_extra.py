"""`jobmachine demo --real` without what it needs says so in one line and exits non-zero,
before starting anything (runs with or without the `real` extra)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.app import demo
from engine.cli import app


def test_without_the_extra_it_names_the_missing_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "REAL_MODULES", ("numpy", "no_such_module_jobmachine_real"))

    result = CliRunner().invoke(app, ["demo", "--real"])

    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "no_such_module_jobmachine_real" in lines[0]
    assert "numpy" not in lines[0]
    assert lines[0].endswith("pip install -e '.[real]'")


def test_without_open_mpi_it_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "REAL_MODULES", ())
    monkeypatch.setattr(demo, "REAL_PROGRAMS", {"no-such-mpirun-jobmachine": "Open MPI (Debian: "
                                                "apt-get install openmpi-bin)"})

    result = CliRunner().invoke(app, ["demo", "--real"])

    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: the real examples need programs this machine lacks: no-such-mpirun-jobmachine: "
        "Open MPI (Debian: apt-get install openmpi-bin)")


def test_real_examples_need_process_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "REAL_MODULES", ())

    result = CliRunner().invoke(app, ["demo", "--real", "--node-mode", "simulate"])

    assert result.exit_code == 1
    assert result.output.strip() == ("error: the real examples train for real: they need "
                                     "--node-mode process")
