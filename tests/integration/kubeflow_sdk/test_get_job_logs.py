"""The Kubeflow SDK's `get_job_logs` against `jobmachine up`.

The SDK finds the pod of a step (`node-0` by default) among the pods labelled with the
TrainJob's `jobset.sigs.k8s.io/jobset-name`, by `jobset.sigs.k8s.io/replicatedjob-name` and
`batch.kubernetes.io/job-completion-index`, and reads the log of its container `node`, whole
or followed. In simulate mode each attempt logs one line saying how it ended.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app.up import LocalCluster
from tests.integration.kubeflow_sdk.support import needs_sdk, run_sdk

pytestmark = [needs_sdk, pytest.mark.slow]

SIMULATED = "simulated attempt 1: exit code 0 after 0.2s"


def test_each_nodes_log_is_read_whole_or_followed(cluster: LocalCluster, tmp_path: Path) -> None:
    logs = run_sdk(cluster, '''
def hello():
    print("hello")


name = client.train(trainer=CustomTrainer(func=hello, num_nodes=2))
job = client.wait_for_job_status(name, polling_interval=1, timeout=240)
emit({"default": list(client.get_job_logs(name)),
      "node-1": list(client.get_job_logs(name, step="node-1")),
      "followed": list(client.get_job_logs(name, step="node-1", follow=True)),
      "no such step": list(client.get_job_logs(name, step="node-2")),
      "pods": {s.name: s.pod_name for s in job.steps}})
''', tmp_path)
    assert logs["default"] == [SIMULATED]
    assert logs["node-1"] == [SIMULATED]
    assert logs["followed"] == [SIMULATED]
    assert logs["no such step"] == []
    assert sorted(logs["pods"]) == ["node-0", "node-1"]
    assert len(set(logs["pods"].values())) == 2
