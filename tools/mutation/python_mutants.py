"""Python mutants through mutmut: one copy per area kept between runs, mutmut run in it,
results read back.

mutmut 3 copies the package into `mutants/`, replaces each function by a trampoline to its
mutants, records once which tests run which function, then runs each mutant against those
tests only, forking from a warmed process: far faster than a pytest start per mutant. Run
again in the same copy it keeps the verdicts of functions whose source did not change;
`kept_copy` brings the copy up to the next commit and undoes what it would keep wrongly.
"""

from __future__ import annotations

import ast
import configparser
import difflib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from fnmatch import fnmatch
from pathlib import Path

from tools.mutation import kept_copy
from tools.mutation.areas import Area
from tools.mutation.report import Equivalent, Mutant, Status, mark_equivalents

# mutmut's statuses (mutmut.stats.status_by_exit_code) as the report counts them.
_STATUS: dict[str, Status] = {
    "killed": "killed",
    "caught by type check": "killed",
    "suspicious": "killed",  # the tests ran far slower than usual: they noticed
    "segfault": "killed",
    "timeout": "timeout",
    "survived": "survived",
    "no tests": "no tests",
}


_NOT_CAUGHT: frozenset[Status] = frozenset({"survived", "no tests", "skipped"})

# The cache-emptying plugin, copied to the top of each copy, where the tests can import it.
_PLUGIN = Path("mutation_fresh_caches.py")
_PLUGIN_SOURCE = Path(__file__).with_name("fresh_caches.py")
_CONFIG = "setup.cfg"
# mutmut's options whose change makes it forget every verdict (Config.config_fingerprint).
_SELECTION = "pytest_add_cli_args_test_selection"
_ARGS = "pytest_add_cli_args"
_LOG = "mutmut.log"
# Top-level entries of a copy that are not the commit's files.
_OWN = frozenset({kept_copy.MUTANTS, kept_copy.STATE, _CONFIG, _LOG, str(_PLUGIN)})


def _setup_cfg(area: Area, copy: Path) -> str:
    own = {"engine", "tests", "pyproject.toml", *_OWN}  # mutmut copies these itself
    also_copy = sorted([*(p.name for p in copy.iterdir() if p.name not in own), str(_PLUGIN)])
    lines = ["[mutmut]", "source_paths=engine", "only_mutate="]
    lines += [f"    {s}" for s in area.sources]
    lines += ["also_copy="] + [f"    {p}" for p in also_copy]
    lines += [f"{_SELECTION}="] + [f"    {t}" for t in area.tests]
    lines += [f"{_ARGS}="] + [f"    {a}" for a in _cli_args(area)]
    return "\n".join(lines) + "\n"


def _cli_args(area: Area) -> tuple[str, ...]:
    # Each mutant's tests stop at the first failure; no cache files in the copy.
    args = ("-x", "-p", "no:cacheprovider", "-p", _PLUGIN.stem)
    return args + tuple(x for test in area.deselect for x in ("--deselect", test))


def _option(config: str, name: str) -> tuple[str, ...]:
    """A list option of a `setup.cfg` this module wrote."""
    parser = configparser.ConfigParser()
    parser.read_string(config)
    return tuple(parser.get("mutmut", name, fallback="").split())


