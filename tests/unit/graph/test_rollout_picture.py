"""`jobmachine graph FILE --rollout`: one order of the shipped Deployment's rollout, walked
with the machine's CEL and the engine's planner, and drawn situation by situation."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.controller.rollouts import plan
from engine.definition import load_definitions
from engine.graph.rollout import RolloutPictureError, rollout_dot, rollout_mermaid, rollout_picture
from engine.modelcheck.rollouts import rollout_path
from tests.kinds import MACHINES


def deployment_path() -> list[tuple[str, tuple[tuple[str, int, int, int], ...]]]:
    [definition] = load_definitions([MACHINES / "deployment.yaml"])
    return rollout_path(definition)


def test_the_default_rollout_of_three_goes_one_pod_at_a_time_within_its_bounds() -> None:
    path = deployment_path()
    assert path[0] == ("the template changes", (("old", 3, 3, 3), ("new", 1, 0, 0)))
    assert path[-1][1] == (("old", 0, 0, 0), ("new", 3, 3, 3))
    for _, revisions in path:  # maxSurge 25% of 3 is 1, maxUnavailable 25% of 3 is 0
        assert sum(wanted for _, wanted, _, _ in revisions) <= 4
        assert sum(available for *_, available in revisions) >= 3
    assert [event for event, _ in path[1:4]] == [
        "ReplicaSet new makes a pod", "a pod of new becomes available",
        "ReplicaSet old deletes a pod"]


def test_a_rollout_that_cannot_complete_is_said_not_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plan._Sync, "_shrink_old", lambda self: False)
    with pytest.raises(ValueError, match="stops before it completes"):
        deployment_path()


def test_the_picture_has_a_box_per_situation_and_an_arrow_per_event() -> None:
    path = deployment_path()
    dot = rollout_dot("the title", path)
    assert 's0 [label="old: 3 wanted, 3 pods, 3 available\\nnew: 1 wanted, 0 pods, 0 available"]' \
        in dot
    assert dot.count(" -> s") == len(path)
    assert 's0 -> s1 [label="ReplicaSet new makes a pod"]' in dot
    mermaid = rollout_mermaid("the title", path)
    assert 's0["old#58; 3 wanted, 3 pods, 3 available<br/>new#58; 1 wanted, 0 pods, 0 available"]' \
        in mermaid
    assert mermaid.count(" -->") == len(path)
    assert rollout_picture("the title", path, "dot") == dot.encode()


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(RolloutPictureError, match="unknown format 'gif'"):
        rollout_picture("t", deployment_path(), "gif")


def test_graph_rollout_draws_a_machines_rollout_and_refuses_one_without() -> None:
    drawn = CliRunner().invoke(app, ["graph", str(MACHINES / "deployment.yaml"), "--rollout",
                                     "--format", "mermaid"])
    assert drawn.exit_code == 0, drawn.output
    assert drawn.output.startswith("---\ntitle: \"Deployment (machine deployment): one order of "
                                   "a rollout, replicas 3, RollingUpdate")
    refused = CliRunner().invoke(app, ["graph", str(MACHINES / "job.yaml"), "--rollout"])
    assert refused.exit_code == 1
    assert "has no rollout (spec.rollout)" in refused.output
