"""Metrics in a registry per engine, and the /metrics, /healthz, /readyz server."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from engine.controller.reporting.events import EventStats
from engine.controller.reporting.health import HealthServer, serve_metrics_and_health
from engine.controller.reporting.metrics import Metrics
from engine.controller.runtime.queue import QueueMetrics

QUEUE = QueueMetrics(
    depth=3, adds=40, retries=5, processed=37, work_seconds=1.5,
    longest_running_seconds=0.25, unfinished_work_seconds=0.5,
)
EVENTS = EventStats(recorded=12, created=7, aggregated=4, dropped=2, failed=1)


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition text, by name and sorted labels."""
    text = metrics.render().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def full_metrics(*, leading: bool = True) -> Metrics:
    return Metrics(
        queue=lambda: QUEUE,
        api_requests=lambda: 123,
        events=lambda: EVENTS,
        jobs_by_phase=lambda: {("PyTorchJob", "Running"): 2, ("TFJob", "Succeeded"): 1},
        is_leader=lambda: leading,
    )


class TestMetrics:
    def test_reconciles_are_counted_by_result_with_their_duration(self) -> None:
        metrics = Metrics()
        metrics.observe_reconcile("done", 0.003)
        metrics.observe_reconcile("done", 0.004)
        metrics.observe_reconcile("retry", 2.0)
        found = samples(metrics)
        assert found[("jobmachine_reconcile_total", (("result", "done"),))] == 2
        assert found[("jobmachine_reconcile_total", (("result", "retry"),))] == 1
        assert found[("jobmachine_reconcile_duration_seconds_count", ())] == 3
        assert found[("jobmachine_reconcile_duration_seconds_sum", ())] == pytest.approx(2.007)
        assert found[("jobmachine_reconcile_duration_seconds_bucket", (("le", "0.004"),))] == 2

    def test_state_changes_restarts_and_job_durations_are_counted(self) -> None:
        metrics = Metrics()
        metrics.observe_changes("PyTorchJob", [("job", None, "Created"),
                                               ("replica", "Pending", "Running"),
                                               ("replica", "Pending", "Running")],
                                [("PodFailed", 1), ("PodRestarted", 2)])
        metrics.observe_changes("PyTorchJob", [("job", "Succeeding", "Succeeded")], [],
                                finished=("Succeeded", 90.0))
        found = samples(metrics)
        created = (("from", ""), ("kind", "PyTorchJob"), ("level", "job"), ("to", "Created"))
        running = (("from", "Pending"), ("kind", "PyTorchJob"), ("level", "replica"),
                   ("to", "Running"))
        assert found[("jobmachine_transitions_total", created)] == 1
        assert found[("jobmachine_transitions_total", running)] == 2
        assert found[("jobmachine_restarts_total",
                      (("kind", "PyTorchJob"), ("reason", "PodRestarted")))] == 2
        assert found[("jobmachine_restarts_total",
                      (("kind", "PyTorchJob"), ("reason", "PodFailed")))] == 1
        ended = (("kind", "PyTorchJob"), ("state", "Succeeded"))
        assert found[("jobmachine_job_duration_seconds_count", ended)] == 1
        assert found[("jobmachine_job_duration_seconds_sum", ended)] == 90.0
        assert found[("jobmachine_job_duration_seconds_bucket", (*ended[:1], ("le", "64.0"),
                                                                 *ended[1:]))] == 0
        assert found[("jobmachine_job_duration_seconds_bucket", (*ended[:1], ("le", "128.0"),
                                                                 *ended[1:]))] == 1

    def test_sources_are_read_at_scrape_time(self) -> None:
        found = samples(full_metrics())
        assert found[("jobmachine_workqueue_depth", ())] == 3
        assert found[("jobmachine_workqueue_adds_total", ())] == 40
        assert found[("jobmachine_workqueue_retries_total", ())] == 5
        assert found[("jobmachine_workqueue_processed_total", ())] == 37
        assert found[("jobmachine_workqueue_longest_running_processor_seconds", ())] == 0.25
        assert found[("jobmachine_workqueue_unfinished_work_seconds", ())] == 0.5
        assert found[("jobmachine_api_requests_total", ())] == 123
        assert found[("jobmachine_events_total", (("outcome", "created"),))] == 7
        assert found[("jobmachine_events_total", (("outcome", "aggregated"),))] == 4
        assert found[("jobmachine_events_total", (("outcome", "dropped"),))] == 2
        assert found[("jobmachine_events_total", (("outcome", "failed"),))] == 1
        assert found[("jobmachine_events_recorded_total", ())] == 12
        assert found[("jobmachine_jobs", (("kind", "PyTorchJob"), ("phase", "Running")))] == 2
        assert found[("jobmachine_jobs", (("kind", "TFJob"), ("phase", "Succeeded")))] == 1
        assert found[("jobmachine_leader", ())] == 1
        assert samples(full_metrics(leading=False))[("jobmachine_leader", ())] == 0

    def test_values_follow_the_sources(self) -> None:
        requests = [1]
        metrics = Metrics(api_requests=lambda: requests[0])
        assert samples(metrics)[("jobmachine_api_requests_total", ())] == 1
        requests[0] = 50
        assert samples(metrics)[("jobmachine_api_requests_total", ())] == 50

    def test_sources_not_given_are_not_exported(self) -> None:
        names = {name for name, _ in samples(Metrics())}
        assert not any(name.startswith(("jobmachine_workqueue", "jobmachine_leader"))
                       for name in names)

    def test_a_failing_source_leaves_the_others_in_the_scrape(self) -> None:
        def broken() -> int:
            raise RuntimeError("client closed")

        metrics = Metrics(api_requests=broken, is_leader=lambda: True)
        found = samples(metrics)
        assert ("jobmachine_api_requests_total", ()) not in found
        assert found[("jobmachine_leader", ())] == 1

    def test_two_engines_in_one_process_do_not_share_values(self) -> None:
        first, second = Metrics(), Metrics()
        first.observe_reconcile("done", 0.1)
        assert ("jobmachine_reconcile_total", (("result", "done"),)) in samples(first)
        assert ("jobmachine_reconcile_total", (("result", "done"),)) not in samples(second)