def run_area(
    area: Area,
    snapshot: Path,
    work: Path,
    *,
    jobs: int,
    fresh: bool = False,
    equivalents: Sequence[Equivalent] = (),
) -> tuple[list[Mutant], float]:
    """Mutate `area` in its copy of `snapshot` under `work`; the mutants with their verdicts.

    The copy of the last run is kept and brought up to `snapshot` (`fresh` makes a new one):
    mutmut then tests the mutants of changed functions, and the mutants the last report did
    not count as caught, unless `equivalents` lists them.
    """
    copy = work / area.name
    expected = kept_copy.state(_PLUGIN_SOURCE)
    why = "--fresh" if fresh else kept_copy.reusable(copy, expected) or _tests_changed(area, copy)
    if why is None:
        _bring_up_to_date(area, snapshot, copy, equivalents)
    else:
        print(f"{area.name}: a new copy ({why})", flush=True)
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(snapshot, copy)
        kept_copy.write_state(copy, expected)
    shutil.copy(_PLUGIN_SOURCE, copy / _PLUGIN)
    (copy / _CONFIG).write_text(_setup_cfg(area, copy))
    before = kept_copy.verdicts(copy)
    mutmut = Path(sys.executable).with_name("mutmut")
    log = copy / _LOG
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(
            [str(mutmut), "run", "--max-children", str(jobs)],
            cwd=copy,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            check=False,
        )
    seconds = time.monotonic() - started
    said = log.read_text(errors="replace")
    if done.returncode != 0 and _NO_TESTS_REACH in said and not collect(area, copy):
        # mutmut stops so when nothing was mutated (a file of decorated functions only).
        print(f"{area.name}: nothing to mutate in the files chosen", flush=True)
        return [], seconds
    if done.returncode != 0:
        raise RuntimeError(
            f"mutmut failed in {copy} (exit {done.returncode}); log {log}:\n{said[-3000:]}")
    mutants = collect(area, copy)
    tested = kept_copy.judged_anew(before, kept_copy.verdicts(copy))
    print(f"{area.name}: mutmut judged {tested} of {len(mutants)} mutants this run", flush=True)
    return mutants, seconds


# What mutmut 3 says when no test of the selection runs a mutated function.
_NO_TESTS_REACH = "could not find any test case for any mutant"


def _bring_up_to_date(
    area: Area, snapshot: Path, copy: Path, equivalents: Sequence[Equivalent]
) -> None:
    """The kept copy becomes the snapshot's files, with what mutmut would keep wrongly undone."""
    config = (copy / _CONFIG).read_text()
    before = replace(area, sources=_option(config, "only_mutate"))
    again = _not_caught(before, copy, equivalents)  # read while the copy is as it was judged
    changes = kept_copy.differences(snapshot, copy, own=_OWN)
    sources = (p.relative_to(copy).as_posix() for p in (copy / "engine").rglob("*.py"))
    newly = [rel for rel in sources if _mutated(area, rel) and not _mutated(before, rel)]
    relearn = kept_copy.relearn(
        snapshot, copy, changes, lambda rel: _mutated(area, rel), newly=bool(newly)
    )
    kept_copy.apply(snapshot, copy, changes)
    kept_copy.drop_stale_mutants(
        copy, [*changes.changed, *changes.removed, *newly], removed=changes.removed
    )
    kept_copy.drop_strays(copy)
    forgotten = kept_copy.forget_tests(copy, changes, relearn)
    cleared = kept_copy.judge_again(copy, again)
    print(
        f"{area.name}: kept copy, {len(changes.changed)} files changed and "
        f"{len(changes.removed)} removed since its last run, {len(relearn.functions)} "
        f"functions changed; {cleared} mutants not caught last time to test again; "
        f"{forgotten} tests whose coverage mutmut learns again",
        flush=True,
    )


def _tests_changed(area: Area, copy: Path) -> str | None:
    """Why the kept copy's verdicts do not hold for `area`'s tests, if they do not: mutmut
    forgets every verdict when its test selection or pytest options change."""
    config = (copy / _CONFIG).read_text()
    if (_option(config, _SELECTION), _option(config, _ARGS)) != (area.tests, _cli_args(area)):
        return "the area's tests or their options changed since the kept run"
    return None


def _not_caught(area: Area, copy: Path, equivalents: Sequence[Equivalent]) -> dict[str, list[str]]:
    """mutmut's keys, by file, of the mutants of `copy` the report would not count as caught
    and the equivalents list does not name."""
    found: dict[str, list[str]] = defaultdict(list)
    not_caught = collect(area, copy, statuses=_NOT_CAUGHT)
    for m in mark_equivalents(not_caught, equivalents):
        if m.status != "equivalent":
            found[m.file].append(m.ident)
    return found


