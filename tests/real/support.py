"""What the real-training tests share: skipping without the `real` extra, reading the
`result:` lines the examples in examples/real print, and taking turns at the trainer's port.

The tier needs the extra's packages, nothing else; without them it skips and says which
install is missing, as `jobmachine demo --real` does.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.app.demo import REAL_MODULES, REAL_PROGRAMS
from engine.shipped import shipped_dir

REAL = shipped_dir("examples") / "real"
MISSING = [name for name in REAL_MODULES if importlib.util.find_spec(name) is None]
ABSENT = [f"{program} ({source})" for program, source in REAL_PROGRAMS.items()
          if shutil.which(program) is None]
needs_real_extra = pytest.mark.skipif(
    bool(MISSING or ABSENT),
    reason=(f"no {', '.join(MISSING)} here: the real examples need pip install -e '.[real]'"
            if MISSING else f"the real examples need {', '.join(ABSENT)}; .ci/run installs "
            "it when run as root"),
)

# `<pod>  result: ...` in the demo's output, `result: ...` in a pod's log.
_RESULT = re.compile(r"^\s*(?:(?P<pod>\S+)\s+)?result: (?P<text>.*)$")


def results(text: str) -> dict[str, list[str]]:
    """Pod -> its result lines (without `result: `), from the demo's printed results."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _RESULT.match(line)
        if match and match["pod"]:
            found.setdefault(match["pod"], []).append(match["text"])
    return found


def result_lines(log: str) -> list[str]:
    """The result lines (without `result: `) of one pod's log."""
    return [match["text"] for line in log.splitlines() if (match := _RESULT.match(line))]


# Every TrainJob's nodes meet at port 29500 (Trainer's ContainerTrainerPort, whatever the
# framework), and in process mode every pod is on the host's network.
TRAINER_PORT = 29500


@contextlib.contextmanager
def trainer_port_turn() -> Iterator[None]:
    """Hold the machine's turn at the trainer's port while really training TrainJobs: CI runs
    tests/real's files on two xdist workers, and two TrainJobs at once would have their
    ranks meet at the other's rendezvous (or find the port taken) and fail."""
    lock = Path(tempfile.gettempdir()) / f"jobmachine-trainer-port-{TRAINER_PORT}.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
