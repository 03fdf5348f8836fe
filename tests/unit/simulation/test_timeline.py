"""What `jobmachine simulate` prints: aligned lines ending with the end and the verdict, or
one JSON document with the same entries, the end, the status and `expect`."""

from __future__ import annotations

import json
from pathlib import Path

from engine.simulation.play import play
from engine.simulation.timeline import json_report, text_report
from tests.kinds import MACHINES
from tests.unit.simulation.support import machine_job, write

TIMELINE = """\
timeline:
  - {at: 5s, replica: Worker-0, exits: 0}
"""


def test_the_text_report_aligns_its_columns_and_ends_with_the_verdict(tmp_path: Path) -> None:
    path = write(tmp_path, machine_job(), TIMELINE, "expect: {phase: Failed}\n")
    played = play(path, machines=MACHINES)
    text = text_report(played).splitlines()
    assert text[0] == "0s  Worker-0  state      -> Pending"
    assert "5s  Worker-0  fact       exits 0" in text
    assert text[-2:] == [
        "5s            end        nothing more happens: phase Succeeded, state Succeeded, "
        "restarts 0, 1 pod created, at most 1 at once",
        "expect: not met (1 difference)",
    ]
    assert [str(d).replace(f"{tmp_path}/", "") for d in played.unmet] == [
        "scenario.yaml:14:17: error: expected phase Failed, got Succeeded"]


def test_without_expect_the_text_report_gives_no_verdict(tmp_path: Path) -> None:
    played = play(write(tmp_path, machine_job(), TIMELINE), machines=MACHINES)
    assert text_report(played).splitlines()[-1].split()[1] == "end"


def test_the_json_report_holds_the_same_entries_the_end_and_the_status(tmp_path: Path) -> None:
    path = write(tmp_path, machine_job(), TIMELINE, "expect: {phase: Succeeded}\n")
    played = play(path, machines=MACHINES)
    document = json.loads(json_report(played))
    assert document["scenario"] == str(path)
    assert document["timeline"][0] == {"offset": "0s", "at": 0.0, "subject": "Worker-0",
                                       "kind": "state", "text": "-> Pending"}
    assert len(document["timeline"]) == len(played.simulation.entries)
    assert document["end"] == {
        "at": 5.0, "offset": "5s", "stopped": "quiet", "phase": "Succeeded",
        "state": "Succeeded", "restarts": 0, "reason": "AllReplicasSucceeded",
        # Succeeded took SuccessCriteriaMet over (moveFrom): an ended MachineJob has not both.
        "conditions": {"Created": True, "Running": False, "Succeeded": True},
        "replicas": {"Worker-0": "Succeeded"}, "podsCreated": 1, "podsAtOnce": 1,
    }
    assert document["status"]["phase"] == "Succeeded"
    assert document["expect"] == {"met": True, "unmet": []}


def test_the_text_report_says_which_conditions_a_pass_removed() -> None:
    """A Kubeflow job's Restarting replaces Running and Running replaces it back: the
    timeline says each removal, after the condition that took the place."""
    example = Path(__file__).resolve().parents[3] / "examples" / "simulations"
    text = text_report(play(example / "kubeflow-worker-restart.yaml", machines=MACHINES))
    conditions = [line.split(None, 3)[3] for line in text.splitlines()
                  if line.split()[2:3] == ["condition"]]
    restarting = conditions.index("Restarting True (PyTorchJobRestarting)")
    assert conditions[restarting + 1] == "Running removed"
    back = conditions.index("Running True (PyTorchJobRunning)", restarting)
    assert conditions[back + 1] == "Restarting removed"
