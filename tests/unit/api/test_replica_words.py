"""The one wording of a replica's state that the web view, the job's status and the SDK share."""

from __future__ import annotations

import pytest

from engine.api.replica_words import STOPPED, ReplicaWords, replica_words


@pytest.mark.parametrize(("state", "phase", "job_ended", "ended", "words"), [
    ("Running", None, True, False,
     ReplicaWords("Running, stopped at job end (pod deleted)", STOPPED)),
    ("Pending", "Running", True, False,
     ReplicaWords("Pending, stopped at job end (pod Running)", STOPPED)),
    ("Succeeded", None, True, True, ReplicaWords("Succeeded", "Succeeded")),  # an end: as is
    ("Running", "Succeeded", False, False, ReplicaWords("Running (pod Succeeded)", STOPPED)),
    ("Running", "Pending", False, False, ReplicaWords("Running (pod Pending)", "Running")),
    ("Running", "Running", False, False, ReplicaWords("Running", "Running")),
    ("Restarting", None, False, False, ReplicaWords("Restarting", "Restarting")),  # no phase
    ("", None, True, False, ReplicaWords("", "")),  # not started: nothing to say
])
def test_a_replicas_words(state: str, phase: str | None, job_ended: bool, ended: bool,
                          words: ReplicaWords) -> None:
    assert replica_words(state, phase, job_ended=job_ended, ended=ended) == words


def test_a_machine_of_child_objects_names_the_childs_kind() -> None:
    assert replica_words("Running", None, job_ended=True, ended=False, noun="Job").text == (
        "Running, stopped at job end (Job deleted)")
