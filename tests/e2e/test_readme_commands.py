"""The README's "What you can do" commands work exactly as written right after its quick start.

Each line of that block runs in bash, in a folder that holds the checkout's `machines/`,
`examples/` and `.venv/` (so nothing lands in the checkout), with the PATH a shell has after
the quick start: the machine's PATH without any `jobmachine` on it, then the quick start's
own `. .venv/bin/activate`. Lines that need a running cluster are skipped and say why, and
so is `jobmachine check machines/`, minutes of model checking that another test runs as is.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
ACTIVATE = re.compile(r"(?:^|&& )((?:\.|source) \.venv/bin/activate)(?= &&|$)")
LINKED = ("machines", "examples", ".venv")


def section(title: str) -> str:
    """The README's text under `## title`, up to the next `## ` heading."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)


def commands() -> list[str]:
    (block, *_) = sh_blocks(section("What you can do"))
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def why_not_here(line: str) -> str | None:
    """Why a line is not run here: it needs a cluster (or starts one, or trains for real), or
    another test runs the very same command; None: it runs."""
    words = line.split()
    if "kubectl" in words:
        return "needs a cluster: kubectl talks to a running cluster"
    if "JobClient()" in line:
        return "needs a cluster: the SDK reads a job from a running cluster"
    if "--job" in words:
        return "needs a cluster: draws a job read from a running cluster"
    if words[0] == "jobmachine":
        return {
            "up": "needs a cluster: starts one and serves until stopped",
            "run": "needs a cluster: runs the engine against a real one",
            "demo": "needs a cluster: starts one and trains for real (the `real` extra, "
                    "Open MPI)",
            "manifests": "needs a cluster: installs into a real one",
            "check": "model-checks every shipped machine, minutes of CPU: "
                     "tests/integration/modelcheck/test_check_command.py runs this command",
        }.get(words[1])
    return None


@pytest.fixture(scope="module")
def activate() -> str:
    """The quick start's activation of `.venv`, as its first command writes it."""
    quick_start = sh_blocks(section("Quick start"))
    assert len(quick_start) == 2, "the quick start is two commands"
    found = ACTIVATE.search(quick_start[0].strip())
    assert found, ("the quick start's first command does not activate .venv, so the "
                   "`jobmachine` and `python3` of the commands below are not the environment's")
    return found[1]


@pytest.fixture(scope="module")
def after_quick_start(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder like the checkout and the environment of a shell before activation."""
    if not (REPO / ".venv" / "bin" / "activate").is_file():
        pytest.skip("no .venv in the checkout: the README's quick start has not run here")
    folder = tmp_path_factory.mktemp("readme")
    for name in LINKED:
        (folder / name).symlink_to(REPO / name)
    env = {k: v for k, v in os.environ.items()
           if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}}
    env["PATH"] = os.pathsep.join(
        entry for entry in env.get("PATH", "").split(os.pathsep)
        if entry and not (Path(entry) / "jobmachine").exists())
    return folder, env


def in_shell(script: str, activate: str, where: tuple[Path, dict[str, str]]
             ) -> subprocess.CompletedProcess[str]:
    folder, env = where
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run([bash, "-c", f"{activate} || exit 97\n{script}"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def test_before_activation_no_jobmachine_is_on_the_path(
    after_quick_start: tuple[Path, dict[str, str]],
) -> None:
    """Else the commands below would pass without the quick start making them work."""
    folder, env = after_quick_start
    found = subprocess.run(["bash", "-c", "command -v jobmachine"], cwd=folder, env=env,
                           capture_output=True, text=True, check=False)
    assert found.returncode != 0, found.stdout


def test_after_the_quick_start_python3_imports_the_sdk(
    activate: str, after_quick_start: tuple[Path, dict[str, str]],
) -> None:
    """The README's SDK line runs `python3`: it must be the environment's."""
    result = in_shell("python3 -c 'import engine.sdk'", activate, after_quick_start)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("line", commands(), ids=[" ".join(c.split()[:3]) for c in commands()])
def test_the_command_works_as_written(
    line: str, activate: str, after_quick_start: tuple[Path, dict[str, str]],
) -> None:
    reason = why_not_here(line)
    if reason is not None:
        pytest.skip(reason)

    result = in_shell(line, activate, after_quick_start)

    assert result.returncode == 0, f"{line}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr
