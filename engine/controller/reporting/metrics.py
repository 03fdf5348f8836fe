"""The engine's Prometheus metrics, in a registry of its own.

Each engine owns a `CollectorRegistry` (never the global one), so several engines can live in
one process. Reconcile outcomes are pushed as they happen; what already keeps its own counters
(work queue, API client, event recorder, job cache, elector) is read at scrape time, so no
thread copies numbers around and nothing can drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from loguru import logger
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from engine.controller.reporting.events import EventStats
from engine.controller.runtime.queue import QueueMetrics

PREFIX = "jobmachine"

RECONCILE_BUCKETS = tuple(0.001 * 2**i for i in range(16))
"""1 ms doubling to ~33 s: a reconcile is a few API calls, a slow one is a stuck server."""

JOB_DURATION_BUCKETS = tuple(float(2**i) for i in range(19))
"""1 s doubling to ~3 days: a smoke test ends in seconds, a training run in hours or days."""


class Metrics:
    """Counters and histograms of one engine; `render` gives the exposition text."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(
        self,
        *,
        queue: Callable[[], QueueMetrics] | None = None,
        api_requests: Callable[[], int] | None = None,
        events: Callable[[], EventStats] | None = None,
        jobs_by_phase: Callable[[], Mapping[tuple[str, str], int]] | None = None,
        is_leader: Callable[[], bool] | None = None,
        shards_held: Callable[[], int] | None = None,
    ) -> None:
        """Each source is read at every scrape; a missing one is simply not exported.

        `jobs_by_phase` maps (kind, phase) to how many jobs are in it.
        """
        self.registry = CollectorRegistry()
        self._reconciles = Counter(
            f"{PREFIX}_reconcile", "Reconciles by result (done, requeue, retry, terminal).",
            ["result"], registry=self.registry,
        )
        self._reconcile_seconds = Histogram(
            f"{PREFIX}_reconcile_duration_seconds", "Time spent in one reconcile.",
            buckets=RECONCILE_BUCKETS, registry=self.registry,
        )
        self._transitions = Counter(
            f"{PREFIX}_transitions",
            "State changes by job kind, level (job or replica) and the states left and entered "
            "(from is empty for a job's or replica's first state).",
            ["kind", "level", "from", "to"], registry=self.registry,
        )
        self._restarts = Counter(
            f"{PREFIX}_restarts",
            "Restarts counted against runPolicy.backoffLimit, by job kind and the reason of the "
            "transition that counted them.",
            ["kind", "reason"], registry=self.registry,
        )
        self._job_seconds = Histogram(
            f"{PREFIX}_job_duration_seconds",
            "From a job's creation to its terminal state, by job kind and that state.",
            ["kind", "state"], buckets=JOB_DURATION_BUCKETS, registry=self.registry,
        )
        ProcessCollector(registry=self.registry)
        self.registry.register(
            _Sources(
                queue=queue, api_requests=api_requests, events=events,
                jobs_by_phase=jobs_by_phase, is_leader=is_leader, shards_held=shards_held,
            )
        )

    def observe_reconcile(self, result: str, seconds: float) -> None:
        """Count one finished reconcile and how long it took."""
        self._reconciles.labels(result=result).inc()
        self._reconcile_seconds.observe(seconds)

    def observe_changes(
        self,
        kind: str,
        transitions: Iterable[tuple[str, str | None, str]],
        restarts: Iterable[tuple[str, int]],
        finished: tuple[str, float] | None = None,
    ) -> None:
        """Count what one reconcile recorded: state changes as (level, from, to), restarts as
        (reason, count), and, when the job reached a terminal state, (state, seconds since
        its creation)."""
        for level, source, target in transitions:
            self._transitions.labels(kind=kind, level=level, **{"from": source or ""},
                                     to=target).inc()
        for reason, count in restarts:
            self._restarts.labels(kind=kind, reason=reason).inc(count)
        if finished is not None:
            state, seconds = finished
            self._job_seconds.labels(kind=kind, state=state).observe(max(seconds, 0.0))

    def render(self) -> bytes:
        """The current values in Prometheus' text format (`content_type`)."""
        return generate_latest(self.registry)


