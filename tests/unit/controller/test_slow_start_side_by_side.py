"""A slow-start pass sends the next batch of every group at once: a replica's Service beside
its pod, each group still in batches of 1, 2, 4, ... of its own. The API and pass helpers are
test_slow_start_batches.py's."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from engine.controller.reconcile.actions import ActionRun, PendingCreate, flush_creates
from engine.controller.reconcile.children import ReplicaId
from engine.controller.runtime.expectations import Expectations
from engine.kube.resources import SERVICES
from tests.unit.controller.test_slow_start_batches import KEY, Api, Recorder, pass_of, queue_pods


def queue_services(run: ActionRun, count: int) -> None:
    for index in range(count):
        run.queue(PendingCreate(ReplicaId("Job", index), SERVICES,
                                {"metadata": {"name": f"svc-{index}"}}))


def test_a_service_and_a_pod_are_in_flight_together() -> None:
    expectations = Expectations()
    # The first two creates, the Service's and the pod's first batches, wait for each other.
    api = Api(expectations, barrier=(range(1, 3), threading.Barrier(2)))
    with ThreadPoolExecutor(4) as pool:
        run = pass_of(api, expectations, Recorder(), pool=pool)
        queue_services(run, 1)
        queue_pods(run, 1)
        flush_creates(run)
    run.raise_batch_failure()
    assert sorted(api.sent) == ["pool-0", "svc-0"]
    assert run.created == {ReplicaId("Job", 0)}


def test_each_group_keeps_its_own_batches_sent_round_by_round() -> None:
    expectations = Expectations()
    api = Api(expectations)
    run = pass_of(api, expectations, Recorder())
    queue_services(run, 3)
    queue_pods(run, 3)
    flush_creates(run)
    assert api.sent == ["svc-0", "pool-0", "svc-1", "svc-2", "pool-1", "pool-2"]
    assert expectations.creations_unseen(KEY.id) == 3
    assert run.slow_start(SERVICES, "Job").count == 3
    run.raise_batch_failure()
