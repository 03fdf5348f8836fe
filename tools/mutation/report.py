"""Mutants as data, the equivalents list, scores per area and the report that lists survivors.

Every source of mutants (mutmut for Python, `cel_guards` for the machines) hands back the
same `Mutant` records, so scoring and the report know nothing of how a mutant was made.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import yaml

Status = Literal["killed", "survived", "no tests", "timeout", "skipped", "equivalent"]

# Statuses that count as caught: a timeout is a mutant the tests noticed (it hangs them).
CAUGHT: frozenset[str] = frozenset({"killed", "timeout"})

EQUIVALENTS_FILE = Path(__file__).with_name("equivalents.yaml")


@dataclass(frozen=True)
class Mutant:
    """One planted bug: where, what changed, and what the tests said."""

    area: str
    ident: str  # the tool's own name for it (mutmut's key, or file:line:column#n)
    file: str
    line: int
    where: str  # the function (Python) or the guard's key path (YAML)
    before: str  # the changed line(s) as written, stripped
    after: str  # the same line(s) in the mutant
    status: Status

    @property
    def change(self) -> str:
        return f"{self.before}  ->  {self.after}"


@dataclass(frozen=True)
class Equivalent:
    """A mutant that changes no behaviour, and why; matched by file, place and change, not by
    line or number, so the list survives edits elsewhere in the file."""

    file: str
    where: str
    before: str
    after: str
    reason: str

    def matches(self, mutant: Mutant) -> bool:
        return (
            mutant.file == self.file
            and mutant.where == self.where
            and mutant.before == self.before
            and mutant.after == self.after
        )


def load_equivalents(path: Path = EQUIVALENTS_FILE) -> list[Equivalent]:
    if not path.exists():
        return []
    entries = yaml.safe_load(path.read_text()) or []
    return [
        Equivalent(
            file=str(e["file"]),
            where=str(e["where"]),
            before=str(e["before"]),
            after=str(e["after"]),
            reason=str(e["reason"]),
        )
        for e in entries
    ]


def mark_equivalents(mutants: Iterable[Mutant], equivalents: Sequence[Equivalent]) -> list[Mutant]:
    """Survivors the list names become `equivalent`; a listed mutant that the tests kill stays
    killed (the list is then stale there, and `stale_equivalents` says so)."""
    return [
        Mutant(**{**asdict(m), "status": "equivalent"})
        if m.status not in CAUGHT and any(e.matches(m) for e in equivalents)
        else m
        for m in mutants
    ]


def stale_equivalents(
    mutants: Sequence[Mutant], equivalents: Sequence[Equivalent]
) -> list[Equivalent]:
    """Entries of the list that match no mutant of the areas that ran, or match a killed one."""
    files = {m.file for m in mutants}
    return [
        e
        for e in equivalents
        if e.file in files and not any(e.matches(m) and m.status == "equivalent" for m in mutants)
    ]


@dataclass
class Score:
    area: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    commit: str = ""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def relevant(self) -> int:
        return self.total - self.counts.get("equivalent", 0) - self.counts.get("skipped", 0)

    @property
    def caught(self) -> int:
        return sum(self.counts.get(s, 0) for s in CAUGHT)

    @property
    def ratio(self) -> float:
        return self.caught / self.relevant if self.relevant else 1.0


def score(area: str, mutants: Sequence[Mutant], seconds: float) -> Score:
    s = Score(area=area, seconds=seconds)
    for m in mutants:
        s.counts[m.status] = s.counts.get(m.status, 0) + 1
    return s


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def markdown(
    scores: Sequence[Score],
    mutants: Sequence[Mutant],
    *,
    goals: dict[str, float],
    commit: str,
    date: str,
    stale: Sequence[Equivalent] = (),
) -> str:
    lines = [
        f"# Mutation report, {date}, last run on commit {commit[:12]}",
        "",
        "| area | commit | mutants | killed | timeout | survived | no tests | equivalent "
        "| skipped | score | goal | time |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in scores:
        c = s.counts
        lines.append(
            f"| {s.area} | {s.commit[:8]} | {s.total} | {c.get('killed', 0)} "
            f"| {c.get('timeout', 0)} "
            f"| {c.get('survived', 0)} | {c.get('no tests', 0)} | {c.get('equivalent', 0)} "
            f"| {c.get('skipped', 0)} "
            f"| {s.ratio:.1%} | {goals.get(s.area, 0):.0%} | {s.seconds / 60:.1f} min |"
        )
    lines += [
        "",
        "Score: killed and timed-out mutants over all mutants less the equivalent ones. "
        "'no tests' means no test of the area's selection ran the mutated function: it "
        "counts as a survivor.",
        "",
    ]
    lines += ["## Per file", "", "| file | mutants | caught | not caught | equivalent | score |"]
    lines += ["| --- | ---: | ---: | ---: | ---: | ---: |"]
    for file in sorted({m.file for m in mutants}):
        s = score(file, [m for m in mutants if m.file == file], 0.0)
        missed = s.relevant - s.caught
        lines.append(
            f"| {file} | {s.total} | {s.caught} | {missed} | {s.counts.get('equivalent', 0)} "
            f"| {s.ratio:.1%} |"
        )
    lines.append("")
    survivors = [m for m in mutants if m.status in ("survived", "no tests")]
    lines += [f"## Surviving mutants ({len(survivors)})", ""]
    for area in dict.fromkeys(m.area for m in survivors):
        lines += [f"### {area}", "", "| file:line | where | change | status |"]
        lines += ["| --- | --- | --- | --- |"]
        for m in sorted((m for m in survivors if m.area == area), key=lambda m: (m.file, m.line)):
            lines.append(
                f"| {m.file}:{m.line} | {_escape(m.where)} | `{_escape(m.before)}` -> "
                f"`{_escape(m.after)}` | {m.status} |"
            )
        lines.append("")
    if stale:
        lines += ["## Equivalents list entries that matched no surviving mutant", ""]
        lines += [
            f"- {e.file} {e.where}: `{_escape(e.before)}` -> `{_escape(e.after)}`" for e in stale
        ]
        lines.append("")
    return "\n".join(lines)


def write_json(
    path: Path, scores: Sequence[Score], mutants: Sequence[Mutant], *, commit: str
) -> None:
    data = {
        "commit": commit,
        "scores": [
            {
                "area": s.area,
                "commit": s.commit,
                "counts": s.counts,
                "score": s.ratio,
                "seconds": round(s.seconds, 1),
            }
            for s in scores
        ],
        "mutants": [asdict(m) for m in mutants],
    }
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
