"""`JobClient` against a live cluster: create, find, wait, delete and draw jobs of any kind.

Every job here is a few lines of Python run as local processes; a test asserts what the
client returns or raises, never how long it took.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.sdk import (
    JobBuilder,
    JobClient,
    JobClientError,
    JobFailedError,
    JobNotFoundError,
    JobTimeoutError,
    UnknownKindError,
)
from engine.sdk.progress import progress_line
from tests.integration.app.support import highlighted_states
from tests.integration.engine.helpers import wait_for

pytestmark = pytest.mark.slow


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def machinejob(name: str, code: str = "print('done')") -> dict[str, Any]:
    """A MachineJob of one replica running `code`."""
    return {
        "apiVersion": "jobmachine.dev/v1alpha1",
        "kind": "MachineJob",
        "metadata": {"name": name},
        "spec": {"replicaSpecs": {"Main": {"replicas": 1, "restartPolicy": "Never", "template": {
            "spec": {"containers": [{"name": "main", "image": "python:3.12",
                                     "command": python(code)}]}}}}},
    }


def pytorchjob(name: str, *, master: str = "print('master')", workers: int = 1,
               worker: str = "print('worker')") -> JobBuilder:
    return (JobBuilder(kind="PyTorchJob", name=name)
            .replica("Master", 1, image="pytorch:2.3", command=python(master),
                     restart_policy="Never")
            .replica("Worker", workers, image="pytorch:2.3", command=python(worker),
                     restart_policy="Never"))


def names(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(job["kind"], job["metadata"]["name"]) for job in found]


def test_a_job_is_created_from_a_dict_a_yaml_file_or_a_builder(
        jobs: JobClient, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(pytorchjob("from-file").build()))

    from_dict = jobs.create_job(machinejob("from-dict"))
    from_file = jobs.create_job(manifest)
    from_builder = jobs.create_job(
        JobBuilder(kind="TFJob", name="from-builder").replica(
            "Worker", 1, image="tensorflow:2", command=python("print('tf')")))

    assert [(j["kind"], j["metadata"]["namespace"], j["metadata"]["name"])
            for j in (from_dict, from_file, from_builder)] == [
        ("MachineJob", ns, "from-dict"), ("PyTorchJob", ns, "from-file"),
        ("TFJob", ns, "from-builder")]
    assert all(j["metadata"]["uid"] for j in (from_dict, from_file, from_builder))


def test_jobs_are_found_and_listed_across_every_governed_kind(jobs: JobClient) -> None:
    jobs.create_job(machinejob("alpha"))
    jobs.create_job(pytorchjob("beta"))

    assert jobs.get_job("beta")["kind"] == "PyTorchJob"
    assert jobs.get_job("alpha", kind="MachineJob")["metadata"]["name"] == "alpha"
    assert names(jobs.list_jobs()) == [("MachineJob", "alpha"), ("PyTorchJob", "beta")]
    assert names(jobs.list_jobs(kind="PyTorchJob")) == [("PyTorchJob", "beta")]
    assert jobs.list_jobs(namespace="default", kind="TFJob") == []


def test_a_name_two_kinds_share_needs_its_kind(jobs: JobClient) -> None:
    jobs.create_job(machinejob("twin"))
    jobs.create_job(pytorchjob("twin"))

    with pytest.raises(JobClientError, match="jobs of several kinds are named .*/twin "
                                             r"\(MachineJob, PyTorchJob\): say which with kind="):
        jobs.get_job("twin")
    assert jobs.get_job("twin", kind="MachineJob")["kind"] == "MachineJob"


def test_what_is_not_there_is_said_clearly(jobs: JobClient, ns: str) -> None:
    with pytest.raises(JobNotFoundError, match=f"no job {ns}/ghost of the kinds .*PyTorchJob"):
        jobs.get_job("ghost")
    with pytest.raises(UnknownKindError, match="governs the kind 'WidgetJob'"):
        jobs.get_job("ghost", kind="WidgetJob")
    with pytest.raises(UnknownKindError, match="governs the kind 'WidgetJob'"):
        jobs.create_job({"apiVersion": "example.com/v1", "kind": "WidgetJob",
                         "metadata": {"name": "w"}})


def test_the_servers_refusal_reaches_the_caller_with_its_message(jobs: JobClient) -> None:
    jobs.create_job(machinejob("once"))

    with pytest.raises(JobClientError, match=r"cannot create MachineJob .*/once: it exists "
                                             r"already: .*already exists") as raised:
        jobs.create_job(machinejob("once"))
    assert (raised.value.status, raised.value.reason) == (409, "AlreadyExists")


def test_waiting_for_success_returns_the_job_and_shows_progress_when_asked(
        jobs: JobClient, ns: str, capsys: pytest.CaptureFixture[str]) -> None:
    jobs.create_job(pytorchjob("fine", workers=2))

    done = jobs.wait_for_job_conditions("fine", timeout=60, progress=True)

    assert done["status"]["phase"] == "Succeeded"
    shown = capsys.readouterr().out.splitlines()
    assert shown[-1] == progress_line(done)
    assert shown[-1].startswith(f"PyTorchJob {ns}/fine  Succeeded  restarts 0  Master 0 Succeeded")


def test_waiting_without_progress_prints_nothing_when_stdout_is_not_a_terminal(
        jobs: JobClient, capsys: pytest.CaptureFixture[str]) -> None:
    jobs.create_job(machinejob("quiet"))

    jobs.wait_for_job_conditions("quiet", timeout=60)

    assert capsys.readouterr().out == ""


def test_a_job_that_fails_raises_with_the_reason_of_its_failed_condition(
        jobs: JobClient) -> None:
    jobs.create_job(pytorchjob("broken", master="import sys; sys.exit(3)"))

    with pytest.raises(JobFailedError) as raised:
        jobs.wait_for_job_conditions("broken", timeout=60)

    failed = next(c for c in raised.value.job["status"]["conditions"] if c["type"] == "Failed")
    assert (raised.value.reason, raised.value.message) == (failed["reason"], failed["message"])
    assert "exit code 3" in raised.value.message
    assert jobs.wait_for_job_conditions("broken", expected_conditions=frozenset({"Failed"}),
                                        timeout=60)["metadata"]["name"] == "broken"


def test_a_replica_that_outlives_its_jobs_end_is_said_as_describe_says_it(
        jobs: JobClient) -> None:
    # The master fails while the worker runs; the clean-pod policy (None, Kubeflow's
    # default) keeps the worker's pod, which ends by itself after the job did.
    jobs.create_job(pytorchjob("outlived", master="import sys, time; time.sleep(1); "
                                                  "sys.exit(3)",
                               worker="import time; time.sleep(4)"))
    jobs.wait_for_job_conditions("outlived", expected_conditions=frozenset({"Failed"}),
                                 timeout=60)

    ended = wait_for(lambda: jobs.get_replica_states("outlived"),
                     lambda states: states.get("Worker-0", "").endswith("(pod Succeeded)"),
                     what="the worker's words follow its pod")
    assert ended == {"Master-0": "Failed",
                     "Worker-0": "Running, stopped at job end (pod Succeeded)"}


def test_a_job_that_does_not_finish_in_time_is_a_timeout(jobs: JobClient) -> None:
    jobs.create_job(machinejob("sleeper", "import time; time.sleep(300)"))
    jobs.wait_for_job_conditions("sleeper", expected_conditions=frozenset({"Running"}),
                                 timeout=60)

    with pytest.raises(JobTimeoutError, match="reached none of Succeeded within 1s; it is "
                                              "Running") as raised:
        jobs.wait_for_job_conditions("sleeper", timeout=1)

    assert isinstance(raised.value, TimeoutError)
    jobs.delete_job("sleeper")


def test_a_deleted_job_goes_with_its_pods(jobs: JobClient, ns: str) -> None:
    jobs.create_job(pytorchjob("doomed", master="import time; time.sleep(300)"))
    jobs.wait_for_job_conditions("doomed", expected_conditions=frozenset({"Running"}),
                                 timeout=60)

    jobs.delete_job("doomed")

    def gone() -> bool:
        try:
            jobs.get_job("doomed")
        except JobNotFoundError:
            return True
        return False

    wait_for(gone, bool, what="the job gone")
    with pytest.raises(JobNotFoundError):
        jobs.delete_job("doomed")


def test_the_picture_of_a_finished_job_highlights_the_states_it_went_through(
        jobs: JobClient) -> None:
    jobs.create_job(machinejob("drawn"))
    jobs.wait_for_job_conditions("drawn", timeout=60)

    svg = jobs.job_picture("drawn")

    assert svg.startswith(b"<?xml")
    assert {"job/s/Created", "job/s/Running", "job/s/Succeeded",
            "replica/s/Running", "replica/s/Succeeded"} <= highlighted_states(svg)
    with pytest.raises(JobNotFoundError, match=r"no job .*/undrawn"):
        jobs.job_picture("undrawn")
