"""The containerIDs the local node writes into container statuses, and what they name.

The node writes them, the API server reads them back to reach a running container for
`pods/exec` (as it reads the node's log files for `pods/log`), so one module says their
form: `jobmachine-process://PID` for a process (the leader of the container's process
group), `jobmachine-simulated://TOKEN` for a simulated attempt.
"""

from __future__ import annotations

PROCESS_SCHEME = "jobmachine-process://"
SIMULATED_SCHEME = "jobmachine-simulated://"


def process_container_id(pid: int) -> str:
    return f"{PROCESS_SCHEME}{pid}"


def simulated_container_id(token: str) -> str:
    return f"{SIMULATED_SCHEME}{token}"


def process_id(container_id: str) -> int | None:
    """The pid a process container's ID names; None for any other ID."""
    digits = container_id.removeprefix(PROCESS_SCHEME)
    if digits == container_id or not digits.isdigit():
        return None
    return int(digits)


def is_simulated(container_id: str) -> bool:
    return container_id.startswith(SIMULATED_SCHEME)
