"""`jobmachine graph --job NS/NAME`: a finished job's path, read from a live cluster's API.

The command gets nothing but a kubeconfig, as a user would give it, and must
draw the states the job visited (from its status) or say clearly that there is
no such job.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cli import app
from engine.settings import EngineSettings
from tests.integration.app.support import (
    PYTORCHJOBS,
    highlighted_states,
    job_status,
    wait_until,
    workers_job,
)

pytestmark = pytest.mark.slow

JOB = "drawn"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A local cluster holding one job that was killed once, restarted and succeeded."""
    options = UpOptions(data_dir=tmp_path_factory.mktemp("up"), port=0, node_mode="simulate",
                        settings=EngineSettings(replica_backoff_base_s=0.2))
    with running_local_cluster(options) as cluster:
        cluster.client.create(PYTORCHJOBS, workers_job(JOB, workers=1, annotations={
            "sim.jobmachine.dev/exit-codes": "137,0",
        }), "default")
        wait_until(lambda: job_status(cluster.client, JOB),
                   lambda s: s.get("phase") in ("Succeeded", "Failed"), what="the job to finish")
        yield cluster


def test_graph_of_a_job_highlights_the_path_it_took(finished: LocalCluster, tmp_path: Path) -> None:
    picture = tmp_path / "x.svg"

    result = CliRunner().invoke(app, [
        "graph", "--job", f"default/{JOB}", "--kubeconfig", str(finished.server.kubeconfig),
        "-o", str(picture),
    ])

    assert result.exit_code == 0, result.output
    visited = highlighted_states(picture.read_bytes())
    assert {"job/s/Created", "job/s/Running", "job/s/Restarting", "job/s/Succeeding",
            "job/s/Succeeded", "replica/s/Pending",
            "replica/s/Running", "replica/s/Restarting", "replica/s/Succeeded"} == visited


def test_graph_of_a_missing_job_fails_clearly(finished: LocalCluster, tmp_path: Path) -> None:
    picture = tmp_path / "x.svg"

    result = CliRunner().invoke(app, [
        "graph", "--job", "default/no-such-job", "--kubeconfig", str(finished.server.kubeconfig),
        "-o", str(picture),
    ])

    assert result.exit_code == 1
    assert "no job default/no-such-job" in result.stderr
    assert not picture.exists()
