"""The real kubectl against `jobmachine up` running batch/v1 Jobs (machines/batch-job.yaml):
`kubectl create job` (a protobuf body from kubectl 1.32), `kubectl wait`, `kubectl logs
job/NAME`, the columns of `kubectl get jobs`, and the Indexed example of examples/batch/."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Kubectl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "batch"


def test_kubectl_create_job_runs_to_complete(cluster_kubectl: Kubectl) -> None:
    created = cluster_kubectl("create", "job", "hello", "--image=busybox", "--",
                              "echo", "hello from a Job")
    assert created.stdout.strip() == "job.batch/hello created"
    cluster_kubectl("wait", "--for=condition=Complete", "job/hello", "--timeout=60s",
                    timeout=90)
    assert cluster_kubectl("logs", "job/hello").stdout.strip() == "hello from a Job"
    row = cluster_kubectl("get", "jobs", "hello", "--no-headers").stdout.split()
    assert row[:3] == ["hello", "Complete", "1/1"]
    events = cluster_kubectl("get", "events", "--field-selector", "involvedObject.name=hello",
                             "-o", "jsonpath={range .items[*]}{.reason}{' '}{end}").stdout
    assert {"SuccessfulCreate", "Completed"} <= set(events.split())


def test_the_indexed_example_lists_its_indexes(cluster_kubectl: Kubectl) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "indexed.yaml"))
    cluster_kubectl("wait", "--for=condition=Complete", "job/indexed", "--timeout=90s",
                    timeout=120)
    job = cluster_kubectl.get_json("job", "indexed")
    assert job["status"]["completedIndexes"] == "0-4"
    assert job["status"]["succeeded"] == 5
    logs = cluster_kubectl("logs", "indexed-job-3").stdout
    assert logs.strip() == "shard 3 of 5"


def test_a_failing_job_fails_with_backoff_limit_exceeded(cluster_kubectl: Kubectl) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "backoff-limit.yaml"))
    cluster_kubectl("wait", "--for=condition=Failed", "job/flaky", "--timeout=120s",
                    timeout=150)
    job = cluster_kubectl.get_json("job", "flaky")
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 3
    row = cluster_kubectl("get", "jobs", "flaky", "--no-headers").stdout.split()
    assert row[:3] == ["flaky", "Failed", "0/1"]
