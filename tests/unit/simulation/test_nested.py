"""Jobs whose machine makes objects other machines govern, played with those machines: a
JobSet's Jobs by batch-job, a TrainJob's JobSet by jobset and its Jobs by batch-job, each
child's status written by its own machine and read by its parent, as on `jobmachine up`."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.simulation.loading import ScenarioError
from engine.simulation.picture import tree_picture
from engine.simulation.result import Simulation
from engine.simulation.tree import written_status
from tests.kinds import REPO
from tests.unit.simulation.support import lines, load, run

JOBSETS = REPO / "examples" / "jobset"
TRAINER = REPO / "examples" / "trainer"

PAIR = """\
job:
  apiVersion: jobset.x-k8s.io/v1alpha2
  kind: JobSet
  metadata: {name: pair}
  spec:
    {extra}
    replicatedJobs:
      - name: workers
        replicas: 2
        template:
          spec:
            parallelism: 1
            completions: 1
            backoffLimit: 0
            template: {spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}}
      - name: driver
        template:
          spec:
            backoffLimit: 0
            template: {spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}}
"""


def pair(extra: str = "{}") -> str:
    """A JobSet of two worker Jobs and a driver Job, one pod each (as the integration test's
    `pair`); `extra` is more of its spec (a YAML mapping entry, or {} for none)."""
    return PAIR.replace("{extra}", extra if extra != "{}" else "suspend: false")


def without_times(status: object) -> object:
    if isinstance(status, dict):
        return {k: without_times(v) for k, v in status.items()
                if k not in ("lastTransitionTime", "lastProbeTime", "startTime",
                             "completionTime")}
    if isinstance(status, list):
        return [without_times(v) for v in status]
    return status


def test_a_jobsets_jobs_run_by_the_batch_job_machine_complete_it_with_upstreams_status(
    tmp_path: Path,
) -> None:
    simulation = run(tmp_path, pair(), "pods: {succeedAfter: 30s}\n")

    # The status the JobSet API shows, as the integration test on `up` reads it.
    assert without_times(simulation.kind_status) == {
        "conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                        "message": "jobset completed successfully"}],
        "restarts": 0,
        "terminalState": "Completed",
        "replicatedJobsStatus": [
            {"name": "workers", "ready": 0, "succeeded": 2, "failed": 0, "active": 0,
             "suspended": 0},
            {"name": "driver", "ready": 0, "succeeded": 1, "failed": 0, "active": 0,
             "suspended": 0},
        ],
    }
    # Each Job ran under its own machine, and its status is the Job API's.
    job = simulation.worlds[(ReplicaId("workers", 1),)]
    assert job.definition.name == "batch-job"
    assert job.job["metadata"]["name"] == "pair-workers-1"
    assert job.job["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] == "1"
    native = written_status(job)
    assert (native["succeeded"], [c["type"] for c in native["conditions"]]) == (
        1, ["SuccessCriteriaMet", "Complete"])
    assert simulation.outcome.replicas == {
        "driver-0": "Succeeded", "workers-0": "Succeeded", "workers-1": "Succeeded",
        "driver-0/Job-0": "Succeeded", "workers-0/Job-0": "Succeeded",
        "workers-1/Job-0": "Succeeded"}
    assert (simulation.outcome.pods_created, simulation.end) == (3, 31)


def test_a_jobs_pods_ready_make_its_replica_started_as_upstreams_ready_count(
    tmp_path: Path,
) -> None:
    """A Job is ready once its ready and succeeded pods reach min(parallelism, completions):
    the simulated kubelet's Ready condition, counted by batch-job, read by jobset."""
    simulation = run(tmp_path, pair(), "pods: {startAfter: 5s}\n")
    assert "5s workers-1 state: Pending -> Started (JobReady)" in lines(simulation, "state")
    assert [s["ready"] for s in simulation.kind_status["replicatedJobsStatus"]] == [2, 1]


def test_a_failure_policy_restarts_the_set_deleting_its_jobs_in_the_foreground(
    tmp_path: Path,
) -> None:
    simulation = run(tmp_path, pair("failurePolicy: {maxRestarts: 1}"), """\
        timeline:
          - {at: 5s, replica: workers-1/Job-0, exits: 3}
          - {at: 20s, replica: workers-0/Job-0, exits: 0}
          - {at: 20s, replica: workers-1/Job-0, exits: 0}
          - {at: 20s, replica: driver-0/Job-0, exits: 0}
        """)
    text = lines(simulation)
    assert "5s workers-1/job state: Active -> Failing (BackoffLimitExceeded)" in text
    assert ("6s job state: Running -> Restarting (RestartJobSetFailurePolicyAction)"
            in text)
    # Every Job of the old attempt goes, its pods first; each is made again once gone.
    assert "6s workers-0/job note: being deleted in the foreground: its pods and children " \
           "go first" in text
    assert "7s workers-0/job kubelet: Job pair-workers-0 gone" in text
    assert "7s workers-0 object: Job pair-workers-0 created" in text
    native = simulation.kind_status
    assert (simulation.outcome.state, native["restarts"], native["restartsCountTowardsMax"]) \
        == ("Completed", 1, 1)
    new_job = simulation.worlds[(ReplicaId("workers", 0),)].job
    assert new_job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"


