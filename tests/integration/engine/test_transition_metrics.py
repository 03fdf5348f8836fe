"""The engine's metrics follow its jobs: state changes, restarts by reason, job durations.

The engine is shared with other modules' tests (whose jobs may still be ending), so the test
reads the counters before and after its own job and checks that they grew by at least what
its job did.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from engine.app.up import LocalCluster
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    pytorchjob,
    wait_for,
    wait_for_phase,
)

Sample = tuple[str, tuple[tuple[str, str], ...]]


def scrape(cluster: LocalCluster) -> dict[Sample, float]:
    text = cluster.engine.metrics.render().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def grown(before: dict[Sample, float], after: dict[Sample, float], name: str
          ) -> dict[tuple[tuple[str, str], ...], float]:
    """How much each sample of `name` grew, by labels (unchanged ones left out)."""
    return {
        labels: value - before.get((metric, labels), 0.0)
        for (metric, labels), value in after.items()
        if metric == name and value != before.get((metric, labels), 0.0)
    }


def test_a_restarted_job_is_counted_by_transition_reason_and_duration(
    cluster: LocalCluster, client: KubeClient, ns: str,
) -> None:
    """Worker-0 is killed once (137) and recreated, then succeeds."""
    before = scrape(cluster)
    client.create(PYTORCHJOBS, pytorchjob(
        "counted", ns, workers=Replica(codes="137,0", policy="ExitCode")), ns)
    wait_for_phase(client, ns, "counted", "Succeeded")
    job = (("kind", "PyTorchJob"), ("level", "job"))
    succeeded = (("from", "Succeeding"), *job, ("to", "Succeeded"))
    # The engine counts a reconcile's changes once its status write has landed: a reader
    # may see Succeeded a moment before the counter.
    after = wait_for(lambda: scrape(cluster), lambda now: succeeded in grown(
        before, now, "jobmachine_transitions_total"), what="the Succeeded transition counted")

    transitions = grown(before, after, "jobmachine_transitions_total")
    assert transitions[(("from", ""), *job, ("to", "Created"))] >= 1
    assert transitions[(("from", "Succeeding"), *job, ("to", "Succeeded"))] >= 1
    replica = (("kind", "PyTorchJob"), ("level", "replica"))
    assert transitions[(("from", "Running"), *replica, ("to", "Restarting"))] >= 1
    # The job is Restarting while the replica's pod is created again.
    assert transitions[(("from", "Running"), *job, ("to", "Restarting"))] >= 1
    assert transitions[(("from", "Restarting"), *job, ("to", "Running"))] >= 1
    # Counted under the restart's reason, as Kubeflow names it.
    restarts = grown(before, after, "jobmachine_restarts_total")
    assert restarts[(("kind", "PyTorchJob"), ("reason", "PyTorchJobRestarting"))] >= 1
    ended = grown(before, after, "jobmachine_job_duration_seconds_count")
    assert ended[(("kind", "PyTorchJob"), ("state", "Succeeded"))] >= 1