class Probe:
    """What the server should say: flip these between requests."""

    def __init__(self) -> None:
        self.synced = False
        self.leading = False

    def ready(self) -> bool:
        return self.synced

    def is_leader(self) -> bool:
        return self.leading


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
def server(probe: Probe) -> Iterator[HealthServer]:
    with serve_metrics_and_health(
        0, full_metrics(), probe.ready, is_leader=probe.is_leader, host="127.0.0.1"
    ) as running:
        yield running


def fetch(server: HealthServer, path: str) -> tuple[int, str, str]:
    url = f"http://127.0.0.1:{server.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


class TestHealthServer:
    def test_healthz_answers_while_the_process_lives(self, server: HealthServer) -> None:
        assert fetch(server, "/healthz")[::2] == (200, "ok\n")

    def test_readyz_waits_for_the_caches(self, server: HealthServer, probe: Probe) -> None:
        status, _, body = fetch(server, "/readyz")
        assert (status, body) == (503, "not ready: caches not synced\n")
        probe.synced = True
        assert fetch(server, "/readyz")[::2] == (200, "ok: standing by\n")
        probe.leading = True
        assert fetch(server, "/readyz")[::2] == (200, "ok: leading\n")

    def test_it_listens_on_loopback_unless_told_otherwise(self) -> None:
        with serve_metrics_and_health(0, Metrics(), lambda: True) as running:
            assert running.host == "127.0.0.1"

    def test_readyz_without_leader_election_just_says_ok(self) -> None:
        with serve_metrics_and_health(0, Metrics(), lambda: True, host="127.0.0.1") as running:
            assert fetch(running, "/readyz")[::2] == (200, "ok\n")

    def test_a_failing_readiness_check_is_not_ready(self) -> None:
        def broken() -> bool:
            raise RuntimeError("informer crashed")

        with serve_metrics_and_health(0, Metrics(), broken, host="127.0.0.1") as running:
            assert fetch(running, "/readyz")[::2] == (503, "not ready: informer crashed\n")

    def test_metrics_are_served_in_the_prometheus_format(self, server: HealthServer) -> None:
        status, content_type, body = fetch(server, "/metrics")
        assert status == 200
        assert content_type.startswith("text/plain; version=")
        assert "jobmachine_api_requests_total 123.0" in body.splitlines()

    def test_unknown_paths_are_not_found(self, server: HealthServer) -> None:
        assert fetch(server, "/nope")[0] == 404

    def test_query_strings_are_ignored(self, server: HealthServer) -> None:
        assert fetch(server, "/healthz?verbose=1")[::2] == (200, "ok\n")

    def test_stop_closes_the_port(self, probe: Probe) -> None:
        running = serve_metrics_and_health(0, Metrics(), probe.ready, host="127.0.0.1")
        assert fetch(running, "/healthz")[0] == 200
        running.stop()
        running.stop()
        with pytest.raises(urllib.error.URLError):
            fetch(running, "/healthz")
