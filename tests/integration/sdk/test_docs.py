"""docs/sdk.md runs as written: its Python blocks, in order, against a local cluster.

A fenced `text` block right after a Python block is that block's exact output; other
blocks are only run. The page's paths are the checkout's (`examples/...`) and the files
it writes land in the test's own folder.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.app.up import LocalCluster
from engine.sdk import JobClient, JobNotFoundError
from tests.kinds import REPO

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "sdk.md"
_FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, code, expected output or None) of every Python block of the page."""
    fenced = [(m.group("lang"), m.group("body"), text.count("\n", 0, m.start()) + 1)
              for m in _FENCE.finditer(text)]
    for i, (lang, body, line) in enumerate(fenced):
        if lang != "python":
            continue
        following = fenced[i + 1] if i + 1 < len(fenced) else None
        yield line, body, following[1] if following and following[0] == "text" else None


def test_the_page_has_checked_examples() -> None:
    found = list(blocks(PAGE.read_text()))

    assert len(found) >= 10
    assert sum(expected is not None for _, _, expected in found) >= 8


def test_every_example_of_the_page_runs_and_prints_what_the_page_says(
        cluster: LocalCluster, sharded_kind: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(cluster.server.kubeconfig))
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    try:
        for line, code, expected in blocks(PAGE.read_text()):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"{PAGE}:{line}", "exec"), scope)
            if expected is not None:
                assert printed.getvalue() == expected, f"the block at {PAGE.name}:{line}"
        assert (tmp_path / "mnist-path.svg").read_bytes().startswith(b"<?xml")
    finally:
        with JobClient(cluster.server.kubeconfig) as client:
            for job in client.list_jobs():
                with contextlib.suppress(JobNotFoundError):
                    client.delete_job(job["metadata"]["name"], kind=job["kind"])