def _mutated(area: Area, rel: str) -> bool:
    return any(fnmatch(rel, s) for s in area.sources)


@contextmanager
def _inside(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def collect(area: Area, copy: Path, *, statuses: Collection[Status] | None = None) -> list[Mutant]:
    """Read mutmut's verdicts (the `.meta` files) and each mutant's change from `copy`: the
    mutants of the files `area` mutates (a kept copy holds the verdicts of other files it
    mutated once), only those with one of `statuses` if given."""
    from mutmut.configuration import reset_config
    from mutmut.stats import status_by_exit_code

    mutants: list[Mutant] = []
    with _inside(copy):
        reset_config()
        for meta in sorted(Path("mutants").rglob("*.py.meta")):
            source = meta.relative_to("mutants").with_suffix("")  # engine/.../x.py
            if not _mutated(area, source.as_posix()):
                continue
            codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
            original = source.read_text()
            tree = ast.parse(original)
            for key, code in codes.items():
                status = _STATUS.get(status_by_exit_code[code], "skipped")
                if statuses is not None and status not in statuses:
                    continue
                line, where, before, after = _describe(key, source, original, tree)
                mutants.append(
                    Mutant(
                        area=area.name,
                        ident=key,
                        file=str(source),
                        line=line,
                        where=where,
                        before=before,
                        after=after,
                        status=status,
                    )
                )
        reset_config()
    return mutants


def _functions(key: str, source: Path) -> tuple[str, str]:
    import libcst as cst
    from mutmut.mutation.diff_apply import (
        read_functions_from_index,
        read_mutant_function,
        read_original_function,
    )

    functions = read_functions_from_index(key, source)
    if functions is None:
        module = cst.parse_module((Path("mutants") / source).read_text())
        functions = (read_original_function(module, key), read_mutant_function(module, key))
    orig, mutant = (cst.Module([f]).code.strip() for f in functions)
    return orig, mutant


def _describe(key: str, source: Path, original: str, tree: ast.Module) -> tuple[int, str, str, str]:
    """(line in the original file, Class.function, changed text before, after)."""
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    name, class_name = orig_function_and_class_names_from_key(key)
    where = f"{class_name}.{name}" if class_name else name
    orig, mutant = _functions(key, source)
    a, b = orig.split("\n"), mutant.split("\n")
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    first = 0
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if not removed and not added:
            first = i1
        removed += [x.strip() for x in a[i1:i2]]
        added += [x.strip() for x in b[j1:j2]]
    line = _line_in_file(original, tree, name, class_name, lines=a, index=first)
    return line, where, " ⏎ ".join(removed), " ⏎ ".join(added)


def _line_in_file(
    original: str,
    tree: ast.Module,
    name: str,
    class_name: str | None,
    *,
    lines: list[str],
    index: int,
) -> int:
    """The line of `lines[index]` (a line of the function's text) in the original file."""
    node = _find(tree, name, class_name)
    if node is None or index >= len(lines):
        return 0
    file_lines = original.split("\n")
    starts = (i for i, x in enumerate(lines) if x.lstrip().startswith(("def ", "async def ")))
    def_index = next(starts, 0)
    guess = node.lineno + (index - def_index)  # 1-based
    wanted = lines[index].strip()
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or len(file_lines)
    candidates = [n for n in range(start, end + 1) if file_lines[n - 1].strip() == wanted]
    if not candidates:
        return guess
    return min(candidates, key=lambda n: abs(n - guess))


def _find(
    tree: ast.Module, name: str, class_name: str | None
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = tree.body
    if class_name is not None:
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
        if not classes:
            return None
        scope = classes[0].body
    for n in scope:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name:
            return n
    return None
