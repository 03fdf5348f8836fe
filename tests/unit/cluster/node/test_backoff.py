"""The kubelet's CrashLoopBackOff: restart at once, then 10 s doubling to 5 min, reset after 10 min;
its messages word for word; the node's setting."""

from __future__ import annotations

import pytest

from engine.cluster.node.status import backoff
from engine.cluster.node.status.backoff import RestartBackoff, Window

KUBELET = RestartBackoff()
META = {"name": "train", "namespace": "jobs", "uid": "u-1"}


def crash_loop(policy: RestartBackoff, runs: list[float]) -> list[float]:
    """Waits before each restart of a container whose attempts run `runs` seconds each and
    that is started again as soon as its back-off allows."""
    window, clock, waits = None, 0.0, []
    for run in runs:
        finished = clock + run
        wait = backoff.wait_s(policy, window, finished_at=finished, now=finished)
        waits.append(wait)
        clock = finished + wait
        window = backoff.restarted(policy, window, finished_at=finished, now=clock)
    return waits


def test_the_first_exit_restarts_at_once_then_10s_doubling_up_to_5_minutes() -> None:
    assert crash_loop(KUBELET, [1.0] * 9) == [0, 10, 20, 40, 80, 160, 300, 300, 300]


def test_the_wait_counts_from_the_exit_not_from_now() -> None:
    window = Window(20.0, opened_at=100.0)
    assert backoff.wait_s(KUBELET, window, finished_at=110.0, now=110.0) == 20.0
    assert backoff.wait_s(KUBELET, window, finished_at=110.0, now=125.0) == 5.0
    assert backoff.wait_s(KUBELET, window, finished_at=110.0, now=130.0) == 0.0
    assert backoff.wait_s(KUBELET, None, finished_at=110.0, now=110.0) == 0.0


def test_an_exit_more_than_10_minutes_after_the_restart_starts_over() -> None:
    window = Window(160.0, opened_at=1000.0)
    at_the_edge = 1000.0 + 600.0
    assert backoff.wait_s(KUBELET, window, finished_at=at_the_edge, now=at_the_edge) == 160.0
    assert backoff.restarted(KUBELET, window, finished_at=at_the_edge, now=at_the_edge + 160
                             ) == Window(300.0, at_the_edge + 160)
    past = at_the_edge + 0.001
    assert backoff.wait_s(KUBELET, window, finished_at=past, now=past) == 0.0
    assert backoff.restarted(KUBELET, window, finished_at=past, now=past) == Window(10.0, past)
    assert crash_loop(KUBELET, [1, 1, 1, 601, 1]) == [0, 10, 20, 0, 10]


def test_a_shorter_setting_keeps_the_rules() -> None:
    fast = RestartBackoff(initial_s=0.5, max_s=2.0)
    assert fast.reset_after_s == 4.0
    assert crash_loop(fast, [0.1] * 6) == pytest.approx([0, 0.5, 1.0, 2.0, 2.0, 2.0])
    assert crash_loop(fast, [0.1, 0.1, 4.5, 0.1]) == pytest.approx([0, 0.5, 0, 0.5])


def test_the_setting_from_the_node_environment() -> None:
    assert RestartBackoff.from_env({}) == RestartBackoff(10.0, 300.0)
    assert RestartBackoff.from_env({backoff.INITIAL_ENV: "0.2", backoff.MAX_ENV: "3"}
                                   ) == RestartBackoff(0.2, 3.0)
    assert RestartBackoff.from_env({backoff.MAX_ENV: "60"}) == RestartBackoff(10.0, 60.0)
    with pytest.raises(ValueError, match="JOBMACHINE_NODE_RESTART_BACKOFF_S='soon' is not"):
        RestartBackoff.from_env({backoff.INITIAL_ENV: "soon"})
    with pytest.raises(ValueError, match="must not exceed"):
        RestartBackoff.from_env({backoff.INITIAL_ENV: "20", backoff.MAX_ENV: "10"})
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="positive number of seconds"):
            RestartBackoff(initial_s=bad)


def test_messages_are_the_kubelets() -> None:
    assert backoff.waiting_message(Window(10.0, 0.0), "main", META) == (
        "back-off 10s restarting failed container=main pod=train_jobs(u-1)")
    assert backoff.waiting_message(Window(160.0, 0.0), "main", META) == (
        "back-off 2m40s restarting failed container=main pod=train_jobs(u-1)")
    assert backoff.event_message("main", META) == (
        "Back-off restarting failed container main in pod train_jobs(u-1)")


@pytest.mark.parametrize(
    ("seconds", "printed"),
    [(0, "0s"), (10, "10s"), (20, "20s"), (80, "1m20s"), (300, "5m0s"), (3600, "1h0m0s"),
     (3725.5, "1h2m5.5s"), (1.5, "1.5s"), (0.2, "200ms"), (0.0015, "1.5ms"),
     (0.000002, "2µs"), (5e-9, "5ns"), (-10, "-10s")],
)
def test_durations_print_as_go_prints_them(seconds: float, printed: str) -> None:
    assert backoff.go_duration(seconds) == printed
