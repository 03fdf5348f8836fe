"""A slow-start pass's creates (pod.slowStart): batches of 1, 2, 4, ... whose requests are in
flight together, expectations raised for a batch before its requests and lowered for each
refused create, no batch after one with a refusal, at most 500 a pass; its surplus deletes
all at once, expected first. The Kubeflow machines slow-start too (issue 33's wide jobs),
where Kubeflow's operator creates one pod after another."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from engine.controller.reconcile.actions import ActionRun, PendingCreate, execute, flush_creates
from engine.controller.reconcile.batches import BURST_REPLICAS
from engine.controller.reconcile.children import JobKey, ReplicaId
from engine.controller.reconcile.claims import Claimed
from engine.controller.reporting.events import EventRecorder
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, Forbidden, NotFound
from engine.kube.resources import PODS, SERVICES
from engine.settings import EngineSettings
from tests.kinds import shipped_definitions

DEFINITIONS = shipped_definitions()
KEY = JobKey("Job", "team", "pool")
QUOTA = Forbidden(403, "Forbidden", "exceeded quota: tiny", {})


class Api:
    """Creates answered at once, or refused by their number (from 1, in the order sent);
    each create notes the creations the job's expectations awaited as it was sent, each
    delete whether the surplus pods' expectations awaited anything then."""

    def __init__(self, expectations: Expectations, *, refuse: frozenset[int] = frozenset(),
                 exists: frozenset[int] = frozenset(),
                 barrier: tuple[range, threading.Barrier] | None = None) -> None:
        self._expectations = expectations
        self._refuse, self._exists, self._barrier = refuse, exists, barrier
        self._lock = threading.Lock()
        self.sent: list[str] = []
        self.awaited: list[int] = []

    def create(self, resource: Any, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        with self._lock:
            self.sent.append(body["metadata"]["name"])
            number = len(self.sent)
            self.awaited.append(self._expectations.creations_unseen(KEY.id))
        if self._barrier is not None and number in self._barrier[0]:
            self._barrier[1].wait(timeout=5)  # every create of the batch is in flight at once
        if number in self._refuse:
            raise QUOTA
        if number in self._exists:
            raise AlreadyExists(409, "AlreadyExists", "exists", {})
        return {**body, "metadata": {**body["metadata"], "uid": f"uid-{number}"}}

    def delete(self, resource: Any, name: str, namespace: str, **_: Any) -> None:
        with self._lock:
            self.sent.append(name)
            number = len(self.sent)
            self.awaited.append(
                0 if self._expectations.satisfied(ExpectationKey(KEY.id, "Pod")) else 1)
        if self._barrier is not None and number in self._barrier[0]:
            self._barrier[1].wait(timeout=5)
        if number in self._refuse:
            raise QUOTA
        if number in self._exists:  # here: gone already
            raise NotFound(404, "NotFound", "gone", {})

    def get(self, resource: Any, name: str, namespace: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": "other-pass",
                             "ownerReferences": [{"controller": True, "uid": "job-uid"}]}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def record(self, obj: Any, *, reason: str, message: str, **_: Any) -> None:
        self.events.append((reason, message))


def pass_of(api: Api, expectations: Expectations, recorder: Recorder, *,
            pool: Executor | None = None) -> ActionRun:
    """A pass of the batch Job machine (slowStart) over a job that has no pod yet."""
    return ActionRun(
        client=cast(KubeClient, api), expectations=expectations,
        recorder=cast(EventRecorder, recorder), settings=EngineSettings(), key=KEY,
        job={"metadata": {"name": "pool", "namespace": "team", "uid": "job-uid"}},
        definition=DEFINITIONS["Job"], spec=cast(Any, None), decision=cast(Any, None),
        replica_objects=Claimed({}, resource=PODS), services=Claimed({}), facts={},
        now=datetime(2027, 1, 15, tzinfo=UTC), pool=pool)


def queue_pods(run: ActionRun, count: int) -> None:
    for index in range(count):
        run.queue(PendingCreate(ReplicaId("Job", index), PODS,
                                {"metadata": {"name": f"pool-{index}"}}, "SuccessfulCreate"))


def batches_of(awaited: list[int]) -> list[int]:
    """Batch sizes from the creations awaited as each create was sent: a batch raises its
    expectations before its first request, and no create is seen in these tests, so each
    batch's creates all see the sum of the batch sizes so far."""
    sizes, before = [], 0
    for total in dict.fromkeys(awaited):
        sizes.append(total - before)
        before = total
    return sizes


def test_a_pass_creates_in_batches_of_one_two_four_raised_before_each_batch() -> None:
    expectations, recorder = Expectations(), Recorder()
    api = Api(expectations)
    run = pass_of(api, expectations, recorder)
    queue_pods(run, 20)
    flush_creates(run)
    assert batches_of(api.awaited) == [1, 2, 4, 8, 5]
    assert api.sent == [f"pool-{i}" for i in range(20)]
    assert expectations.creations_unseen(KEY.id) == 20
    assert recorder.events == [("SuccessfulCreate", f"Created pod: pool-{i}") for i in range(20)]
    run.raise_batch_failure()  # nothing refused: the pass went through


def test_the_creates_of_a_batch_are_in_flight_together() -> None:
    expectations = Expectations()
    # Creates 4 to 7 are the third batch: each waits until all four were sent.
    api = Api(expectations, barrier=(range(4, 8), threading.Barrier(4)))
    with ThreadPoolExecutor(8) as pool:
        run = pass_of(api, expectations, Recorder(), pool=pool)
        queue_pods(run, 7)
        flush_creates(run)
    run.raise_batch_failure()
    assert len(api.sent) == 7
    assert run.created == {ReplicaId("Job", i) for i in range(7)}


@pytest.mark.parametrize(("refused", "tried"), [
    ({1}, 1),      # the first batch (1) fails: nothing more
    ({2}, 3),      # in the second batch (2, 3): it is finished, no third
    ({3}, 3),
    ({5, 6}, 7),   # two in the third batch (4..7)
    ({8}, 15),
])
def test_a_refused_create_finishes_its_batch_and_lowers_its_expectation(
        refused: set[int], tried: int) -> None:
    expectations, recorder = Expectations(), Recorder()
    api = Api(expectations, refuse=frozenset(refused))
    run = pass_of(api, expectations, recorder)
    queue_pods(run, 20)
    flush_creates(run)
    assert len(api.sent) == tried
    # The refused ones will never be seen: only the pods created are still awaited.
    assert expectations.creations_unseen(KEY.id) == tried - len(refused)
    assert len(recorder.events) == tried - len(refused)
    with pytest.raises(Forbidden, match="exceeded quota"):
        run.raise_batch_failure()


def test_an_existing_pod_is_not_awaited_and_does_not_stop_the_batches() -> None:
    expectations = Expectations()
    api = Api(expectations, exists=frozenset({2}))
    run = pass_of(api, expectations, Recorder())
    queue_pods(run, 7)
    flush_creates(run)
    assert len(api.sent) == 7
    assert expectations.creations_unseen(KEY.id) == 6
    assert ReplicaId("Job", 1) not in run.created
    run.raise_batch_failure()


def test_a_pass_creates_at_most_burst_replicas() -> None:
    expectations = Expectations()
    api = Api(expectations)
    run = pass_of(api, expectations, Recorder())
    queue_pods(run, BURST_REPLICAS + 100)
    flush_creates(run)
    assert len(api.sent) == BURST_REPLICAS
    assert expectations.creations_unseen(KEY.id) == BURST_REPLICAS


def test_a_batch_split_by_another_action_goes_on_where_it_stopped() -> None:
    expectations = Expectations()
    api = Api(expectations)
    run = pass_of(api, expectations, Recorder())
    queue_pods(run, 2)
    flush_creates(run)  # batch 1, and the first of batch 2
    run.queue(PendingCreate(ReplicaId("Job", 2), PODS, {"metadata": {"name": "pool-2"}}))
    run.queue(PendingCreate(ReplicaId("Job", 3), PODS, {"metadata": {"name": "pool-3"}}))
    flush_creates(run)  # the rest of batch 2, then batch 3 begins
    assert batches_of(api.awaited) == [1, 1, 1, 1]
    assert run.slow_start(PODS, "Job").count == 4
    assert run.slow_start(PODS, "Job").batch_end == 7


def test_services_have_batches_of_their_own_and_no_expectations() -> None:
    expectations = Expectations()
    api = Api(expectations, refuse=frozenset({1}))
    run = pass_of(api, expectations, Recorder())
    for index in range(3):
        run.queue(PendingCreate(ReplicaId("Job", index), SERVICES,
                                {"metadata": {"name": f"svc-{index}"}}))
    queue_pods(run, 3)
    flush_creates(run)
    # The first service is refused: no more services, but the pods' batches go on.
    assert api.sent == ["svc-0", "pool-0", "pool-1", "pool-2"]
    assert expectations.creations_unseen(KEY.id) == 3
    with pytest.raises(Forbidden):
        run.raise_batch_failure()


def test_expectations_stay_exact_when_creates_of_a_batch_fail_together() -> None:
    expectations = Expectations()
    api = Api(expectations, refuse=frozenset({4, 5, 6, 7}))
    with ThreadPoolExecutor(8) as pool:
        run = pass_of(api, expectations, Recorder(), pool=pool)
        queue_pods(run, 10)
        flush_creates(run)
    assert len(api.sent) == 7
    assert expectations.creations_unseen(KEY.id) == 3
    for _ in range(3):
        expectations.creation_observed(ExpectationKey(KEY.id, "Job"))
    assert expectations.satisfied(ExpectationKey(KEY.id, "Job"))


def test_the_machines_of_wide_jobs_slow_start() -> None:
    slow = {kind for kind, definition in DEFINITIONS.items()
            if definition.definition.spec.pod.slow_start}
    assert {"Job", "ReplicaSet", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob",
            "JAXJob"} <= slow


def surplus_pass(api: Api, expectations: Expectations, recorder: Recorder, count: int, *,
                 pool: Executor | None = None) -> ActionRun:
    """A pass of the ReplicaSet machine (slowStart) that has `count` pods too many."""
    pods = tuple(("Pod", {"metadata": {"name": f"web-{i}", "namespace": "team",
                                       "uid": f"uid-{i}"}}) for i in range(count))
    run = pass_of(api, expectations, recorder, pool=pool)
    run.definition = DEFINITIONS["ReplicaSet"]
    run.replica_objects = Claimed({}, resource=PODS, surplus=pods)
    run.decision = cast(Any, type("Holding", (), {"holds_replicas": False, "actions": ()}))
    return run


def test_the_surplus_is_expected_then_deleted_at_once() -> None:
    expectations, recorder = Expectations(), Recorder()
    api = Api(expectations, barrier=(range(1, 7), threading.Barrier(6)))
    with ThreadPoolExecutor(8) as pool:
        execute(surplus_pass(api, expectations, recorder, 6, pool=pool))
    assert sorted(api.sent) == [f"web-{i}" for i in range(6)]
    assert recorder.events == [("SuccessfulDelete", f"Deleted pod: web-{i}") for i in range(6)]
    # Each delete was expected before any was sent; none has been seen going yet.
    assert all(api.awaited)
    assert not expectations.satisfied(ExpectationKey(KEY.id, "Pod"))


def test_a_failed_delete_is_no_longer_expected_and_fails_the_pass_after_the_others() -> None:
    expectations, recorder = Expectations(), Recorder()
    api = Api(expectations, refuse=frozenset({2}), exists=frozenset({3}))
    run = surplus_pass(api, expectations, recorder, 4)
    with pytest.raises(Forbidden):
        execute(run)
    assert api.sent == [f"web-{i}" for i in range(4)]
    assert recorder.events == [("SuccessfulDelete", "Deleted pod: web-0"),
                               ("SuccessfulDelete", "Deleted pod: web-3")]
    key = ExpectationKey(KEY.id, "Pod")
    for name in ("web-0", "web-3"):
        assert not expectations.satisfied(key)
        expectations.deletion_observed(key, name)
    assert expectations.satisfied(key)  # web-1 refused and web-2 gone are not awaited


def test_a_pass_deletes_at_most_burst_replicas() -> None:
    expectations = Expectations()
    api = Api(expectations)
    run = surplus_pass(api, expectations, Recorder(), BURST_REPLICAS + 3)
    execute(run)
    assert len(api.sent) == BURST_REPLICAS
    assert run.wait_s == [1.0]


def test_a_machine_with_only_the_older_surplus_reason_says_each_surplus_pod_once() -> None:
    expectations, recorder = Expectations(), Recorder()
    run = surplus_pass(Api(expectations), expectations, recorder, 2)
    shipped = run.definition.definition
    older = shipped.model_copy(update={"spec": shipped.spec.model_copy(update={
        "pod": shipped.spec.pod.model_copy(
            update={"deleted_reason": None, "surplus_reason": "Trimmed"})})})
    run.definition = dataclasses.replace(run.definition, definition=older)
    execute(run)
    assert recorder.events == [("Trimmed", "Deleted pod: web-0"), ("Trimmed", "Deleted pod: web-1")]
