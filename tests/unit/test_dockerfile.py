"""The Dockerfile builds on any base given as BASE_IMAGE, installs into a virtual environment
and runs that environment's `jobmachine` as uid 65532; tools/build-image.sh builds and runs it
for real (nothing is built here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = "/opt/jobmachine"


def instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) in order, continuation lines joined, comments dropped."""
    joined = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines()]
    pairs = [line.split(maxsplit=1) for line in lines if line and not line.startswith("#")]
    return [(pair[0].upper(), pair[1] if len(pair) > 1 else "") for pair in pairs]


def arguments(name: str) -> list[str]:
    return [args for instruction, args in instructions() if instruction == name]


def test_the_base_image_is_a_build_argument_declared_before_from() -> None:
    names = [instruction for instruction, _ in instructions()]
    (base,) = [args for instruction, args in instructions()[: names.index("FROM")]
               if instruction == "ARG" and args.startswith("BASE_IMAGE=")]
    assert base == "BASE_IMAGE=python:3.12-slim"
    assert arguments("FROM") == ["${BASE_IMAGE}"]


def test_the_engine_is_installed_into_a_virtual_environment() -> None:
    (run,) = arguments("RUN")
    assert f"python3 -m venv {VENV}" in run
    assert f"{VENV}/bin/pip install --no-cache-dir" in run
    assert " pip install" not in run.replace(f"{VENV}/bin/pip install", "")


def test_the_image_runs_the_virtual_environments_jobmachine_as_uid_65532() -> None:
    assert arguments("USER")[-1] == "65532:65532"
    (entrypoint,) = arguments("ENTRYPOINT")
    assert json.loads(entrypoint) == [f"{VENV}/bin/jobmachine"]
    (command,) = arguments("CMD")
    assert json.loads(command)[:2] == ["run", "--in-cluster"]


def test_the_build_context_leaves_out_local_state() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "**/__pycache__"} <= ignored


def test_the_build_script_explains_itself_without_building() -> None:
    result = subprocess.run(["bash", str(ROOT / "tools" / "build-image.sh"), "--help"],
                            capture_output=True, text=True, timeout=30, check=True)
    assert "--rebuild-base" in result.stdout
    assert "BASE_IMAGE" in result.stdout
