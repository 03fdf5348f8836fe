"""A crash-looping job diagnosed as a user would: `kubectl describe` says which replica ended,
how and how often; `kubectl logs --previous` shows the attempt that failed.

The job is Kubeflow's `pytorch-simple` example as its users apply it (training-operator
v1.9, examples/pytorch/simple.yaml, in the test's namespace): the local node runs its
command, and `/opt/pytorch-mnist/mnist.py` does not exist here, so every attempt exits 2.
OnFailure replicas are restarted in place by the node, as the kubelet does.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

PYTORCH_SIMPLE = """
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata:
  name: pytorch-simple
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command:
                - "python3"
                - "/opt/pytorch-mnist/mnist.py"
                - "--epochs=1"
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command:
                - "python3"
                - "/opt/pytorch-mnist/mnist.py"
                - "--epochs=1"
"""

MISSING_SCRIPT = "can't open file '/opt/pytorch-mnist/mnist.py'"
WAIT_S = 60.0


def _wait_for_restarts(kubectl: Kubectl, name: str, at_least: int) -> dict[str, object]:
    deadline = time.monotonic() + WAIT_S
    while True:
        job = kubectl.get_json("pytorchjob", name)
        if int(job.get("status", {}).get("restarts") or 0) >= at_least:
            return job
        assert time.monotonic() < deadline, f"fewer than {at_least} restarts: {job.get('status')}"
        time.sleep(0.5)


def test_a_crash_looping_job_is_diagnosed_with_describe_and_logs_previous(
    cluster_kubectl: Kubectl,
) -> None:
    kubectl = cluster_kubectl
    kubectl.apply(PYTORCH_SIMPLE)
    _wait_for_restarts(kubectl, "pytorch-simple", 4)

    pods = json.loads(kubectl("get", "pods", "-o", "json").stdout)["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == [
        "pytorch-simple-master-0", "pytorch-simple-worker-0"]  # restarted, never recreated
    for pod in pods:
        assert pod["spec"]["restartPolicy"] == "OnFailure"
        [main] = pod["status"]["containerStatuses"]
        assert main["restartCount"] >= 1
        assert main["lastState"]["terminated"]["exitCode"] == 2

    described = kubectl("describe", "pytorchjob", "pytorch-simple").stdout
    events = described.split("Events:", 1)[1]
    # Each end, as Kubeflow's training operator says it: the pod's exit code, then the job
    # restarting because of the replica type.
    assert "ExitedWithCode" in events
    assert f"Pod: {kubectl.namespace}.pytorch-simple-master-0 exited with code 2" in events
    assert "PyTorchJobRestarting" in events
    assert "job pytorch-simple is restarting because Master replica(s) failed." in events
    assert "Restarting" in described.split("Events:", 1)[0]

    previous = kubectl("logs", "pytorch-simple-master-0", "--previous")
    assert MISSING_SCRIPT in previous.stdout + previous.stderr
    listed = kubectl("get", "pods", "pytorch-simple-master-0", "--no-headers").stdout.split()
    assert int(listed[3]) >= 1  # the RESTARTS column


def test_a_failure_names_the_replica_exit_code_and_termination_message(
    cluster_kubectl: Kubectl,
) -> None:
    """terminationMessagePolicy FallbackToLogsOnError: the end of the log is the message, and
    the Failed condition and its event carry its last line; each end says its exit code."""
    kubectl = cluster_kubectl
    kubectl.apply("""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: bad-shard
spec:
  runPolicy: {backoffLimit: 1}
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: python
              terminationMessagePolicy: FallbackToLogsOnError
              command:
                - python3
                - -c
                - "print('loading shard 3'); raise SystemExit('shard 3 is corrupt')"
