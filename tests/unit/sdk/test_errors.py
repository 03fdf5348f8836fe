"""The SDK's errors: one base class, and the server's own words kept."""

from __future__ import annotations

from engine.kube.errors import Invalid
from engine.sdk import JobClientError, JobFailedError, JobTimeoutError
from engine.sdk.errors import refused

JOB = {"kind": "PyTorchJob", "metadata": {"namespace": "team", "name": "mnist"},
       "status": {"state": "Running"}}


def test_a_refusal_carries_the_servers_status_message_code_and_reason() -> None:
    message = ('PyTorchJob.kubeflow.org "mnist" is invalid: spec.pytorchReplicaSpecs.Worker.'
               'replicas: Invalid value: -1')
    error = refused(Invalid(422, "Invalid", message, {}), "create PyTorchJob team/mnist")

    assert isinstance(error, JobClientError)
    assert str(error) == f"cannot create PyTorchJob team/mnist: {message}"
    assert (error.status, error.reason) == (422, "Invalid")


def test_a_failed_job_carries_the_job_and_its_failed_conditions_reason_and_message() -> None:
    error = JobFailedError(JOB, "BackoffLimitExceeded", "Worker-1 failed 3 times")

    assert isinstance(error, JobClientError)
    assert (error.reason, error.message) == ("BackoffLimitExceeded", "Worker-1 failed 3 times")
    assert error.job is JOB
    assert str(error) == ("PyTorchJob team/mnist failed: BackoffLimitExceeded: "
                          "Worker-1 failed 3 times")


def test_a_timeout_is_a_timeout_error_that_says_where_the_job_got() -> None:
    error = JobTimeoutError(JOB, {"Succeeded", "Running"}, 2.5)

    assert isinstance(error, TimeoutError)
    assert isinstance(error, JobClientError)
    assert str(error) == ("PyTorchJob team/mnist reached none of Running, Succeeded within 2.5s; "
                          "it is Running")
