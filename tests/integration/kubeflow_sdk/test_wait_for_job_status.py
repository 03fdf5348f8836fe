"""The Kubeflow SDK's `wait_for_job_status` against `jobmachine up`.

The SDK polls `get_job`: a TrainJob is `Created` until its pods are all running or done,
then `Running`, then `Complete` or `Failed` by its conditions (`Complete`, `Failed` as Trainer
writes them, which the TrainJob machine copies from its JobSet). Waiting for `Complete` on a
TrainJob that fails raises `TrainJob <name> is Failed`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.app.up import LocalCluster
from tests.integration.kubeflow_sdk.support import needs_sdk, run_sdk
from tests.kinds import KINDS, NAMED

pytestmark = [needs_sdk, pytest.mark.slow]

TRAINJOBS = KINDS["TrainJob"]
CLUSTER_RUNTIMES, RUNTIMES = NAMED["ClusterTrainingRuntime"], NAMED["TrainingRuntime"]

SEEN = '''
seen = []


def note(job):
    if not seen or seen[-1] != job.status:
        seen.append(job.status)


def hello():
    print("hello")
'''


@pytest.fixture
def failing_runtime(cluster: LocalCluster) -> Iterator[str]:
    """torch-distributed as a TrainingRuntime whose node exits 1 (the local node in simulate
    mode reads the exit codes from the pod's annotations) and whose Job never retries."""
    runtime = copy.deepcopy(cluster.client.get(CLUSTER_RUNTIMES, "torch-distributed"))
    runtime["apiVersion"], runtime["kind"] = RUNTIMES.api_version, "TrainingRuntime"
    runtime["metadata"] = {"name": "torch-exits-1",
                           "labels": {"trainer.kubeflow.org/framework": "torch"}}
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]
    job["spec"]["backoffLimit"] = 0
    job["spec"]["template"]["metadata"] = {
        "annotations": {"sim.jobmachine.dev/exit-codes": "1"}}
    cluster.client.create(RUNTIMES, runtime, "default")
    yield "torch-exits-1"
    cluster.client.delete(RUNTIMES, "torch-exits-1", "default")


def test_waiting_for_complete_sees_created_or_running_then_complete(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    waited = run_sdk(cluster, SEEN + '''
name = client.train(trainer=CustomTrainer(func=hello, num_nodes=2))
job = client.wait_for_job_status(name, polling_interval=1, timeout=240, callbacks=[note])
emit({"name": name, "status": job.status, "seen": seen,
      "steps": sorted([s.name, s.status] for s in job.steps)})
''', tmp_path)
    assert waited["status"] == "Complete"
    assert waited["seen"][-1] == "Complete"
    assert set(waited["seen"]) <= {"Created", "Running", "Complete"}, waited
    assert waited["steps"] == [["node-0", "Succeeded"], ["node-1", "Succeeded"]]
    trainjob = cluster.client.get(TRAINJOBS, waited["name"], "default")
    assert [(c["type"], c["status"], c["reason"]) for c in trainjob["status"]["conditions"]] == [
        ("Complete", "True", "AllJobsCompleted")]


def test_waiting_for_complete_on_a_failing_trainjob_raises_and_failed_can_be_awaited(
    cluster: LocalCluster, tmp_path: Path, failing_runtime: str,
) -> None:
    waited = run_sdk(cluster, SEEN + f'''
name = client.train(runtime={failing_runtime!r}, trainer=CustomTrainer(func=hello))
try:
    client.wait_for_job_status(name, polling_interval=1, timeout=240)
    raised = None
except RuntimeError as error:
    raised = str(error)
job = client.wait_for_job_status(name, status={{"Failed"}}, polling_interval=1, timeout=60)
emit({{"name": name, "raised": raised, "status": job.status}})
''', tmp_path)
    name = waited["name"]
    assert waited["raised"] == f"TrainJob {name} is Failed"
    assert waited["status"] == "Failed"
    trainjob = cluster.client.get(TRAINJOBS, name, "default")
    failed = next(c for c in trainjob["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "FailedJobs")
    assert failed["message"] == (f"jobset failed due to one or more job failures (first "
                                 f"failed job: {name}-node-0)")
