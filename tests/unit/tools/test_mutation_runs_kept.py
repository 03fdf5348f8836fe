"""The mutation tool run twice in one work folder over a tiny project: the second run
judges the mutants of the changed function and the first run's survivors, nothing else.

Each test of the tiny project writes the mutant it runs under (mutmut's MUTANT_UNDER_TEST)
into a log, so what mutmut really ran is read there, not inferred from its files.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

pytest.importorskip("mutmut", reason="the mutation extra is not installed")

from tools.mutation import python_mutants
from tools.mutation.areas import Area
from tools.mutation.report import Equivalent, Mutant

pytestmark = pytest.mark.slow

CALC = """
def add(a, b):
    return a + b


def double(x):
    return x * 2


def bigger(a, b):
    return a > b


def smaller(a, b):
    return a < b
"""

TESTS = """
import os

from engine.calc import add, bigger, double, smaller


def _log():
    with open(os.environ["KEPT_COPY_LOG"], "a") as f:
        f.write(os.environ.get("MUTANT_UNDER_TEST", "") + "\\n")


def test_add():
    _log()
    assert add(2, 3) == 5


def test_double():
    _log()
    assert double(4) == 8


def test_order():
    _log()
    assert bigger(3, 2)
    assert smaller(2, 3)
"""

AREA = Area(
    name="tiny", kind="python", sources=("engine/calc.py",), tests=("tests",), goal=0.9, summary=""
)

# `smaller`'s one mutant (`<=`) survives every test here: listed, it is not tested again.
EQUIVALENTS = (
    Equivalent(
        file="engine/calc.py",
        where="smaller",
        before="return a < b",
        after="return a <= b",
        reason="for this test",
    ),
)


def _commit(snapshot: Path, calc: str, tests: str) -> None:
    shutil.rmtree(snapshot, ignore_errors=True)
    (snapshot / "engine").mkdir(parents=True)
    (snapshot / "tests").mkdir()
    (snapshot / "engine" / "__init__.py").write_text("")
    (snapshot / "engine" / "calc.py").write_text(calc)
    (snapshot / "tests" / "test_calc.py").write_text(tests)


@dataclass
class Run:
    mutants: dict[str, Mutant]  # by mutmut's key
    ran: set[str]  # the mutants whose tests ran


def _run(root: Path, *, fresh: bool = False, area: Area = AREA) -> Run:
    log = root / "log"
    log.unlink(missing_ok=True)
    mutants, _ = python_mutants.run_area(
        area, root / "snapshot", root / "work", jobs=1, fresh=fresh, equivalents=EQUIVALENTS
    )
    ran = {line for line in log.read_text().split() if "__mutmut_" in line}
    return Run({m.ident: m for m in mutants}, ran)


def _of(function: str, names: set[str] | dict[str, Mutant]) -> set[str]:
    return {n for n in names if n.startswith(f"engine.calc.x_{function}__mutmut_")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Run, Run, Run]]:
    """The first run; the second after `add` changed and `test_add` also checks `bigger`
    at its edge; a third with `fresh`."""
    root = tmp_path_factory.mktemp("kept")
    before = os.environ.get("KEPT_COPY_LOG")
    os.environ["KEPT_COPY_LOG"] = str(root / "log")
    try:
        _commit(root / "snapshot", CALC, TESTS)
        first = _run(root)
        _commit(
            root / "snapshot",
            CALC.replace("return a + b", "return b + a"),
            TESTS.replace(
                "assert add(2, 3) == 5", "assert add(2, 3) == 5\n    assert not bigger(2, 2)"
            ),
        )
        second = _run(root)
        third = _run(root, fresh=True)
        yield first, second, third
    finally:
        if before is None:
            os.environ.pop("KEPT_COPY_LOG", None)
        else:
            os.environ["KEPT_COPY_LOG"] = before


def test_the_first_run_judges_every_mutant(runs: tuple[Run, Run, Run]) -> None:
    first, _, _ = runs
    assert first.ran == set(first.mutants)
    assert {m.status for k, m in first.mutants.items() if k in _of("bigger", first.mutants)} == {
        "survived"
    }


def test_the_second_run_judges_the_changed_function_and_the_survivors_only(
    runs: tuple[Run, Run, Run],
) -> None:
    first, second, _ = runs
    survivors = _of("bigger", first.mutants)
    assert survivors, "the tiny project must leave a survivor of an unchanged function"
    assert second.ran == _of("add", second.mutants) | survivors
    assert set(second.mutants) == set(first.mutants)
    assert all(second.mutants[k].status == "killed" for k in _of("double", first.mutants))


def test_a_changed_test_is_learned_again_and_kills_an_earlier_survivor(
    runs: tuple[Run, Run, Run],
) -> None:
    _, second, _ = runs
    assert {second.mutants[k].status for k in _of("bigger", second.mutants)} == {"killed"}


def test_a_survivor_listed_as_equivalent_is_not_tested_again(runs: tuple[Run, Run, Run]) -> None:
    first, second, _ = runs
    listed = _of("smaller", first.mutants)
    assert listed and {first.mutants[k].status for k in listed} == {"survived"}
    assert not listed & second.ran
    assert {second.mutants[k].status for k in listed} == {"survived"}


def test_fresh_judges_every_mutant_again(runs: tuple[Run, Run, Run]) -> None:
    _, second, third = runs
    assert third.ran == set(third.mutants) == set(second.mutants)


def test_a_file_mutated_for_the_first_time_in_a_kept_copy_is_judged_by_its_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mutmut copies a file it does not mutate over its own copy, newer than the source, and
    knows no test that runs it: when an area widens to that file, a kept copy must mutate it
    and learn its tests, or its mutants would be missing or all 'no tests'."""
    monkeypatch.setenv("KEPT_COPY_LOG", str(tmp_path / "log"))
    checked = (
        "\n\ndef test_triple():\n    from engine.more import triple\n\n    assert triple(2) == 6\n"
    )
    _commit(tmp_path / "snapshot", CALC, TESTS + checked)
    (tmp_path / "snapshot" / "engine" / "more.py").write_text("def triple(x):\n    return x * 3\n")
    _run(tmp_path)
    wider = replace(AREA, sources=("engine/calc.py", "engine/more.py"))
    mutants, _ = python_mutants.run_area(wider, tmp_path / "snapshot", tmp_path / "work", jobs=1)
    judged = [m.status for m in mutants if m.file == "engine/more.py"]
    assert judged and set(judged) == {"killed"}


