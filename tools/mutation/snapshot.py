"""A private copy of one commit of the repository for each run, so that mutants never touch
the working tree (other people edit it meanwhile) and every run mutates exactly one commit."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path


def resolve(repo: Path, ref: str) -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def export(repo: Path, commit: str, target: Path) -> Path:
    """`target` becomes a fresh copy of the commit's files (no .git)."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tempfile.TemporaryFile() as archive:
        subprocess.run(
            ["git", "archive", "--format=tar", commit], cwd=repo, check=True, stdout=archive
        )
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            tar.extractall(target, filter="data")
    return target
