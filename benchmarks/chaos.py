"""Benchmark: a long chaos run, and its figures for docs/reliability.md.

Jobs of every shipped kind and outcome (success, ExitCode and in-place restarts,
permanent failures, backoffLimit, suspend and resume, deletes mid-run, TTL) run while
the engine (`jobmachine run`, its own process) is killed with SIGKILL and restarted, the
embedded API server answers a share of requests with 409, 429, 500 and 503, delays or
drops them and cuts watches, its watch history is compacted, and the node is lost (its
pods failed with DisruptionTarget and deleted, as the node lifecycle and pod garbage
collector do). The invariant checker then judges every job (engine/testing/chaos/).
This is the same harness as `tests/chaos/`, with more jobs and longer disruptions.

Run: python benchmarks/chaos.py --jobs 10000 --seed 1 [--mode simulate|process]
     [--in-flight 40] [--json chaos.json] [--work-dir DIR]
It prints the report and exits 1 if any invariant was broken.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loguru import logger

from engine.testing.chaos import ChaosConfig, run_chaos


def _between(text: str) -> tuple[float, float] | None:
    """'6,12' -> (6.0, 12.0); 'off' -> None."""
    if text == "off":
        return None
    low, high = (float(part) for part in text.split(","))
    return low, high


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=("simulate", "process"), default="simulate")
    parser.add_argument("--in-flight", type=int, default=40)
    parser.add_argument("--namespaces", type=int, default=8)
    parser.add_argument("--kill-every", type=_between, default=(20.0, 40.0),
                        help="seconds between SIGKILLs of the engine, LOW,HIGH or off")
    parser.add_argument("--node-loss-every", type=_between, default=(60.0, 120.0),
                        help="seconds between node losses, LOW,HIGH or off")
    parser.add_argument("--faults-every", type=_between, default=(5.0, 15.0),
                        help="seconds each fault phase (on, then off) lasts, LOW,HIGH or off")
    parser.add_argument("--settle", type=float, default=180.0,
                        help="seconds a job may take to end before it counts as stuck")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the data, logs and replica files go (kept)")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args()

    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    logger.add(sys.stderr, level="INFO", filter=lambda r: r["extra"].get("component")
               == "chaos")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="jobmachine-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    config = ChaosConfig(
        jobs=args.jobs, seed=args.seed, node_mode=args.mode, in_flight=args.in_flight,
        namespaces=args.namespaces, engine_kills=args.kill_every,
        node_losses=args.node_loss_every, faults=args.faults_every, settle_s=args.settle,
    )
    report = run_chaos(config, work)
    print(report.summary())
    print(f"work dir: {work}")
    if args.json:
        args.json.write_text(json.dumps(report.figures(), indent=2))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
