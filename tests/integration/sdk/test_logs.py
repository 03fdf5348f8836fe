"""`get_job_logs`: each replica's output, read at once or followed while the pods run.

MachineJob pods know their replica from the environment its machine gives them
(REPLICA_TYPE, REPLICA_INDEX), so each replica prints a line that names itself.
"""

from __future__ import annotations

import sys
from contextlib import closing
from typing import Any

import pytest

from engine.sdk import JobClient, JobClientError

pytestmark = pytest.mark.slow

SAY = "import os; print(os.environ['REPLICA_TYPE'], os.environ['REPLICA_INDEX'], 'says hello')"
COUNT = ("import os, time\n"
         "for i in range(3):\n"
         "    print(os.environ['REPLICA_TYPE'], os.environ['REPLICA_INDEX'], 'counts', i,"
         " flush=True)\n"
         "    time.sleep(0.2)\n")


def speakers(name: str, code: str, *, helpers: int = 2) -> dict[str, Any]:
    """A MachineJob of one Lead and `helpers` Helpers, each running `code`."""
    def replicas(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never", "template": {"spec": {
            "containers": [{"name": "main", "image": "python:3.12",
                            "command": [sys.executable, "-c", code]}]}}}

    return {"apiVersion": "jobmachine.dev/v1alpha1", "kind": "MachineJob",
            "metadata": {"name": name},
            "spec": {"replicaSpecs": {"Lead": replicas(1), "Helper": replicas(helpers)}}}


def test_each_replicas_log_is_read_by_its_name(jobs: JobClient) -> None:
    jobs.create_job(speakers("talk", SAY))
    jobs.wait_for_job_conditions("talk", timeout=60)

    assert jobs.get_job_logs("talk") == {
        "Helper-0": "Helper 0 says hello\n",
        "Helper-1": "Helper 1 says hello\n",
        "Lead-0": "Lead 0 says hello\n",
    }
    assert list(jobs.get_job_logs("talk", replica_type="Helper")) == ["Helper-0", "Helper-1"]
    assert jobs.get_job_logs("talk", replica_type="Helper", replica_index=1,
                             container="main") == {"Helper-1": "Helper 1 says hello\n"}


def test_a_container_the_pods_do_not_have_is_the_servers_refusal(jobs: JobClient) -> None:
    jobs.create_job(speakers("named", SAY, helpers=0))
    jobs.wait_for_job_conditions("named", timeout=60)

    with pytest.raises(JobClientError, match="container sidecar is not valid") as raised:
        jobs.get_job_logs("named", container="sidecar")
    assert raised.value.status == 400


def test_following_gives_every_line_as_written_and_ends_with_the_pods(jobs: JobClient) -> None:
    jobs.create_job(speakers("counting", COUNT))

    lines = list(jobs.get_job_logs("counting", follow=True))

    for replica in ("Lead-0", "Helper-0", "Helper-1"):
        kind, index = replica.split("-")
        assert [line for who, line in lines if who == replica] == [
            f"{kind} {index} counts {i}" for i in range(3)]
    assert len(lines) == 9


def test_following_one_replica_can_be_stopped_before_its_pod_ends(jobs: JobClient) -> None:
    endless = "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.1)\n"
    jobs.create_job(speakers("endless", endless, helpers=1))

    with closing(jobs.get_job_logs("endless", replica_type="Helper", follow=True)) as lines:
        first = next(lines)

    assert first == ("Helper-0", "tick")
    jobs.delete_job("endless")
