"""`--event-ttl` of `jobmachine apiserver` and `up` takes a Go-style duration and refuses
anything else before starting a server."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.cli import app


@pytest.mark.parametrize("command", ["apiserver", "up"])
def test_a_value_that_is_not_a_duration_is_refused(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--port", "0", "--event-ttl", "an hour"])
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: --event-ttl: 'an hour' is not a duration such as 1h, 90s or 5m")
