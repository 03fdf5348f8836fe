"""Benchmark: what the shipped machines cost before any job runs, and `jobmachine check`.

1. Judging every shipped StateMachine as the engine does at start and at each change of
   a machine (validate, type-check CEL against the kind's schema, compile): the median of
   several rounds, and its parts. Until judging ends, an engine reconciles no job.
2. `jobmachine check machines/`, the model check of every shipped machine, as a user
   runs it (a subprocess, `--jobs` = the CPUs): wall time and its summary lines.

kopf has no machine to compile and no model checker, so there is no peer figure here;
an engine's time to ready is compared with kopf's in `compare.py` and `restart.py`.

Run: python benchmarks/machines.py [--rounds 5] [--no-check]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.controller.machines.admission import Judge  # noqa: E402
from engine.controller.machines.served import crd_schema_lookup  # noqa: E402


def documents(folder: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """Every YAML document in `folder` (of `kind`, when given)."""
    found = []
    for path in sorted(folder.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and (kind is None or document.get("kind") == kind):
                found.append(document)
    return found


def judge_seconds(rounds: int) -> list[float]:
    """Seconds to judge every shipped machine from scratch, once per round."""
    machines = documents(ROOT / "machines", "StateMachine")
    schemas = crd_schema_lookup(documents(ROOT / "crds"))
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        judged = Judge().judge(machines, schemas)
        times.append(time.perf_counter() - started)
        assert all(j.valid for j, _ in judged.values()), "a shipped machine is invalid"
    return times


def check_run() -> tuple[float, list[str]]:
    """Wall seconds of `jobmachine check machines/` and its summary lines."""
    started = time.perf_counter()
    command = Path(sys.executable).parent / "jobmachine"
    done = subprocess.run([str(command), "check", "machines/"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"check failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed, [line for line in done.stdout.splitlines() if line.startswith("machines/")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-check", action="store_true", help="skip the model check")
    args = parser.parse_args()
    times = judge_seconds(args.rounds)
    print(f"judge the shipped machines: median {statistics.median(times):.2f} s "
          f"over {args.rounds} rounds (min {min(times):.2f}, max {max(times):.2f})")
    if not args.no_check:
        elapsed, summary = check_run()
        print(f"jobmachine check machines/: {elapsed:.1f} s wall")
        for line in summary:
            print(f"  {line}")


if __name__ == "__main__":
    main()
