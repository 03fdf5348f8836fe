"""Mutants of the shipped machines' CEL guards: numbers and comparison operators in `when:`.

mutmut and cosmic-ray mutate Python only; a machine's behaviour lives in the CEL strings of
its YAML. This makes text mutants of those strings (`>` for `>=`, `0` for `1`, ...), each a
copy of one file with one token changed, so every other byte and every line number stays as
written, and runs the fast tests that load the shipped machines against each.
"""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tools.mutation.areas import Area
from tools.mutation.report import Mutant, Status

_KEY = re.compile(r"^(?P<indent>\s*)(?:-\s+)?when:\s*(?P<rest>.*)$")
_BLOCK = re.compile(r"^[>|][-+]?\d*\s*(#.*)?$")
# A CEL string literal (left alone), a comparison operator, or an integer literal.
_TOKEN = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|>=|<=|==|!=|>|<|(?<![\w.])\d+(?![\w.])"
)
_SWAP = {">=": ">", ">": ">=", "<=": "<", "<": "<=", "==": "!=", "!=": "=="}


@dataclass(frozen=True)
class GuardMutant:
    file: str
    line: int  # 1-based
    column: int  # 0-based, in the line
    old: str
    new: str
    guard: str  # the whole guard, whitespace collapsed: where it is, for the equivalents list

    @property
    def ident(self) -> str:
        return f"{self.file}:{self.line}:{self.column + 1} {self.old}->{self.new}"


def _guards(lines: Sequence[str]) -> Iterator[list[tuple[int, int, int]]]:
    """Each `when:` guard as spans (line index, start column, end column) of its CEL text."""
    i = 0
    while i < len(lines):
        m = _KEY.match(lines[i])
        i += 1
        if not m:
            continue
        rest, indent = m["rest"], len(m["indent"])
        start = m.start("rest")
        if _BLOCK.match(rest):
            spans = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
                if lines[i].strip():
                    spans.append((i, _indent(lines[i]), len(lines[i])))
                i += 1
            yield spans
        elif rest[:1] in "\"'" and rest:
            quote = rest[0]
            if len(rest) > 1 and rest.rstrip().endswith(quote):
                yield [(i - 1, start + 1, start + len(rest.rstrip()) - 1)]
            else:  # a quoted scalar over several lines
                spans = [(i - 1, start + 1, len(lines[i - 1]))]
                while i < len(lines) and not lines[i].rstrip().endswith(quote):
                    spans.append((i, _indent(lines[i]), len(lines[i])))
                    i += 1
                if i < len(lines):
                    spans.append((i, _indent(lines[i]), len(lines[i].rstrip()) - 1))
                    i += 1
                yield spans
        elif rest:
            yield [(i - 1, start, len(lines[i - 1].rstrip()))]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _replacements(token: str) -> list[str]:
    if token in _SWAP:
        return [_SWAP[token]]
    if token.isdigit():
        n = int(token)
        return [str(n + 1)] + ([str(n - 1)] if n > 0 else [])
    return []  # a string literal: left alone


def mutants_of(path: Path, root: Path) -> list[GuardMutant]:
    lines = path.read_text().split("\n")
    found = []
    for spans in _guards(lines):
        guard = " ".join(lines[n][a:b].strip() for n, a, b in spans)
        for n, a, b in spans:
            for t in _TOKEN.finditer(lines[n], a, b):
                for new in _replacements(t.group()):
                    name = str(path.relative_to(root))
                    found.append(GuardMutant(name, n + 1, t.start(), t.group(), new, guard))
    return found


def apply(mutant: GuardMutant, text: str) -> str:
    lines = text.split("\n")
    line = lines[mutant.line - 1]
    assert line[mutant.column : mutant.column + len(mutant.old)] == mutant.old, mutant
    end = mutant.column + len(mutant.old)
    lines[mutant.line - 1] = line[: mutant.column] + mutant.new + line[end:]
    return "\n".join(lines)


def _pytest(copy: Path, tests: Sequence[str], timeout: float) -> tuple[int | None, float]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=copy,
            capture_output=True,
            timeout=timeout,
            env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(copy)},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - started
    return done.returncode, time.monotonic() - started


def _status(code: int | None) -> Status:
    if code is None:
        return "timeout"
    if code == 0:
        return "survived"
    if code == 5:
        return "no tests"
    return "killed"  # a failure, or a machine that no longer loads (collection error)


def run_area(area: Area, snapshot: Path, work: Path, *, jobs: int) -> tuple[list[Mutant], float]:
    started = time.monotonic()
    copies = []
    for n in range(jobs):
        copy = work / area.name / f"worker-{n}"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(snapshot, copy)
        copies.append(copy)
    files = sorted({p for pattern in area.sources for p in snapshot.glob(pattern)})
    planted = [m for f in files for m in mutants_of(f, snapshot)]

    code, baseline = _pytest(copies[0], area.tests, timeout=600)
    if code != 0:
        raise RuntimeError(
            f"the tests of {area.name} fail without a mutant (exit {code}) in {copies[0]}"
        )
    timeout = max(60.0, 4 * baseline)

    free: queue.Queue[Path] = queue.Queue()
    for copy in copies:
        free.put(copy)

    def run_one(m: GuardMutant) -> Mutant:
        copy = free.get()
        target = copy / m.file
        original = target.read_text()
        try:
            target.write_text(apply(m, original))
            code, _ = _pytest(copy, area.tests, timeout)
        finally:
            target.write_text(original)
            free.put(copy)
        line = original.split("\n")[m.line - 1].strip()
        mutated = apply(m, original).split("\n")[m.line - 1].strip()
        return Mutant(area.name, m.ident, m.file, m.line, m.guard, line, mutated, _status(code))

    results = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for n, result in enumerate(pool.map(run_one, planted), 1):
            results.append(result)
            if n % 10 == 0 or n == len(planted):
                print(f"  {area.name}: {n}/{len(planted)} mutants tested", flush=True)
    return results, time.monotonic() - started
