"""`python -m tools.mutation [AREA ...]`: mutate each area of the core, run its fast tests
against every mutant, and write a report listing each survivor with file, line and change."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import date
from pathlib import Path

from tools.mutation import cel_guards, python_mutants, snapshot
from tools.mutation.areas import AREAS, DEFAULT_AREAS, Area, area_named, narrowed
from tools.mutation.report import (
    Mutant,
    Score,
    load_equivalents,
    mark_equivalents,
    markdown,
    score,
    stale_equivalents,
    write_json,
)

ROOT = Path(__file__).resolve().parents[2]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__)
    p.add_argument(
        "areas",
        nargs="*",
        metavar="AREA",
        help=f"areas to mutate: {', '.join(a.name for a in AREAS)}, or all "
        f"(default: {' '.join(DEFAULT_AREAS)})",
    )
    p.add_argument("--ref", default="HEAD", help="the commit to mutate (default HEAD)")
    p.add_argument("--jobs", "-n", type=int, default=2, help="mutants tested at once (default 2)")
    p.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "jobmachine-mutation",
        help="scratch folder of each area's copy, kept from one run to the next "
        "(default: $TMPDIR/jobmachine-mutation)",
    )
    p.add_argument(
        "--report", type=Path, help="markdown report (default: WORK/report.md; JSON beside it)"
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild the report from the last run's results in WORK "
        "(after editing the equivalents list)",
    )
    p.add_argument(
        "--files",
        nargs="+",
        metavar="PATH",
        help="mutate only these files (paths or globs) of the chosen areas",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="judge every mutant anew: make each area's copy afresh instead of bringing the "
        "last run's copy in WORK up to the commit",
    )
    p.add_argument("--list", action="store_true", help="list the areas and exit")
    return p.parse_args(argv)


def _chosen(names: list[str]) -> list[Area]:
    if not names:
        return [area_named(n) for n in DEFAULT_AREAS]
    if names == ["all"]:
        return list(AREAS)
    return [area_named(n) for n in names]


def _run(
    area: Area, snap: Path, work: Path, args: argparse.Namespace, commit: str
) -> tuple[list[Mutant], float]:
    if area.kind == "python":
        mutants, seconds = python_mutants.run_area(
            area, snap, work, jobs=args.jobs, fresh=args.fresh, equivalents=load_equivalents()
        )
    else:
        mutants, seconds = cel_guards.run_area(area, snap, work, jobs=args.jobs)
    results = {
        "commit": commit,
        "files": list(area.sources),
        "seconds": seconds,
        "mutants": [asdict(m) for m in mutants],
    }
    (work / f"{area.name}.json").write_text(json.dumps(results, ensure_ascii=False))
    return mutants, seconds


def _load(area: Area, work: Path) -> tuple[list[Mutant], float, str]:
    data = json.loads((work / f"{area.name}.json").read_text())
    return [Mutant(**m) for m in data["mutants"]], float(data["seconds"]), str(data["commit"])


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.list:
        for a in AREAS:
            print(f"{a.name:15} {a.kind:6} goal {a.goal:.0%}  {a.summary}")
        return 0
    areas = _chosen(args.areas)
    if args.files:
        areas = [a for a in (narrowed(a, args.files) for a in areas) if a is not None]
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    report = (args.report or work / "report.md").resolve()
    commit_file = work / "commit"
    if args.report_only:
        commit = commit_file.read_text().strip()  # the last run's; each area has its own
    else:
        commit = snapshot.resolve(ROOT, args.ref)
        commit_file.write_text(commit + "\n")
        print(f"mutating {commit[:12]} in {work}", flush=True)
        snap = snapshot.export(ROOT, commit, work / "snapshot")

    equivalents = load_equivalents()
    scores: list[Score] = []
    everything: list[Mutant] = []
    for area in areas:
        if args.report_only:
            mutants, seconds, area_commit = _load(area, work)
        else:
            print(f"{area.name}: {area.summary} ...", flush=True)
            started = time.monotonic()
            mutants, seconds = _run(area, snap, work, args, commit)
            seconds = time.monotonic() - started
            area_commit = commit
        mutants = mark_equivalents(mutants, equivalents)
        s = score(area.name, mutants, seconds)
        s.commit = area_commit
        print(
            f"{area.name}: {s.caught}/{s.relevant} caught ({s.ratio:.1%}), "
            f"{s.counts.get('equivalent', 0)} equivalent, {seconds / 60:.1f} min",
            flush=True,
        )
        scores.append(s)
        everything += mutants
        text = markdown(
            scores,
            everything,
            goals={a.name: a.goal for a in areas},
            commit=commit,
            date=date.today().isoformat(),
            stale=stale_equivalents(everything, equivalents),
        )
        report.write_text(text)
        write_json(report.with_suffix(".json"), scores, everything, commit=commit)
    print(f"report: {report}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
