"""The ends of containers restarted in place that the record keeps (`_note_ends`): each
replica's own, so that a new end of one replica leaves the ends seen of the others as they
were (each end is counted once)."""

from __future__ import annotations

from engine.controller.reconcile.record import POD_UID_KEPT, InPlaceEnds
from tests.scenarios.world import World, machine_job, running, running_again, worker


def test_a_new_end_of_one_replica_keeps_the_ends_seen_of_the_others() -> None:
    world = World(machine_job(workers=2, policy="OnFailure"))
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    world.reconcile()
    world.put(worker(0), running_again(1))
    world.put(worker(1), running_again(1))
    both = world.reconcile()
    assert both.decision.record.restarts == 2
    uid0, uid1 = (world.pods[worker(i)]["metadata"]["uid"] for i in (0, 1))
    assert both.decision.record.in_place_ends == {
        worker(0): InPlaceEnds(uid0[:POD_UID_KEPT], 1),
        worker(1): InPlaceEnds(uid1[:POD_UID_KEPT], 1),
    }

    world.put(worker(1), running_again(2))
    again = world.reconcile()
    assert again.decision.record.restarts == 3  # Worker-0's end is not counted again
    assert again.decision.record.in_place_ends[worker(0)] == (
        both.decision.record.in_place_ends[worker(0)])
    assert again.decision.record.in_place_ends[worker(1)].seen == 2

    # Worker-1's pod is gone: the ends seen of it are forgotten, Worker-0's are kept.
    world.put(worker(1), None)
    gone = world.reconcile()
    assert gone.decision.record.in_place_ends == {
        worker(0): both.decision.record.in_place_ends[worker(0)]}