def test_the_shipped_examples_end_as_on_up(tmp_path: Path) -> None:
    """Upstream's paralleljobs: Completed after its pods' 100 s."""
    simulation = run(tmp_path, f"job: {JOBSETS / 'paralleljobs.yaml'}\n",
                     "pods: {succeedAfter: 100s}\n")
    assert (simulation.outcome.state, simulation.end, simulation.outcome.pods_created) == (
        "Completed", 101, 5)


def test_a_trainjob_on_a_shipped_runtime_runs_its_jobset_and_jobs_to_complete(
    tmp_path: Path,
) -> None:
    simulation = run(tmp_path, f"job: {TRAINER / '01-multi-node.yaml'}\n",
                     "pods: {succeedAfter: 5m}\n")
    status = without_times(simulation.kind_status)
    assert status == {
        "conditions": [{"type": "Complete", "status": "True", "reason": "AllJobsCompleted",
                        "message": "jobset completed successfully"}],
        "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0,
                        "suspended": 0}],
    }
    jobset = simulation.worlds[(ReplicaId("trainer", 0),)]
    assert (jobset.definition.name, jobset.job["metadata"]["name"]) == (
        "jobset", "multi-node-example")
    # The JobSet made from the runtime was stored with the CRD's defaults (groupName).
    assert jobset.job["spec"]["replicatedJobs"][0]["groupName"] == "default"
    job = simulation.worlds[(ReplicaId("trainer", 0), ReplicaId("node", 0))]
    (pod, *_) = job.pods.values()
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert (env["PET_NNODES"], env["PET_MASTER_ADDR"]) == (
        "3", "multi-node-example-node-0-0.multi-node-example")
    assert simulation.outcome.pods_created == 3


def test_a_trainjob_whose_runtime_is_missing_waits_saying_so(tmp_path: Path) -> None:
    simulation = run(tmp_path, f"job: {TRAINER / '01-multi-node.yaml'}\n", "objects: []\n",
                     until_s=60)
    assert simulation.outcome.state == "Running"
    assert simulation.outcome.pods_created == 0
    assert any("TrainJobResourcesCreationFailed" in line and "torch-distributed" in line
               for line in lines(simulation, "event"))


def test_a_pod_fact_must_name_a_pod_not_a_child_object(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as raised:
        load(tmp_path, pair(), "timeline:\n  - {at: 5s, replica: workers-0, exits: 1}\n")
    assert [str(d).split(": error: ")[1] for d in raised.value.diagnostics] == [
        "replica 'workers-0' is a Job object (spec.child), not a pod: name one of its pods "
        "by the replicas down to it (workers-0/Type-Index)"]


def test_a_fact_about_a_pod_of_a_child_not_made_yet_is_ignored(tmp_path: Path) -> None:
    simulation: Simulation = run(tmp_path, pair(), """\
        timeline:
          - {at: 0s, replica: workers-5/Job-0, exits: 1}
        """, until_s=10)
    assert any(line.startswith("0s workers-5/Job-0 note: ignored (") and line.endswith(
        "scenario.yaml:22:5): workers-5/Job-0 has no pod") for line in lines(simulation, "note"))


def test_the_path_picture_draws_each_child_with_its_path_linked_from_where_it_was_made(
    tmp_path: Path,
) -> None:
    """`simulate -o`: the picture of `graph --job`, the children's paths included."""
    simulation = run(tmp_path, pair(), "pods: {succeedAfter: 30s}\n")

    dot = tree_picture(simulation.worlds, fmt="dot").decode()

    assert 'label="Job default/pair-driver-0 (machine batch-job)"' in dot
    assert ('  "job/s/Running" -> "child2:job/start" [arrowhead="vee", color="#6b7280", '
            'fontcolor="#4b5563", fontsize="10", label="workers-1 makes it", '
            'lhead="cluster_child2:", style="dashed"]') in dot
    assert '"child2:job/s/Complete" [class="success", color="#d97706"' in dot


def test_in_order_start_up_waits_for_the_leaders_job_to_be_ready(tmp_path: Path) -> None:
    """startupPolicy InOrder: the workers' Jobs are made once the leader's Job is ready (its
    pod Ready, as the simulated kubelet reports a running container)."""
    simulation = run(tmp_path, pair("startupPolicy: {startupPolicyOrder: InOrder}"),
                     "pods: {startAfter: 5s, succeedAfter: 30s}\n")
    made = [line for line in lines(simulation, "object") if "created" in line]
    assert made == ["0s workers-0 object: Job pair-workers-0 created",
                    "0s workers-1 object: Job pair-workers-1 created",
                    "5s driver-0 object: Job pair-driver-0 created"]
    assert [line for line in lines(simulation, "condition") if "StartupPolicyCompleted" in line
            ] == ["10s job condition: StartupPolicyCompleted True (InOrderStartupPolicyCompleted)"]
    assert simulation.outcome.state == "Completed"
