"""What a replica's step sees of itself (`_LazyVariables`): the replica variables of its type,
`replica.desired` among them (the type's replica count), which a replica machine's guards and
messages may read.

The test runs the shipped MachineJob machine with PendingTimedOut's message saying them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.definition import load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, World, machine_job, pending, worker

TIMED_OUT_SAYS = '${replica.index} stayed Pending longer than ${runPolicy.pendingTimeoutSeconds}s."'


@pytest.fixture
def says_desired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped MachineJob machine whose PendingTimedOut message also says the replica's
    index, type's replica count and restart policy."""
    text = (MACHINES / "job.yaml").read_text()
    assert text.count(TIMED_OUT_SAYS) == 1
    (tmp_path / "job.yaml").write_text(text.replace(
        TIMED_OUT_SAYS,
        "${replica.index} stayed Pending: "
        '${string(replica.index)} of ${string(replica.desired)}, ${policy}."'))
    [definition] = load_definitions([tmp_path])
    monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)


@pytest.mark.usefixtures("says_desired")
def test_a_replica_step_sees_its_types_replica_count() -> None:
    world = World(machine_job(workers=3, policy="OnFailure",
                              run_policy={"pendingTimeoutSeconds": 60}))
    world.reconcile()
    world.pods = {worker(i): pending() for i in range(3)}
    world.advance(61)
    decision = world.reconcile().decision
    assert decision.errors == ()
    assert [(str(f.replica), f.transition.message) for f in decision.fired
            if f.transition.target == "PendingTimedOut"] == [
        (f"Worker-{i}", f"Worker-{i} stayed Pending: {i} of 3, OnFailure.") for i in range(3)]
