"""The Kubeflow SDK's `delete_job` against `jobmachine up`: the TrainJob goes, and with it,
through owner references, its JobSet, the JobSet's Job and Service and their pods; the SDK
no longer lists it, and `get_job` says it cannot get it (404)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app.up import LocalCluster
from engine.kube.resources import PODS, SERVICES, Resource
from tests.integration.app.support import wait_until
from tests.integration.kubeflow_sdk.support import needs_sdk, run_sdk
from tests.kinds import KINDS

pytestmark = [needs_sdk, pytest.mark.slow]

JOBS = Resource("batch", "v1", "jobs", "Job")


def _left(cluster: LocalCluster, name: str) -> dict[str, list[str]]:
    """What of the TrainJob `name` is still stored, kind by kind."""
    client = cluster.client
    selector = f"jobset.sigs.k8s.io/jobset-name={name}"
    found = {
        "TrainJob": [o["metadata"]["name"] for o in client.list(KINDS["TrainJob"], "default")[0]
                     if o["metadata"]["name"] == name],
        "JobSet": [o["metadata"]["name"] for o in client.list(KINDS["JobSet"], "default")[0]
                   if o["metadata"]["name"] == name],
        "Service": [o["metadata"]["name"] for o in client.list(SERVICES, "default")[0]
                    if o["metadata"]["name"] == name],
        "Job": [o["metadata"]["name"] for o in client.list(
            JOBS, "default", label_selector=selector)[0]],
        "Pod": [o["metadata"]["name"] for o in client.list(
            PODS, "default", label_selector=selector)[0]],
    }
    return {kind: names for kind, names in found.items() if names}


def test_delete_job_deletes_the_trainjob_and_everything_it_made(
    cluster: LocalCluster, tmp_path: Path,
) -> None:
    made = run_sdk(cluster, '''
def hello():
    print("hello")


name = client.train(trainer=CustomTrainer(func=hello, num_nodes=2))
client.wait_for_job_status(name, polling_interval=1, timeout=240)
emit({"name": name, "listed": [job.name for job in client.list_jobs()]})
''', tmp_path)
    name = made["name"]
    assert name in made["listed"]
    assert set(_left(cluster, name)) == {"TrainJob", "JobSet", "Service", "Job", "Pod"}

    after = run_sdk(cluster, f'''
client.delete_job({name!r})
try:
    client.get_job({name!r})
    error, status = None, None
except RuntimeError as raised:
    error, status = str(raised), getattr(raised.__cause__, "status", None)
emit({{"error": error, "status": status}})
''', tmp_path)
    assert after == {"error": f"Failed to get TrainJob: default/{name}", "status": 404}
    wait_until(lambda: _left(cluster, name), lambda left: not left,
               what=f"everything of TrainJob {name} to be deleted")
    listed = run_sdk(cluster, "emit([job.name for job in client.list_jobs()])", tmp_path)
    assert name not in listed
