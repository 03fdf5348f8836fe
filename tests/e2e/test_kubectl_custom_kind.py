"""A job kind nobody shipped, added to a running `jobmachine up` with kubectl alone.

examples/custom-kind/ is a user's whole path: make the CRD from the short
description (`jobmachine crd`), apply it and the StateMachine, run a job; the
engine that was already running runs the new kind, nothing restarted. Bad
input is refused where a user looks: kubectl apply's error, the machine's
conditions, its Events in `kubectl describe`.
"""

from __future__ import annotations

import re
import subprocess
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app.up import LocalCluster
from tests.e2e.conftest import Kubectl
from tests.polling import eventually

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KIND_DIR = ROOT / "examples" / "custom-kind"
CRD = KIND_DIR / "shardedjob-crd.yaml"
MACHINE = KIND_DIR / "shardedjob-machine.yaml"
JOB = KIND_DIR / "shardedjob.yaml"
JOBMACHINE = Path(sysconfig.get_path("scripts")) / "jobmachine"

WAIT = ("--timeout=60s",)
"""kubectl's own limit on waits and deletions; the subprocess gets 90s."""

BAD_CEL_MACHINE = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata:
  name: badceljob
spec:
  extends: kubeflow
  governs:
    apiVersion: batch.example.com/v1
    kind: BadCelJob
    replicaSpecs: spec.shards
    replicaTypes: [Shard]
  pod:
    container: main
    env:
      SHARD_INDEX: "replica.index +"
"""

NO_CRD_MACHINE = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata:
  name: nocrdjob
spec:
  extends: kubeflow
  governs:
    apiVersion: batch.example.com/v1
    kind: NoCrdJob
    replicaSpecs: spec.shards
    replicaTypes: [Shard]
  pod:
    container: main
"""

MACHINES = ("shardedjob", "badceljob", "nocrdjob")
"""Every StateMachine these tests may create."""


def _jobmachine_crd(description: str, *, cwd: Path) -> str:
    """What the installed `jobmachine crd DESCRIPTION` prints, run in `cwd`."""
    result = subprocess.run(
        [str(JOBMACHINE), "crd", description],
        cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_jobmachine_crd_prints_the_checked_in_crd() -> None:
    printed = _jobmachine_crd("examples/custom-kind/shardedjob-kind.yaml", cwd=ROOT)

    assert printed == CRD.read_text(), (
        "examples/custom-kind/shardedjob-crd.yaml is stale; from the repository root run "
        "`jobmachine crd examples/custom-kind/shardedjob-kind.yaml > "
        "examples/custom-kind/shardedjob-crd.yaml`")


def test_jobmachine_crd_run_as_the_description_says_prints_the_same_crd() -> None:
    beside = _jobmachine_crd("shardedjob-kind.yaml", cwd=KIND_DIR)

    assert beside == _jobmachine_crd("examples/custom-kind/shardedjob-kind.yaml", cwd=ROOT)


@pytest.fixture
def removes_the_kind(cluster_kubectl: Kubectl) -> Iterator[None]:
    """Whatever a test leaves of the kind is deleted afterwards: jobs, machines, the CRD."""
    yield
    # Fails harmlessly when the test removed the kind itself.
    cluster_kubectl.run("delete", "shardedjobs", "--all", *WAIT, timeout=90)
    cluster_kubectl("delete", "statemachines", *MACHINES, "--ignore-not-found", *WAIT, timeout=90)
    cluster_kubectl("delete", "-f", str(CRD), "--ignore-not-found", *WAIT, timeout=90)


def _rows(table: str) -> list[dict[str, str]]:
    """kubectl's table output as one dict per row, by column header (an empty cell is "")."""
    header, *lines = table.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    spans = list(zip(starts, [*starts[1:], None], strict=True))
    return [{header[a:b].strip(): line[a:b].strip() for a, b in spans} for line in lines]


def _engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "jobmachine-engine"]


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [c for c in obj["status"]["conditions"] if c["type"] == kind]
    assert len(found) == 1, obj["status"]
    condition: dict[str, Any] = found[0]
    return condition


