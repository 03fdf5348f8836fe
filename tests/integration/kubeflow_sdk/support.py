"""Driving the Kubeflow SDK (`pip install kubeflow`) against `jobmachine up`, from its own venv.

The SDK requires kubernetes<36 and jobmachine kubernetes>=37, so it lives in a venv of its
own, `.venv-kubeflow`, which the first test that needs it makes when it is missing (pip
installs pyproject.toml's dependency group `kubeflow-sdk`; one xdist worker makes it while
the other waits on a lock), or the Python `JOBMACHINE_KUBEFLOW_PYTHON` names. A test writes
a short program that uses `TrainerClient()` exactly as a user's notebook would (it finds the
cluster by KUBECONFIG and nothing else), runs it with that Python and reads back what it
`emit`s, as JSON. Where the venv cannot be made (no package index), the tests skip and say
why.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from engine.app.up import LocalCluster
from tests.kinds import REPO

SDK_VENV = REPO / ".venv-kubeflow"
SDK_PYTHON = Path(os.environ.get("JOBMACHINE_KUBEFLOW_PYTHON") or SDK_VENV / "bin" / "python")
_MAKING = REPO / ".venv-kubeflow.lock"
_INSTALL_TIMEOUT_S = 900


def _importable() -> bool:
    found = subprocess.run([str(SDK_PYTHON), "-c", "import kubeflow.trainer"],
                           capture_output=True, text=True, check=False)
    return found.returncode == 0


def sdk_requirements() -> list[str]:
    """What the venv holds: pyproject.toml's dependency group `kubeflow-sdk`."""
    with (REPO / "pyproject.toml").open("rb") as project:
        return [str(r) for r in tomllib.load(project)["dependency-groups"]["kubeflow-sdk"]]


def _make_venv() -> str | None:
    """Make `.venv-kubeflow` unless it works already (under a lock: the other xdist worker
    waits, then finds it made); None when it works, else why it could not be made."""
    with _MAKING.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if SDK_PYTHON.exists() and _importable():
            return None
        steps = [[sys.executable, "-m", "venv", "--clear", str(SDK_VENV)],
                 [str(SDK_VENV / "bin" / "pip"), "install", "-q", *sdk_requirements()]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False,
                                  timeout=_INSTALL_TIMEOUT_S)
            if done.returncode != 0:
                return f"could not make {SDK_VENV} ({' '.join(step[:3])}): {done.stderr[-500:]}"
    return None if _importable() else f"{SDK_PYTHON} cannot import kubeflow.trainer"


@functools.cache
def _sdk_missing() -> str | None:
    """Why the SDK cannot be run here, or None; makes its venv first where it is ours."""
    if "JOBMACHINE_KUBEFLOW_PYTHON" in os.environ:
        if not SDK_PYTHON.exists() or not _importable():
            return f"JOBMACHINE_KUBEFLOW_PYTHON={SDK_PYTHON} cannot import kubeflow.trainer"
        return None
    return _make_venv()


@pytest.fixture(autouse=False)
def sdk() -> Path:
    """The SDK's Python (its venv made when missing); the test skips, saying why, where it
    cannot be had."""
    missing = _sdk_missing()
    if missing is not None:
        pytest.skip(missing)
    return SDK_PYTHON


needs_sdk = pytest.mark.usefixtures("sdk")

_PRELUDE = '''\
import json
from kubeflow.trainer import CustomTrainer, TrainerClient

client = TrainerClient()


def emit(value):
    print("SDK-RESULT " + json.dumps(value, default=str), flush=True)
'''
_RESULT = "SDK-RESULT "


_STORY_LOG_LINES = 40


def _conditions(obj: dict[str, Any]) -> str:
    return "; ".join(f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: "
                     f"{c.get('message', '')}" for c in obj.get("status", {}).get("conditions", []))


def cluster_story(cluster: LocalCluster) -> str:
    """What the cluster holds when an SDK program failed: every TrainJob's, JobSet's and
    Job's conditions, each pod's phase, exit codes and last log lines (this and the previous
    container), and the Warning events, so that a failure in CI says why the job failed."""
    api = k8s_config.new_client_from_config(config_file=str(cluster.server.kubeconfig))
    custom, core, batch = (k8s_client.CustomObjectsApi(api), k8s_client.CoreV1Api(api),
                           k8s_client.BatchV1Api(api))
    lines = ["what the cluster holds:"]
    try:
        for group, version, plural in (("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
                                       ("jobset.x-k8s.io", "v1alpha2", "jobsets")):
            for item in custom.list_cluster_custom_object(group, version, plural)["items"]:
                lines.append(f"{plural} {item['metadata']['name']}: {_conditions(item)}")
        for job in api.sanitize_for_serialization(batch.list_job_for_all_namespaces())["items"]:
            lines.append(f"job {job['metadata']['name']}: {job.get('status', {})}")
        for pod in core.list_pod_for_all_namespaces().items:
            meta, status = pod.metadata, pod.status
            lines.append(f"pod {meta.name}: {status.phase} "
                         f"{api.sanitize_for_serialization(status.container_statuses)}")
            for previous in (False, True):
                try:
                    log = core.read_namespaced_pod_log(meta.name, meta.namespace,
                                                       previous=previous,
                                                       tail_lines=_STORY_LOG_LINES)
                except k8s_client.ApiException as error:
                    log = f"(no log: {error.status} {error.reason})"
                lines.append(f"  {'previous ' if previous else ''}log:\n{log}")
        for event in core.list_event_for_all_namespaces(field_selector="type=Warning").items:
            lines.append(f"Warning {event.reason} {event.involved_object.kind}/"
                         f"{event.involved_object.name}: {event.message}")
    except (k8s_client.ApiException, OSError) as error:
        lines.append(f"(could not read the rest: {error})")
    finally:
        api.close()
    return "\n".join(lines)


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
    assert done.returncode == 0, (f"the SDK program failed:\n{done.stdout}\n{done.stderr}\n"
                                  f"{cluster_story(cluster)}")
    emitted = [line[len(_RESULT):] for line in done.stdout.splitlines()
               if line.startswith(_RESULT)]
    assert emitted, f"the SDK program emitted nothing:\n{done.stdout}\n{done.stderr}"
    return json.loads(emitted[-1])
