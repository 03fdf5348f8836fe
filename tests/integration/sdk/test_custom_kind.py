"""A kind added while the engine runs (examples/custom-kind's ShardedJob) works with no code
change: created from its example file or from a builder laid out by the cluster's machine."""

from __future__ import annotations

import sys

import pytest

from engine.sdk import JobClient, UnknownKindError
from tests.kinds import REPO

pytestmark = pytest.mark.slow

CUSTOM_KIND = REPO / "examples" / "custom-kind"


def test_the_example_job_of_a_new_kind_runs_and_is_read_like_any_other(
        jobs: JobClient, sharded_kind: str) -> None:
    jobs.create_job(CUSTOM_KIND / "shardedjob.yaml")

    done = jobs.wait_for_job_conditions("word-count", kind=sharded_kind, timeout=60)

    assert done["kind"] == "ShardedJob"
    assert [job["metadata"]["name"] for job in jobs.list_jobs(kind=sharded_kind)] == [
        "word-count"]
    assert jobs.get_job_logs("word-count") == {
        f"Shard-{i}": f"shard {i} of 3 reads s3://example/books/\n" for i in range(3)}
    assert b"Succeeded" in jobs.job_picture("word-count")


def test_a_builder_for_a_new_kind_is_laid_out_by_the_machine_the_cluster_runs(
        jobs: JobClient, sharded_kind: str) -> None:
    code = "import os; print(os.environ['SHARD_INDEX'], os.environ['INPUT'])"
    builder = (jobs.job_builder(sharded_kind, "built")
               .replica("Shard", 2, image="python:3.12", command=[sys.executable, "-c", code])
               .set_field("spec.input", "s3://example/more/"))

    jobs.create_job(builder)
    jobs.wait_for_job_conditions("built", timeout=60)

    assert builder.build()["spec"]["shards"]["Shard"]["replicas"] == 2
    assert jobs.get_job_logs("built") == {"Shard-0": "0 s3://example/more/\n",
                                          "Shard-1": "1 s3://example/more/\n"}


def test_a_builder_for_a_kind_no_machine_governs_is_refused(jobs: JobClient) -> None:
    with pytest.raises(UnknownKindError, match="governs the kind 'WidgetJob'"):
        jobs.job_builder("WidgetJob", "w")
