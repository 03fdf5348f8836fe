"""An area's copy kept between runs, brought up to the next commit by the files that differ,
so that mutmut judges again only what changed.

mutmut 3.8 keeps each mutant's verdict in `mutants/<file>.meta` beside a hash of the mutated
function's source, and, run again in the same folder, keeps the verdicts of the functions
whose hash did not change; it learns which tests run which function (`mutmut-stats.json`)
only for tests it has not seen. What it would keep wrongly is undone here before it runs:
the verdicts the last report did not count as caught (a new or changed test may catch
them now), and what is known of the tests that changed or that ran a changed function.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path, PurePosixPath

# What the tool and mutmut write into a copy; never part of the commit's files.
MUTANTS = "mutants"
STATE = "mutation-copy.json"
STATS = "mutmut-stats.json"


@dataclass(frozen=True)
class Changes:
    """Paths (relative, `/`-separated) whose content differs between the copy and the commit."""

    changed: tuple[str, ...]  # new or different in the commit
    removed: tuple[str, ...]  # in the copy, not in the commit


def state(plugin: Path) -> dict[str, str]:
    """What a kept copy's verdicts depend on besides the commit: mutmut's version (it numbers
    a function's mutants) and the cache-emptying plugin the tests ran with."""
    return {
        "mutmut": version("mutmut"),
        "plugin": hashlib.sha256(plugin.read_bytes()).hexdigest()[:12],
    }


def reusable(copy: Path, expected: Mapping[str, str]) -> str | None:
    """Why `copy` cannot be brought up to date and must be made afresh; None if it can."""
    if not (copy / MUTANTS).is_dir():
        return "no kept copy"
    path = copy / STATE
    if not path.is_file():
        return "a copy from an earlier version of the tool"
    kept = json.loads(path.read_text())
    for key, value in expected.items():
        if kept.get(key) != value:
            return f"the copy was judged with another {key} ({kept.get(key)}, now {value})"
    return None


def write_state(copy: Path, values: Mapping[str, str]) -> None:
    (copy / STATE).write_text(json.dumps(dict(values), indent=1) + "\n")


def _files(root: Path, skip: Collection[str]) -> dict[str, Path]:
    """Every file under `root` by its relative path, but for the top-level entries `skip`
    and Python's byte-code caches."""
    found: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        top = here == root
        dirs[:] = [d for d in dirs if d != "__pycache__" and not (top and d in skip)]
        for name in names:
            if top and name in skip:
                continue
            path = here / name
            found[path.relative_to(root).as_posix()] = path
    return found


def differences(snapshot: Path, copy: Path, *, own: Collection[str]) -> Changes:
    """The files of `snapshot` new or different in `copy`, and those of `copy` not in it.

    `own` names the top-level entries of the copy that the tool and mutmut write.
    """
    new = _files(snapshot, ())
    old = _files(copy, own)
    changed = tuple(
        rel
        for rel, path in sorted(new.items())
        if rel not in old or old[rel].read_bytes() != path.read_bytes()
    )
    return Changes(changed=changed, removed=tuple(sorted(set(old) - set(new))))


def apply(snapshot: Path, copy: Path, changes: Changes) -> None:
    """Copy the changed files from `snapshot` and delete the removed ones. A copied file gets
    the time of copying, newer than any mutant made before it."""
    for rel in changes.changed:
        destination = copy / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(snapshot / rel, destination)
    for rel in changes.removed:
        (copy / rel).unlink()


def drop_stale_mutants(copy: Path, paths: Iterable[str], *, removed: Collection[str]) -> None:
    """Delete mutmut's copies of `paths` so that it copies and mutates them again.

    mutmut decides by modification times whether a file's mutants are current, and copies a
    data file of the package or a file it was told not to mutate over its old copy only in
    some cases; without its copy it makes a fresh one and merges the kept verdicts by hash.
    The verdicts of files gone from the commit go with them.
    """
    for rel in paths:
        target = copy / MUTANTS / rel
        target.unlink(missing_ok=True)
        if rel in removed:
            for suffix in (".meta", ".spans"):
                target.with_name(target.name + suffix).unlink(missing_ok=True)


# What mutmut itself writes into `mutants/`, beside its copies of the project's files.
_MUTMUT_FILES = ("mutmut-stats.json", "mutmut-cicd-stats.json", "mutmut-debug.log")
_MUTMUT_SUFFIXES = (".meta", ".spans")


def drop_strays(copy: Path) -> list[str]:
    """Delete the files of `mutants/` that are no copy of a file of `copy` nor mutmut's own:
    a test put there by hand to judge a mutant would otherwise run in every later run."""
    root = copy / MUTANTS
    strays = [
        rel
        for rel in _files(root, _MUTMUT_FILES)
        if not rel.endswith(_MUTMUT_SUFFIXES) and not (copy / rel).exists()
    ]
    for rel in strays:
        (root / rel).unlink()
    return strays


@dataclass(frozen=True)
class Relearn:
    """Whose tests mutmut must learn again which functions they run."""

    functions: frozenset[str]  # mutmut's names of changed functions (`engine.x.x_f`)
    modules: frozenset[str]  # modules that gained a function: every test that ran one of them
    everything: bool  # a file mutmut never mutated here: no test is known to run it


def relearn(
    snapshot: Path, copy: Path, changes: Changes, mutated: Callable[[str], bool], newly: bool
) -> Relearn:
    """What the changes (not yet applied to `copy`) make mutmut's record of which tests run
    which function miss: a changed function may call others now, a new one is run by tests
    that mutmut never saw run it, and so is every function of a file mutated for the first
    time (`newly`). Functions are compared by mutmut's own hash."""
    from mutmut.mutation.file_mutation import compute_function_hashes
    from mutmut.utils.format_utils import get_mutant_name

    def hashes(path: Path) -> dict[str, str]:
        return compute_function_hashes(path.read_text()) if path.is_file() else {}

    functions: set[str] = set()
    modules: set[str] = set()
    everything = newly
    for rel in (*changes.changed, *changes.removed):
        if not rel.endswith(".py") or not mutated(rel):
            continue
        if not (copy / rel).is_file():
            everything = True
            continue
        old, new = hashes(copy / rel), hashes(snapshot / rel)
        functions |= {
            get_mutant_name(Path(rel), f)
            for f in old.keys() | new.keys()
            if old.get(f) != new.get(f)
        }
        if new.keys() - old.keys():
            modules.add(get_mutant_name(Path(rel), "x").rpartition(".")[0])
    return Relearn(frozenset(functions), frozenset(modules), everything)


def _test_file(test: str) -> str:
    return test.partition("::")[0]


def _is_test_module(rel: str) -> bool:
    """Whether pytest collects `rel` as a test module (its default `python_files`); one the
    area does not select has no tests to learn again, and is no helper of those it does."""
    name = PurePosixPath(rel).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def forget_tests(copy: Path, changes: Changes, relearn: Relearn) -> int:
    """Make mutmut learn again which functions some tests run: those `relearn` names, the
    tests of changed test modules, and every test under the folder of another changed file
    of `tests/` (a conftest, a shared module). mutmut learns it for tests it does not know,
    so they are removed from what it knows. The number removed."""
    from mutmut.utils.format_utils import get_module_from_key

    path = copy / MUTANTS / STATS
    if not path.is_file():
        return 0
    stats = json.loads(path.read_text())
    by_function: dict[str, list[str]] = stats["tests_by_mangled_function_name"]
    durations: dict[str, float] = stats["duration_by_test"]
    known = set(durations).union(*by_function.values())
    if relearn.everything:
        forget = known
    else:
        forget = {
            t
            for f, tests in by_function.items()
            if f in relearn.functions or get_module_from_key(f) in relearn.modules
            for t in tests
        }
    for rel in (*changes.changed, *changes.removed):
        if not rel.startswith("tests/"):
            continue
        if _is_test_module(rel):
            forget |= {t for t in known if _test_file(t) == rel}
        else:
            folder = str(PurePosixPath(rel).parent) + "/"
            forget |= {t for t in known if t.startswith(folder)}
    if not forget:
        return 0
    stats["tests_by_mangled_function_name"] = {
        f: [t for t in tests if t not in forget] for f, tests in by_function.items()
    }
    stats["duration_by_test"] = {t: d for t, d in durations.items() if t not in forget}
    path.write_text(json.dumps(stats, indent=4))
    return len(forget)


def judge_again(copy: Path, keys_by_file: Mapping[str, Collection[str]]) -> int:
    """Clear the kept verdicts of these mutants (mutmut's keys, by source file), so that
    mutmut tests them again as it does a new mutant. The number cleared."""
    cleared = 0
    for rel, keys in keys_by_file.items():
        meta = copy / MUTANTS / (rel + ".meta")
        if not meta.is_file():
            continue
        data = json.loads(meta.read_text())
        codes: dict[str, int | None] = data["exit_code_by_key"]
        hits = [k for k in keys if codes.get(k) is not None]
        for key in hits:
            codes[key] = None
        if hits:
            meta.write_text(json.dumps(data, indent=4))
            cleared += len(hits)
    return cleared


def verdicts(copy: Path) -> dict[str, tuple[dict[str, str], dict[str, int | None]]]:
    """Each mutated file's function hashes and mutants' exit codes, as mutmut keeps them."""
    found: dict[str, tuple[dict[str, str], dict[str, int | None]]] = {}
    root = copy / MUTANTS
    for meta in root.rglob("*.py.meta"):
        data = json.loads(meta.read_text())
        rel = meta.relative_to(root).as_posix().removesuffix(".meta")
        found[rel] = (data.get("hash_by_function_name", {}), data["exit_code_by_key"])
    return found


def judged_anew(
    before: Mapping[str, tuple[dict[str, str], dict[str, int | None]]],
    after: Mapping[str, tuple[dict[str, str], dict[str, int | None]]],
) -> int:
    """How many mutants mutmut had to judge in a run: those without a kept verdict when it
    started (new, cleared, or of a function whose hash changed), by its own rule."""
    count = 0
    for rel, (hashes, codes) in after.items():
        old_hashes, old_codes = before.get(rel, ({}, {}))
        for key in codes:
            function = key.partition("__mutmut_")[0].rpartition(".")[2]
            kept = old_codes.get(key) is not None and old_hashes.get(function) == hashes.get(
                function
            )
            count += not kept
    return count
