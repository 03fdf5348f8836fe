"""A RestartJob failure rule against runPolicy.backoffLimit, as step tables through a
PyTorchJob (machines/kubeflow.yaml): a rule may restart the whole job while its restarts
are below the limit; the rule's next restart at the limit fails the job instead.
"""

from __future__ import annotations

from tests.scenarios.world import (
    MASTER,
    Step,
    World,
    deleted,
    exited,
    play,
    pytorch_job,
    running,
    worker,
)

ALL = ["Master-0", "Worker-0", "Worker-1"]
ALL_RUN = {MASTER: running(), worker(0): running(), worker(1): running()}
ALL_GONE = {MASTER: None, worker(0): None, worker(1): None}


def test_a_restart_job_rule_at_the_backoff_limit_fails_the_job() -> None:
    job = pytorch_job(policy="Never", run_policy={"backoffLimit": 1})
    job["spec"]["failureRules"] = [
        {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
    ]
    play(World(job), [
        Step("submitted", phase="Created", created=ALL),
        Step("everything runs", ALL_RUN, phase="Running"),
        Step("worker-1 exits 42: RestartJob, 0 restarts below the limit of 1",
             {worker(1): exited(42)}, phase="RestartingAll", job_actions=["cleanupPods"],
             restarts=1),
        Step("the pods are being deleted", {r: deleted() for r in ALL_RUN},
             phase="RestartingAll", restarts=1),
        Step("every pod is gone: a new attempt", ALL_GONE, phase="Created", created=ALL,
             restarts=1),
        Step("the new pods run", ALL_RUN, phase="Running", restarts=1),
        Step("worker-0 exits 42: RestartJob again, but 1 restart is the limit -> Failed",
             {worker(0): exited(42)}, phase="Failed", job_actions=["cleanupPods"],
             restarts=1, conditions={"Failed": "True"},
             events=["RestartJob", "BackoffLimitExceeded"]),
    ])
