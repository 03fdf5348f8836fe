"""`jobmachine run` refuses flags that contradict each other, before touching any cluster."""

from __future__ import annotations

from typer.testing import CliRunner

from engine.cli import app


def test_leader_election_and_shards_are_refused_together() -> None:
    result = CliRunner().invoke(app, ["run", "--kubeconfig", "/nonexistent", "--leader-elect",
                                      "--shards", "4"])
    assert result.exit_code != 0
    assert "either --leader-elect or --shards" in result.output


def test_a_shard_count_below_one_is_refused() -> None:
    result = CliRunner().invoke(app, ["run", "--shards", "0"])
    assert result.exit_code == 2
    assert "--shards" in result.output