class _Sources:
    """A collector that reads the other components' own counters at scrape time."""

    def __init__(
        self,
        *,
        queue: Callable[[], QueueMetrics] | None,
        api_requests: Callable[[], int] | None,
        events: Callable[[], EventStats] | None,
        jobs_by_phase: Callable[[], Mapping[tuple[str, str], int]] | None,
        is_leader: Callable[[], bool] | None,
        shards_held: Callable[[], int] | None,
    ) -> None:
        self._readers: list[tuple[str, Callable[[], Iterator[Metric]]]] = []
        if queue is not None:
            self._readers.append(("queue", lambda: _queue_metrics(queue())))
        if api_requests is not None:
            self._readers.append(("API requests", lambda: _api_metrics(api_requests())))
        if events is not None:
            self._readers.append(("events", lambda: _event_metrics(events())))
        if jobs_by_phase is not None:
            self._readers.append(("jobs", lambda: _job_metrics(jobs_by_phase())))
        if is_leader is not None:
            self._readers.append(("leader", lambda: _leader_metrics(is_leader())))
        if shards_held is not None:
            self._readers.append(("shards", lambda: iter([_gauge(
                "shards_held", "Shards this replica holds (sharded engines).", shards_held())])))

    def collect(self) -> Iterator[Metric]:
        """Every source's families; a failing source is logged and left out of this scrape."""
        for what, read in self._readers:
            try:
                families = list(read())
            except Exception:
                logger.exception(f"metrics: reading the {what} source failed")
                continue
            yield from families


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(f"{PREFIX}_{name}", documentation, value=value)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, value=value)


def _queue_metrics(snapshot: QueueMetrics) -> Iterator[Metric]:
    yield _gauge("workqueue_depth", "Keys ready to be reconciled.", snapshot.depth)
    yield _counter("workqueue_adds", "Keys that entered the work queue.", snapshot.adds)
    yield _counter("workqueue_retries", "Keys requeued with back-off.", snapshot.retries)
    yield _counter("workqueue_processed", "Keys reconciled.", snapshot.processed)
    yield _counter(
        "workqueue_work_seconds", "Time spent processing keys.", snapshot.work_seconds
    )
    yield _gauge(
        "workqueue_longest_running_processor_seconds",
        "How long the oldest in-flight key has been processing.",
        snapshot.longest_running_seconds,
    )
    yield _gauge(
        "workqueue_unfinished_work_seconds",
        "Processing time of every in-flight key, summed (stuck workers show here).",
        snapshot.unfinished_work_seconds,
    )


def _api_metrics(requests: int) -> Iterator[Metric]:
    yield _counter("api_requests", "Requests sent to the API server.", requests)


def _event_metrics(stats: EventStats) -> Iterator[Metric]:
    family = CounterMetricFamily(
        f"{PREFIX}_events", "Events by outcome (created, aggregated, dropped, failed).",
        labels=["outcome"],
    )
    outcomes = {
        "created": stats.created, "aggregated": stats.aggregated,
        "dropped": stats.dropped, "failed": stats.failed,
    }
    for outcome, value in outcomes.items():
        family.add_metric([outcome], value)
    yield family
    yield _counter("events_recorded", "Events accepted into the recorder's queue.", stats.recorded)


def _job_metrics(counts: Mapping[tuple[str, str], int]) -> Iterator[Metric]:
    family = GaugeMetricFamily(
        f"{PREFIX}_jobs", "Jobs by kind and phase.", labels=["kind", "phase"]
    )
    for (kind, phase), value in sorted(counts.items()):
        family.add_metric([kind, phase], value)
    yield family


def _leader_metrics(leading: bool) -> Iterator[Metric]:
    yield _gauge("leader", "1 while this engine holds the leader lease, else 0.", int(leading))
