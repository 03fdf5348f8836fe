"""The job cache is read only once it holds the engine's own last write (read-your-writes)."""

from __future__ import annotations

from engine.controller.runtime.freshness import ReleasedFinalizers, WrittenVersions


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_job_is_not_caught_up_until_the_cache_holds_the_written_version() -> None:
    versions = WrittenVersions(clock=Clock())
    versions.wrote("PyTorchJob/ns/a", "12")

    assert not versions.caught_up("PyTorchJob/ns/a", "11")
    versions.seen("PyTorchJob/ns/a", "12")
    assert versions.caught_up("PyTorchJob/ns/a", "11") is True  # the event cleared it


def test_seen_tells_whether_the_version_is_the_engines_own_last_write() -> None:
    """The watch handler skips the reconcile an echo of our own write would cost."""
    versions = WrittenVersions(clock=Clock())
    versions.wrote("k", "12")
    assert versions.seen("k", "11") is False  # someone else's version, before ours
    assert versions.seen("k", "12") is True
    assert versions.seen("k", "12") is False  # told once
    versions.seen("k", "13")
    versions.wrote("k", "13")  # the event beat the reply: not known as ours, reconciled
    assert versions.seen("k", "14") is False


def test_the_echo_a_reconcile_waited_for_is_not_skipped() -> None:
    """A reconcile put off until the cache shows our write is owed the event of that write:
    it queues the job at once, ahead of new arrivals (a delayed retry would not be)."""
    versions = WrittenVersions(clock=Clock())
    versions.wrote("k", "12")
    assert not versions.caught_up("k", "11")
    assert versions.seen("k", "12") is False
    versions.wrote("k", "13")
    assert versions.seen("k", "13") is True  # nobody waited this time


def test_the_cached_copy_equal_to_the_write_is_caught_up() -> None:
    versions = WrittenVersions(clock=Clock())
    versions.wrote("k", "12")
    assert versions.caught_up("k", "12")


def test_a_watch_event_faster_than_the_write_reply_does_not_stall_the_job() -> None:
    versions = WrittenVersions(clock=Clock())
    versions.seen("k", "12")
    versions.seen("k", "13")  # someone else wrote after us
    versions.wrote("k", "12")
    assert versions.caught_up("k", "13")


def test_an_entry_expires_so_a_lost_event_cannot_stall_a_job() -> None:
    clock = Clock()
    versions = WrittenVersions(ttl_s=10.0, clock=clock)
    versions.wrote("k", "12")
    clock.now = 5.0
    assert not versions.caught_up("k", "11")
    clock.now = 10.5
    assert versions.caught_up("k", "11")


def test_other_jobs_are_not_held_back() -> None:
    versions = WrittenVersions(clock=Clock())
    versions.wrote("a", "12")
    assert versions.caught_up("b", "3")


def test_a_released_finalizer_is_pending_until_the_cache_shows_the_release() -> None:
    """A reconcile from the copy before our removal must not send it again (a 422)."""
    clock = Clock()
    released = ReleasedFinalizers(ttl_s=30, clock=clock)
    assert not released.pending("pod-uid", "jobmachine.dev/tracking", "5")
    released.released("pod-uid", "jobmachine.dev/tracking", "6")
    assert released.pending("pod-uid", "jobmachine.dev/tracking", "5")
    assert not released.pending("pod-uid", "other", "5")
    assert not released.pending("pod-uid", "jobmachine.dev/tracking", "6")
    assert not released.pending("pod-uid", "jobmachine.dev/tracking", "5"), "cleared once seen"


def test_a_release_never_seen_expires() -> None:
    clock = Clock()
    released = ReleasedFinalizers(ttl_s=30, clock=clock)
    released.released("pod-uid", "f", "6")
    clock.now = 31
    assert not released.pending("pod-uid", "f", "5")
