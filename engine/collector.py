"""CPython's garbage collector tuned for the long-running processes: engine, server, `up`.

An engine caches tens of thousands of jobs and pods, a server holds every object
it serves; none of them is garbage, yet CPython's default thresholds (700, 10,
10) rescan them all every few thousand allocations. `run`, `up` and `apiserver`
collect less often (`tune_collector`) and, once started, move what start-up
built (schemas, registries, a loaded journal, the machines) out of the
collector's sight (`freeze_start_up`).
"""

from __future__ import annotations

import gc

GC_THRESHOLDS = (50_000, 20, 100)
"""Collect generation 0 after 50,000 allocations (not 700), the older generations 20 and
100 times less often. Measured: a 10,000-job engine restart listed in 1.4 s of CPU, not
3.4 s (benchmarks/restart.py); the server's writes with 20,000 pods stored cost 0.66x the
CPU of the defaults' (docs/performance.md)."""


def tune_collector() -> None:
    """Collect less often: the process's objects live as long as it does."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_start_up() -> None:
    """Collect what start-up left over, then exempt every surviving object from future
    collections (`gc.freeze`): they are the process's lasting state, and each full
    collection would otherwise walk them again. Freed objects are still released by
    their reference counts; only a cycle among them would stay until exit."""
    gc.collect()
    gc.freeze()
