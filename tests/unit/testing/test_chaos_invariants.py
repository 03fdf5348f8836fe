"""The chaos run's checks catch what they are for: each rule, fed facts that break it."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.testing.chaos.disruptions import Every
from engine.testing.chaos.invariants import (
    check_children,
    check_job,
    check_pods,
    check_processes,
    event_shortfalls,
)
from engine.testing.chaos.observer import ChildLife, JobLife, is_ending
from engine.testing.chaos.workload import KINDS, REPLICA_SCRIPT, SCENARIOS, JobPlan, plan_job

PYTORCH = KINDS[0]
SCENARIO = {s.name: s for s in SCENARIOS}


def _plan(scenario: str = "exit-code-restart") -> JobPlan:
    plan = plan_job("chaos-0", "job-1", PYTORCH, SCENARIO[scenario], rng=random.Random(1),
                    chaos_dir="/tmp/x")
    plan.uid = "job-uid"
    return plan


def _life(phases: list[str], restarts: list[int], *, record: str = "",
          deleted: int | None = None) -> JobLife:
    status: dict[str, Any] = {"restarts": restarts[-1] if restarts else 0}
    if record:
        status["record"] = record
    return JobLife(uid="job-uid", kind="PyTorchJob", namespace="chaos-0", name="job-1",
                   created=1, deleted=deleted, restarts_seen=restarts, phases_seen=phases,
                   last={"status": status})


def _never_silent(*_: Any) -> bool:
    return False


def _rules(found: list[Any]) -> list[str]:
    return [violation.rule for violation in found]


def test_the_scripted_end_and_restarts_pass() -> None:
    assert check_job(_plan(), _life(["Created", "Running", "Succeeded"], [0, 1, 1]), {},
                     _never_silent) == []


def test_a_wrong_end_a_wrong_count_and_a_count_going_down_are_caught() -> None:
    assert _rules(check_job(_plan(), _life(["Running", "Failed"], [1]), {}, _never_silent)) \
        == ["terminal-state"]
    assert _rules(check_job(_plan(), _life(["Succeeded"], [0, 2]), {}, _never_silent)) \
        == ["restarts-exact"]
    assert _rules(check_job(_plan(), _life(["Succeeded"], [1, 0, 1]), {}, _never_silent)) \
        == ["restarts-exact"]


def test_a_disrupted_job_may_end_either_way_but_must_end() -> None:
    plan = _plan()
    plan.disrupted = True
    assert check_job(plan, _life(["Failed"], [3]), {}, _never_silent) == []
    assert _rules(check_job(plan, _life(["Running"], [3]), {}, _never_silent)) \
        == ["terminal-state"]


def test_a_deleted_job_must_be_gone_and_a_ttl_job_must_have_finished_first() -> None:
    assert check_job(_plan("deleted-mid-run"), _life(["Running"], [0], deleted=9), {},
                     _never_silent) == []
    assert _rules(check_job(_plan("deleted-mid-run"), _life(["Running"], [0]), {},
                            _never_silent)) == ["terminal-state"]
    assert _rules(check_job(_plan("ttl-after-finished"), _life(["Running"], [0], deleted=9),
                            {}, _never_silent)) == ["terminal-state"]


RECORD = ('{"v":1,"counts":{"job":[["","Created",1],["Created","Running","PyTorchJobRunning",1]],'
          '"replica":[["Running","Restarting","PodFailed",2],["Running","Running",3]]}}')


def test_every_counted_state_change_needs_its_event_unless_the_engine_was_killed() -> None:
    life = _life(["Running"], [0], record=RECORD)
    # The job's creation and self loops post nothing; 2 PodFailed changes need 2 events.
    assert event_shortfalls(life, {"PyTorchJobRunning": 1, "PodFailed": 1}, _never_silent) \
        == {"PodFailed": (2, 1)}
    plan = _plan()
    plan.expected_end = "Succeeded"
    life.phases_seen = ["Succeeded"]
    life.restarts_seen = [1]
    assert _rules(check_job(plan, life, {"PyTorchJobRunning": 1}, _never_silent)) \
        == ["event-per-state-change"]
    assert check_job(plan, life, {"PyTorchJobRunning": 1}, lambda *a: a[3] == "Restarting") \
        == []
    plan.engine_killed = True
    assert check_job(plan, life, {}, _never_silent) == []


def _pod(uid: str, created: int, deleted: int | None, replica: str = "Worker-0",
         owner: str | None = "job-uid") -> ChildLife:
    return ChildLife(uid=uid, namespace="chaos-0", name=f"job-1-{replica.lower()}",
                     owner_uid=owner, job_uid="job-uid", replica=replica, created=created,
                     deleted=deleted)


def test_two_pods_of_one_index_at_once_and_a_pod_after_the_end_are_caught() -> None:
    job = _life(["Succeeded"], [0])
    job.ending = 50
    jobs = {"job-uid": job}
    assert check_pods([_pod("a", 10, 20), _pod("b", 21, None)], jobs) == []
    assert _rules(check_pods([_pod("a", 10, 30), _pod("b", 21, None)], jobs)) \
        == ["one-pod-per-index"]
    assert _rules(check_pods([_pod("a", 10, None), _pod("b", 21, None, "Worker-1")], jobs)) \
        == []
    assert _rules(check_pods([_pod("a", 60, None)], jobs)) == ["no-pod-after-end"]


def test_unowned_children_and_leftovers_of_deleted_jobs_are_caught() -> None:
    job = _life(["Succeeded"], [0], deleted=99)
    jobs = {"job-uid": job}
    assert check_children([_pod("a", 10, 100)], jobs, "pod") == []
    assert _rules(check_children([_pod("a", 10, None)], jobs, "pod")) == ["cleaned-up"]
    assert _rules(check_children([_pod("a", 10, 100, owner=None)], jobs, "pod")) == ["owned"]


def test_ending_is_what_the_status_says() -> None:
    assert is_ending({"status": {"phase": "Failed"}})
    assert is_ending({"status": {"conditions": [{"type": "SuccessCriteriaMet",
                                                  "status": "True"}]}})
    assert not is_ending({"status": {"conditions": [{"type": "Succeeded",
                                                      "status": "False"}]}})
    assert not is_ending({"metadata": {"deletionTimestamp": "2026-11-26T00:00:00Z"}})


def test_the_replica_script_catches_a_second_live_process_for_one_index(
        tmp_path: Path) -> None:
    for sub in ("locks", "attempts", "violations"):
        (tmp_path / sub).mkdir()
    env = {**os.environ, "CHAOS_DIR": str(tmp_path), "CHAOS_JOB_UID": "u",
           "CHAOS_REPLICA_TYPE": "Worker", "CHAOS_REPLICA_INDEX": "0",
           "CHAOS_EXIT_CODES": "3,0", "CHAOS_RUN_SECONDS": "1.0"}
    command = [sys.executable, "-I", "-S", "-c", REPLICA_SCRIPT]
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (tmp_path / "attempts" / "u-Worker-0").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    second = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, timeout=30,
                            check=False)
    assert first.wait(30) == 3  # the first attempt's scripted code
    assert second.returncode == 0  # the second attempt's, once the lock was free
    found = check_processes(tmp_path / "violations")
    assert _rules(found) == ["one-process-per-index"]
    assert found[0].subject == "u-Worker-0"


def test_a_pod_whose_deletion_fell_in_a_watch_gap_is_not_held_against_the_next() -> None:
    job = _life(["Succeeded"], [0])
    gone_unseen = _pod("a", 10, 30)
    gone_unseen.end_unseen = True
    assert check_pods([gone_unseen, _pod("b", 21, None)], {"job-uid": job}) == []


def test_a_disruption_stopped_early_still_happens_once() -> None:
    """A workload that ends before a disruption's first turn must not end the run without it
    (the CI run asserts that every disruption happened)."""
    calls: list[int] = []
    every = Every("node-loss", (0.2, 0.3), lambda: calls.append(1), random.Random(1))
    every.start()
    every.stop()
    assert calls == [1]
