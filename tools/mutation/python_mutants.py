"""Python mutants through mutmut: one private copy per area, mutmut run in it, results read back.

mutmut 3 copies the package into `mutants/`, replaces each function by a trampoline to its
mutants, records once which tests run which function, then runs each mutant against those
tests only, forking from a warmed process: far faster than a pytest start per mutant.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.mutation.areas import Area
from tools.mutation.report import Mutant, Status

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


# The cache-emptying plugin, copied to the top of each copy, where the tests can import it.
_PLUGIN = Path("mutation_fresh_caches.py")


def _setup_cfg(area: Area, copy: Path) -> str:
    own = {"engine", "tests", "pyproject.toml", "setup.cfg"}  # mutmut copies these itself
    also_copy = sorted(p.name for p in copy.iterdir() if p.name not in own)
    lines = ["[mutmut]", "source_paths=engine", "only_mutate="]
    lines += [f"    {s}" for s in area.sources]
    lines += ["also_copy="] + [f"    {p}" for p in also_copy]
    lines += ["pytest_add_cli_args_test_selection="] + [f"    {t}" for t in area.tests]
    # Each mutant's tests stop at the first failure; no cache files in the copy.
    lines += ["pytest_add_cli_args=", "    -x", "    -p", "    no:cacheprovider"]
    lines += ["    -p", f"    {_PLUGIN.stem}"]
    lines += [x for test in area.deselect for x in ("    --deselect", f"    {test}")]
    return "\n".join(lines) + "\n"


def run_area(area: Area, snapshot: Path, work: Path, *, jobs: int) -> tuple[list[Mutant], float]:
    """Mutate `area` in a copy of `snapshot` under `work`; the mutants with their verdicts."""
    copy = work / area.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(snapshot, copy)
    shutil.copy(Path(__file__).with_name("fresh_caches.py"), copy / _PLUGIN)
    (copy / "setup.cfg").write_text(_setup_cfg(area, copy))
    mutmut = Path(sys.executable).with_name("mutmut")
    log = copy / "mutmut.log"
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
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"mutmut failed in {copy} (exit {done.returncode}); log {log}:\n{tail}")
    return collect(area, copy), seconds


@contextmanager
def _inside(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def collect(area: Area, copy: Path) -> list[Mutant]:
    """Read mutmut's verdicts (the `.meta` files) and each mutant's change from `copy`."""
    from mutmut.configuration import reset_config
    from mutmut.stats import status_by_exit_code

    mutants: list[Mutant] = []
    with _inside(copy):
        reset_config()
        for meta in sorted(Path("mutants").rglob("*.py.meta")):
            source = meta.relative_to("mutants").with_suffix("")  # engine/.../x.py
            codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
            original = source.read_text()
            tree = ast.parse(original)
            for key, code in codes.items():
                status = _STATUS.get(status_by_exit_code[code], "skipped")
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
