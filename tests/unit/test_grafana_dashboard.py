"""deploy/grafana/jobmachine-dashboard.json is a Grafana dashboard over metrics the engine
really exports: a renamed metric breaks this test, not an operator's dashboard."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from engine.controller.reporting.events import EventStats
from engine.controller.reporting.metrics import Metrics
from engine.controller.runtime.queue import QueueMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "jobmachine-dashboard.json"


def exported() -> set[str]:
    """Every sample name a fully wired engine exports once it has seen some work."""
    metrics = Metrics(
        queue=lambda: QueueMetrics(depth=0, adds=0, retries=0, processed=0, work_seconds=0.0,
                                   longest_running_seconds=0.0, unfinished_work_seconds=0.0),
        api_requests=lambda: 0,
        events=lambda: EventStats(recorded=0, created=0, aggregated=0, dropped=0, failed=0),
        jobs_by_phase=lambda: {("PyTorchJob", "Running"): 1},
        is_leader=lambda: True,
        shards_held=lambda: 1,
    )
    metrics.observe_reconcile("done", 0.01)
    metrics.observe_changes("PyTorchJob", [("job", "Succeeding", "Succeeded")],
                            [("PodFailed", 1)], finished=("Succeeded", 5.0))
    text = metrics.render().decode()
    return {sample.name for family in text_string_to_metric_families(text)
            for sample in family.samples}


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    used = {name for expr in expressions(dashboard)
            for name in re.findall(r"\bjobmachine_[a-z_]+", expr)}

    assert used, "the dashboard queries no jobmachine metric"
    assert used - exported() == set()


def test_the_dashboard_shows_transitions_restarts_durations_and_states() -> None:
    used = " ".join(expressions(json.loads(DASHBOARD.read_text())))

    for metric in ("jobmachine_transitions_total", "jobmachine_restarts_total",
                   "jobmachine_job_duration_seconds_bucket", "jobmachine_jobs"):
        assert metric in used


def test_panels_have_unique_ids_and_a_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in dashboard["panels"]]

    assert len(ids) == len(set(ids))
    names = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert "datasource" in names
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"])
