"""A local node for the length of a `with` block, next to a running embedded API server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node.node import LocalNode, Mode
from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.status.backoff import RestartBackoff


@contextmanager
def running_node(
    server: RunningApiServer, *, mode: Mode = "process", state_dir: Path | None = None,
    restart_backoff: RestartBackoff | None = None, capacity: Capacity | None = None,
) -> Iterator[LocalNode]:
    """Start a node against `server` (state kept in `state_dir`, by default the server's data
    directory's `node/`; `restart_backoff` and `capacity` as for LocalNode), stop it on exit."""
    node = LocalNode(
        url=server.url,
        token=server.token,
        ca_file=server.ca_file,
        logs_dir=server.logs_dir,
        state_dir=state_dir or server.data_dir / "node",
        mode=mode,
        restart_backoff=restart_backoff,
        capacity=capacity,
    )
    node.start()
    try:
        yield node
    finally:
        node.stop()
