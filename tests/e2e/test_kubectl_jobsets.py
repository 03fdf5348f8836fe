"""The real kubectl against `jobmachine up` (process mode) running upstream's JobSet examples
unchanged (examples/jobset/, from kubernetes-sigs/jobset): the success policy ends the set
when its workers finish and deletes the leader's Job, a FailJobSet rule fails it in
upstream's words, and `kubectl get jobsets` prints upstream's columns."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Kubectl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jobset"


def test_the_success_policy_example_completes_when_its_workers_finish(
    cluster_kubectl: Kubectl,
) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "success-policy.yaml"))
    cluster_kubectl("wait", "--for=condition=Completed", "jobset/success-policy",
                    "--timeout=120s", timeout=150)

    jobset = cluster_kubectl.get_json("jobset", "success-policy")
    assert jobset["status"]["terminalState"] == "Completed"
    workers = next(s for s in jobset["status"]["replicatedJobsStatus"] if s["name"] == "workers")
    assert workers["succeeded"] == 1
    header, row = cluster_kubectl("get", "jobsets", "success-policy").stdout.splitlines()
    assert header.split() == ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED",
                              "AGE"]
    # spec.suspend is unset: kubectl leaves the SUSPENDED cell empty (then AGE).
    assert row.split()[:4] == ["success-policy", "Completed", "0", "True"]
    assert len(row.split()) == 5
    # The leader (sleep 10000) is deleted once the set has completed.
    cluster_kubectl("wait", "--for=delete", "job/success-policy-leader-0", "--timeout=60s",
                    timeout=90)
    jobs = cluster_kubectl("get", "jobs", "-l", "jobset.sigs.k8s.io/jobset-name=success-policy",
                           "-o", "name").stdout.split()
    assert jobs == ["job.batch/success-policy-workers-0"]
    cluster_kubectl("delete", "jobset", "success-policy", "--timeout=60s", timeout=90)


def test_a_failjobset_rule_fails_the_example_naming_the_first_failed_job(
    cluster_kubectl: Kubectl,
) -> None:
    cluster_kubectl("apply", "-f", str(EXAMPLES / "failjobset-action.yaml"))
    cluster_kubectl("wait", "--for=condition=Failed", "jobset/failjobset-action-example",
                    "--timeout=120s", timeout=150)

    jobset = cluster_kubectl.get_json("jobset", "failjobset-action-example")
    failed = next(c for c in jobset["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == (
        "FailJobSetFailurePolicyAction",
        "applying FailJobSet failure policy action (first failed job: "
        "failjobset-action-example-leader-0)")
    assert jobset["status"]["restarts"] == 0
    events = cluster_kubectl("get", "events", "--field-selector",
                             "involvedObject.name=failjobset-action-example", "-o",
                             "jsonpath={range .items[*]}{.reason}{' '}{end}").stdout.split()
    assert "FailJobSetFailurePolicyAction" in events
    cluster_kubectl("delete", "jobset", "failjobset-action-example", "--timeout=60s",
                    timeout=90)