""")
    kubectl("wait", "--for=condition=Failed", "pytorchjob/bad-shard", "--timeout=60s",
            timeout=90)
    job = kubectl.get_json("pytorchjob", "bad-shard")
    [failed] = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"].endswith(
        "Last failure: Worker-0 (exit code 1, Error: shard 3 is corrupt).")
    events = kubectl("describe", "pytorchjob", "bad-shard").stdout.split("Events:", 1)[1]
    assert f"Pod: {kubectl.namespace}.bad-shard-worker-0 exited with code 1" in events
    assert "job bad-shard is restarting because Worker replica(s) failed." in events
    assert "Last failure: Worker-0 (exit code 1, Error: shard 3 is corrupt)." in events
    conditions = {c["type"]: c["status"] for c in job["status"]["conditions"]}
    # Running and Restarting replace each other (as in Kubeflow): the job ends with the one
    # it had when it failed, and at an end that one is False.
    between = {t: conditions[t] for t in ("Running", "Restarting") if t in conditions}
    assert list(between.values()) == ["False"], job["status"]["conditions"]


def test_describe_of_a_finished_one_replica_job_fits_one_screen(
    cluster_kubectl: Kubectl,
) -> None:
    kubectl = cluster_kubectl
    kubectl.apply("""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: one
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              command: [python3, -c, "print('epoch 1: loss 0.31')"]
""")
    kubectl("wait", "--for=condition=Succeeded", "pytorchjob/one", "--timeout=60s", timeout=90)
    deadline = time.monotonic() + 60
    while kubectl("get", "pytorchjob", "one", "-o", "jsonpath={.metadata.finalizers}").stdout:
        assert time.monotonic() < deadline, "the ended job kept its finalizer"
        time.sleep(0.2)
    described = kubectl("describe", "pytorchjob", "one").stdout
    lines = described.splitlines()
    status = described.split("\nStatus:\n", 1)[1].split("\nEvents:", 1)[0].splitlines()
    # 60 lines: 11 of metadata (an ended job has no finalizer), 14 of the spec as written, 6
    # of events and 29 of status (its heading and 28 lines), 18 of which are the three
    # conditions (Created, Running False and Succeeded: Succeeded took SuccessCriteriaMet
    # over). Three status lines are the engine's own: phase, machine (one line, its
    # revision's name) and record; `state` is left out where it is the phase's word and
    # `restarts` at 0; lastTransitions is off by default and observedGeneration is not
    # written. As Kubeflow, the job's creation and start post no Event (its conditions say
    # them). Before: 90, then 79, then 64 lines.
    assert len(status) <= 28, described
    assert len(lines) <= 60, described
    assert "Observed Generation:" not in described
    assert "Finalizers:" not in described
    assert max(len(line) for line in status) <= 400, "the record is one short line"
    assert "Last Transitions:" not in described
    assert "SuccessCriteriaMet" not in described
    assert re.search(r"\n  Machine: +pytorchjob-[0-9a-f]+\n", described), described
    events = described.split("Events:", 1)[1]
    assert [reason for reason in ("PyTorchJobCreated", "PyTorchJobRunning", "Started",
                                  "ExitedWithCode", "PyTorchJobSucceeded")
            if reason in events] == ["Started", "ExitedWithCode", "PyTorchJobSucceeded"]
    assert "\n  State:" not in described and "\n  Restarts:" not in described
    assert events.count("PyTorchJobSucceeded") == 1  # an ending is said once


def test_describe_names_a_replica_that_was_still_running_when_its_job_failed(
    cluster_kubectl: Kubectl,
) -> None:
    """examples/pytorch-fails.yaml's shape: the worker exits 1 (ExitCode: permanent) while
    the master runs; cleanPodPolicy Running deletes the master's pod. Its replica machine
    stopped at Running, and describe says so in the words of the web view and the SDK."""
    kubectl = cluster_kubectl
    kubectl.apply("""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: fails
spec:
  runPolicy: {cleanPodPolicy: Running}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: python
              command: [python3, -c, "import time; time.sleep(60)"]
    Worker:
      replicas: 1
      restartPolicy: ExitCode
      template:
        spec:
          containers:
            - name: pytorch
              image: python
              command: [python3, -c, "import time; time.sleep(1); raise SystemExit(1)"]
""")
    kubectl("wait", "--for=condition=Failed", "pytorchjob/fails", "--timeout=60s", timeout=90)
    described = kubectl("describe", "pytorchjob", "fails").stdout
    statuses = described.split("Replica Statuses:", 1)[1].split("\n  Start Time:", 1)[0]
    said = r"        0: +Running, stopped at job end \(pod deleted\)\n"
    assert re.search(r"\n    Master:\n(      .*\n)*      Unfinished:\n" + said, statuses), statuses
    assert "Unfinished" not in statuses.split("\n    Worker:", 1)[1], statuses