def test_a_new_kind_runs_on_the_engine_already_running(
    cluster: LocalCluster, cluster_kubectl: Kubectl, removes_the_kind: None
) -> None:
    kubectl = cluster_kubectl
    engine = cluster.engine
    engine_threads = _engine_threads()
    pods_cache = engine.caches.pods
    assert len(engine_threads) == 1
    assert "ShardedJob" not in engine.caches.jobs

    unknown = kubectl.run("get", "shardedjobs")
    assert unknown.returncode == 1
    assert 'the server doesn\'t have a resource type "shardedjobs"' in unknown.stderr

    kubectl("apply", "-f", str(CRD))
    kubectl("apply", "-f", str(MACHINE))
    kubectl("wait", "--for=condition=Governing", "statemachine/shardedjob", *WAIT, timeout=90)

    [machine] = _rows(kubectl("get", "statemachine", "shardedjob").stdout)
    assert (machine["NAME"], machine["GOVERNS"], machine["ACCEPTED"]) == (
        "shardedjob", "ShardedJob", "True")
    revision = machine["REVISION"]
    assert re.fullmatch(r"shardedjob-[0-9a-f]{10}", revision)
    explained = kubectl("explain", "shardedjob.spec.input").stdout
    assert "FIELD: input <string>" in explained
    assert "Where the shards read their input (passed to them as INPUT)." in explained

    kubectl("apply", "-f", str(JOB))
    kubectl("wait", "--for=condition=Succeeded", "shardedjob/word-count", *WAIT, timeout=90)

    for listed in ("shardedjobs", "shj"):
        rows = _rows(kubectl("get", listed).stdout)
        assert [(r["NAME"], r["STATE"], r["RESTARTS"]) for r in rows] == [
            ("word-count", "Succeeded", "")]  # no restart: the count is left out
    for shard in range(3):
        logs = kubectl("logs", f"word-count-shard-{shard}").stdout
        assert logs == f"shard {shard} of 3 reads s3://example/books/\n"
    job = yaml.safe_load(kubectl("get", "shardedjob", "word-count", "-o", "yaml").stdout)
    assert job["metadata"]["namespace"] == kubectl.namespace
    assert job["status"]["machine"] == revision  # the revision's name, `shardedjob-<hash>`

    # The same engine, never restarted, now watches and runs one kind more.
    assert cluster.engine is engine
    assert _engine_threads() == engine_threads
    assert engine_threads[0].is_alive()
    assert engine.caches.pods is pods_cache
    assert engine.caches.jobs["ShardedJob"].get(kubectl.namespace, "word-count") is not None
    governed = engine.machines.governed("ShardedJob")
    assert governed is not None
    assert (governed.machine, governed.revision) == ("shardedjob", revision)

    # And stops watching it once the kind is removed, still without a restart.
    kubectl("delete", "-f", str(JOB), *WAIT, timeout=90)
    kubectl("delete", "-f", str(MACHINE), "-f", str(CRD), *WAIT, timeout=90)
    eventually(lambda: "ShardedJob" not in engine.caches.jobs, timeout=30)
    assert kubectl.run("get", "shardedjobs").returncode == 1
    assert _engine_threads() == engine_threads


def test_a_shardedjob_without_input_is_refused_by_kubectl_apply(
    cluster_kubectl: Kubectl, removes_the_kind: None
) -> None:
    kubectl = cluster_kubectl
    kubectl("apply", "-f", str(CRD))
    kubectl("wait", "--for=condition=Established", "crd/shardedjobs.batch.example.com", *WAIT,
            timeout=90)
    document = yaml.safe_load(JOB.read_text())
    document["metadata"]["name"] = "no-input"
    del document["spec"]["input"]

    refused = kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(document))

    assert refused.returncode == 1
    assert 'The ShardedJob "no-input" is invalid: spec.input: Required value' in refused.stderr
    missing = kubectl.run("get", "shardedjob", "no-input")
    assert 'shardedjobs.batch.example.com "no-input" not found' in missing.stderr


def test_a_machine_with_a_cel_error_is_not_accepted_and_says_why(
    cluster_kubectl: Kubectl, removes_the_kind: None
) -> None:
    kubectl = cluster_kubectl

    kubectl.apply(BAD_CEL_MACHINE)

    kubectl("wait", "--for=condition=Accepted=false", "statemachine/badceljob", *WAIT,
            timeout=90)
    accepted = _condition(kubectl.get_json("statemachine", "badceljob"), "Accepted")
    assert accepted["reason"] == "Invalid"
    assert accepted["message"].startswith(
        "generation 1 is invalid: spec.pod.env.SHARD_INDEX: CEL syntax error")
    [row] = _rows(kubectl("get", "statemachine", "badceljob").stdout)
    assert (row["ACCEPTED"], row["REVISION"]) == ("False", "")
    warning = re.compile(r"^\s*Warning\s+Invalid\s+\S+\s+jobmachine\s+generation 1 is invalid: "
                         r"spec\.pod\.env\.SHARD_INDEX: CEL syntax error", re.MULTILINE)
    eventually(lambda: warning.search(kubectl("describe", "statemachine", "badceljob").stdout),
               timeout=30, interval=0.5)


def test_a_machine_for_a_kind_without_its_crd_is_not_governing(
    cluster_kubectl: Kubectl, removes_the_kind: None
) -> None:
    kubectl = cluster_kubectl

    kubectl.apply(NO_CRD_MACHINE)

    kubectl("wait", "--for=condition=Governing=false", "statemachine/nocrdjob", *WAIT,
            timeout=90)
    governing = kubectl(
        "get", "statemachine", "nocrdjob", "-o",
        'jsonpath={.status.conditions[?(@.type=="Governing")].status}/'
        '{.status.conditions[?(@.type=="Governing")].reason}',
    ).stdout
    assert governing == "False/CRDNotInstalled"
    accepted = _condition(kubectl.get_json("statemachine", "nocrdjob"), "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("True", "Valid")