def test_a_change_of_the_area_s_tests_judges_every_mutant_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """mutmut forgets every verdict when its test selection changes: the copy is made anew,
    and the tool says why and counts every mutant as judged."""
    monkeypatch.setenv("KEPT_COPY_LOG", str(tmp_path / "log"))
    _commit(tmp_path / "snapshot", CALC, TESTS)
    _run(tmp_path)
    capsys.readouterr()
    again = _run(tmp_path, area=replace(AREA, tests=("tests/test_calc.py",)))
    assert again.ran == set(again.mutants)
    assert capsys.readouterr().out.splitlines() == [
        "tiny: a new copy (the area's tests or their options changed since the kept run)",
        f"tiny: mutmut judged {len(again.mutants)} of {len(again.mutants)} mutants this run",
    ]


def test_a_file_with_nothing_to_mutate_is_no_mutants_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mutmut leaves decorated functions alone and stops with an error when it mutated
    nothing (engine/definition/schema.py: pydantic validators only): the area has no
    mutants, which the report says, instead of the run failing."""
    monkeypatch.setenv("KEPT_COPY_LOG", str(tmp_path / "log"))
    decorated = "import functools\n\n\n@functools.cache\ndef one():\n    return 1\n"
    _commit(tmp_path / "snapshot", decorated, "from engine.calc import one\n\n\n"
            "def test_one():\n    assert one() == 1\n")
    mutants, _ = python_mutants.run_area(AREA, tmp_path / "snapshot", tmp_path / "work", jobs=1)
    assert mutants == []
