"""What the real-training tests share: skipping without the `real` extra, and reading the
`result:` lines the examples in examples/real print.

The tier needs the extra's packages, nothing else; without them it skips and says which
install is missing, as `jobmachine demo --real` does.
"""

from __future__ import annotations

import importlib.util
import re
import shutil

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
