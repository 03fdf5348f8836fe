"""The real kubectl against `jobmachine up` running batch/v1 Jobs (machines/batch-job.yaml):
`kubectl create job` (a protobuf body from kubectl 1.32), `kubectl wait`, `kubectl logs
job/NAME`, the columns of `kubectl get jobs`, and the Indexed example of examples/batch/."""

from __future__ import annotations

import time
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


def test_a_cronjob_makes_jobs_and_kubectl_makes_one_from_it(cluster_kubectl: Kubectl) -> None:
    """examples/batch/cronjob.yaml with its schedule shortened to `@every 3s`, then
    `kubectl create job --from=cronjob/...` as its comment says."""
    example = (EXAMPLES / "cronjob.yaml").read_text()
    fast = example.replace('schedule: "* * * * *"', 'schedule: "@every 3s"')
    assert fast != example
    cluster_kubectl("apply", "-f", "-", stdin=fast)
    made = cluster_kubectl("create", "job", "heartbeat-now", "--from=cronjob/heartbeat")
    assert made.stdout.strip() == "job.batch/heartbeat-now created"
    cluster_kubectl("wait", "--for=condition=Complete", "job/heartbeat-now", "--timeout=60s",
                    timeout=90)
    assert cluster_kubectl("logs", "job/heartbeat-now").stdout.strip().endswith("alive")
    now = cluster_kubectl.get_json("job", "heartbeat-now")
    assert now["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    deadline = time.monotonic() + 60
    while not any(name.removeprefix("heartbeat-").isdigit() for name in cluster_kubectl(
            "get", "jobs", "-l", "app=heartbeat", "-o",
            "jsonpath={.items[*].metadata.name}").stdout.split()):
        assert time.monotonic() < deadline, "the CronJob made no Job within 60 s"
        time.sleep(0.5)
    assert cluster_kubectl.get_json("cronjob", "heartbeat")["status"]["lastSuccessfulTime"]
    row = cluster_kubectl("get", "cronjobs", "heartbeat", "--no-headers").stdout.split()
    assert row[:4] == ["heartbeat", "@every", "3s", "<none>"]
