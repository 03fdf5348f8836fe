"""How every benchmark that starts processes stops: on Ctrl-C and SIGTERM alike.

Python's default SIGTERM ends the interpreter at once, without running `finally` blocks or
leaving `with` blocks, so a benchmark stopped by `kill` (or by a CI job's timeout) would leave
its API servers, `jobmachine up` and controllers running. SIGTERM here raises `SystemExit(143)`
(the shell's code for it) and SIGINT `KeyboardInterrupt`, so every context manager stops what
it started on the way out. SIGINT is set again because a shell that starts a script in the
background makes it ignore SIGINT.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

TERMINATED = 143
"""The exit code after SIGTERM (128 + 15), as a shell reports it."""


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(TERMINATED)


def stop_cleanly_on_signals() -> None:
    """From now on SIGINT and SIGTERM unwind the main thread instead of ending the process."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
