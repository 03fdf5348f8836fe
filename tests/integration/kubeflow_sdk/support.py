"""Driving the Kubeflow SDK (`pip install kubeflow`) against `jobmachine up`, from its own venv.

The SDK requires kubernetes<36 and jobmachine kubernetes>=37, so it lives in a venv of its
own, `.venv-kubeflow` (pyproject.toml's dependency group `kubeflow-sdk`; .ci/run makes it),
or the Python `JOBMACHINE_KUBEFLOW_PYTHON` names. A test writes a short program that uses
`TrainerClient()` exactly as a user's notebook would (it finds the cluster by KUBECONFIG and
nothing else), runs it with that Python and reads back what it `emit`s, as JSON. Without
that venv the tests skip and say how to make it.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.app.up import LocalCluster
from tests.kinds import REPO

SDK_PYTHON = Path(os.environ.get("JOBMACHINE_KUBEFLOW_PYTHON")
                  or REPO / ".venv-kubeflow" / "bin" / "python")


def _sdk_missing() -> str | None:
    """Why the SDK cannot be run here, or None."""
    if not SDK_PYTHON.exists():
        return (f"no Kubeflow SDK at {SDK_PYTHON}: python3 -m venv .venv-kubeflow && "
                ".venv-kubeflow/bin/pip install 'kubeflow>=0.5,<0.6' (.ci/run does)")
    found = subprocess.run([str(SDK_PYTHON), "-c", "import kubeflow.trainer"],
                           capture_output=True, text=True, check=False)
    return None if found.returncode == 0 else f"{SDK_PYTHON} cannot import kubeflow.trainer"


_MISSING = _sdk_missing()
needs_sdk = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")

_PRELUDE = '''\
import json
from kubeflow.trainer import CustomTrainer, TrainerClient

client = TrainerClient()


def emit(value):
    print("SDK-RESULT " + json.dumps(value, default=str), flush=True)
'''
_RESULT = "SDK-RESULT "


def run_sdk(cluster: LocalCluster, program: str, folder: Path, *, timeout_s: float = 300,
            environ: dict[str, str] | None = None) -> Any:
    """Run `program` (after a prelude giving it `client = TrainerClient()`, `CustomTrainer`
    and `emit`) with the SDK's Python against the cluster; what it emitted last. A program
    that fails fails the test with its output."""
    script = folder / "sdk_program.py"
    script.write_text(_PRELUDE + "\n\n" + textwrap.dedent(program))
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    env |= {"KUBECONFIG": str(cluster.server.kubeconfig), **(environ or {})}
    done = subprocess.run([str(SDK_PYTHON), str(script)], env=env, cwd=folder, text=True,
                          capture_output=True, timeout=timeout_s, check=False)
    assert done.returncode == 0, f"the SDK program failed:\n{done.stdout}\n{done.stderr}"
    emitted = [line[len(_RESULT):] for line in done.stdout.splitlines()
               if line.startswith(_RESULT)]
    assert emitted, f"the SDK program emitted nothing:\n{done.stdout}\n{done.stderr}"
    return json.loads(emitted[-1])
