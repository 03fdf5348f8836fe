"""How a kept copy is brought up to a commit: which files differ, what mutmut must learn
again about which tests run which function, and when a copy cannot be kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mutmut", reason="the mutation extra is not installed")

from tools.mutation import kept_copy
from tools.mutation.kept_copy import Changes, Relearn

OWN = {"mutants", "setup.cfg"}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_only_the_files_that_differ_are_copied_and_the_gone_ones_deleted(tmp_path: Path) -> None:
    snapshot, copy = tmp_path / "snapshot", tmp_path / "copy"
    _write(snapshot, {"engine/a.py": "a", "engine/b.py": "b2", "tests/new.py": "n"})
    _write(
        copy,
        {
            "engine/a.py": "a",
            "engine/b.py": "b1",
            "engine/gone.py": "g",
            "engine/__pycache__/a.pyc": "x",
            "mutants/engine/a.py": "mutated",
            "setup.cfg": "[mutmut]",
        },
    )
    changes = kept_copy.differences(snapshot, copy, own=OWN)
    assert changes == Changes(changed=("engine/b.py", "tests/new.py"), removed=("engine/gone.py",))
    kept_copy.apply(snapshot, copy, changes)
    assert kept_copy.differences(snapshot, copy, own=OWN) == Changes((), ())
    assert (copy / "mutants/engine/a.py").read_text() == "mutated"
    assert not (copy / "engine/gone.py").exists()


def test_a_gone_file_takes_its_verdicts_with_it(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "mutants/engine/gone.py": "",
            "mutants/engine/gone.py.meta": "{}",
            "mutants/engine/b.py": "",
            "mutants/engine/b.py.meta": "{}",
        },
    )
    kept_copy.drop_stale_mutants(
        tmp_path, ["engine/gone.py", "engine/b.py"], removed={"engine/gone.py"}
    )
    left = sorted(p.name for p in (tmp_path / "mutants/engine").iterdir())
    assert left == ["b.py.meta"]


TESTS = {
    "engine.calc.x_add": ["tests/a/test_x.py::test_add"],
    "engine.calc.x_sub": ["tests/a/test_y.py::test_sub"],
    "engine.other.x_f": ["tests/b/test_z.py::test_f", "tests/a/test_x.py::test_both"],
}


def _forget(tmp_path: Path, changed: tuple[str, ...], relearn: Relearn) -> set[str]:
    """The tests mutmut no longer knows after `forget_tests`: it learns them again."""
    stats = tmp_path / "mutants" / kept_copy.STATS
    stats.parent.mkdir(parents=True, exist_ok=True)
    known = {t for tests in TESTS.values() for t in tests}
    stats.write_text(
        json.dumps(
            {"tests_by_mangled_function_name": TESTS, "duration_by_test": dict.fromkeys(known, 0.1)}
        )
    )
    kept_copy.forget_tests(tmp_path, Changes(changed=changed, removed=()), relearn)
    after = json.loads(stats.read_text())
    still = set(after["duration_by_test"]) & {
        t for ts in after["tests_by_mangled_function_name"].values() for t in ts
    }
    return known - still


NOTHING = Relearn(frozenset(), frozenset(), everything=False)


def test_the_tests_of_a_changed_test_file_are_learned_again(tmp_path: Path) -> None:
    assert _forget(tmp_path, ("tests/b/test_z.py",), NOTHING) == {"tests/b/test_z.py::test_f"}


def test_a_changed_test_module_outside_the_selection_makes_nothing_learned_again(
    tmp_path: Path,
) -> None:
    assert _forget(tmp_path, ("tests/test_elsewhere.py", "tests/a/b_test.py"), NOTHING) == set()


def test_a_changed_helper_makes_every_test_of_its_folder_learned_again(tmp_path: Path) -> None:
    assert _forget(tmp_path, ("tests/a/conftest.py",), NOTHING) == {
        "tests/a/test_x.py::test_add",
        "tests/a/test_x.py::test_both",
        "tests/a/test_y.py::test_sub",
    }


def test_the_tests_of_a_changed_function_are_learned_again(tmp_path: Path) -> None:
    relearn = Relearn(frozenset({"engine.other.x_f"}), frozenset(), everything=False)
    assert _forget(tmp_path, ("engine/other.py",), relearn) == {
        "tests/b/test_z.py::test_f",
        "tests/a/test_x.py::test_both",
    }


def test_a_module_that_gained_a_function_has_all_its_tests_learned_again(tmp_path: Path) -> None:
    relearn = Relearn(frozenset(), frozenset({"engine.calc"}), everything=False)
    assert _forget(tmp_path, ("engine/calc.py",), relearn) == {
        "tests/a/test_x.py::test_add",
        "tests/a/test_y.py::test_sub",
    }


def test_changed_functions_and_gained_ones_are_read_by_mutmut_s_hash(tmp_path: Path) -> None:
    snapshot, copy = tmp_path / "snapshot", tmp_path / "copy"
    old = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    # why\n    return a - b\n"
    new = (
        "def add(a, b):\n    return b + a\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
        "def neg(a):\n    return -a\n"
    )
    _write(copy, {"engine/calc.py": old})
    _write(snapshot, {"engine/calc.py": new})
    changes = kept_copy.differences(snapshot, copy, own=OWN)
    relearn = kept_copy.relearn(snapshot, copy, changes, lambda rel: True, newly=False)
    assert relearn == Relearn(
        frozenset({"engine.calc.x_add", "engine.calc.x_neg"}),
        frozenset({"engine.calc"}),
        everything=False,
    )


def test_a_copy_judged_with_another_mutmut_is_made_afresh(tmp_path: Path) -> None:
    assert kept_copy.reusable(tmp_path, {"mutmut": "3.8.1"}) == "no kept copy"
    (tmp_path / "mutants").mkdir()
    assert kept_copy.reusable(tmp_path, {"mutmut": "3.8.1"}) is not None
    kept_copy.write_state(tmp_path, {"mutmut": "3.8.0"})
    assert "mutmut" in (kept_copy.reusable(tmp_path, {"mutmut": "3.8.1"}) or "")
    kept_copy.write_state(tmp_path, {"mutmut": "3.8.1"})
    assert kept_copy.reusable(tmp_path, {"mutmut": "3.8.1"}) is None


def test_a_test_put_into_mutmut_s_copy_by_hand_is_dropped(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "engine/a.py": "",
            "tests/test_a.py": "",
            "mutants/engine/a.py": "mutated",
            "mutants/engine/a.py.meta": "{}",
            "mutants/mutmut-stats.json": "{}",
            "mutants/tests/test_a.py": "",
            "mutants/tests/test_by_hand.py": "",
        },
    )
    assert kept_copy.drop_strays(tmp_path) == ["tests/test_by_hand.py"]
    left = {p.relative_to(tmp_path / "mutants").as_posix() for p in tmp_path.rglob("mutants/**/*")}
    assert left == {
        "engine",
        "engine/a.py",
        "engine/a.py.meta",
        "mutmut-stats.json",
        "tests",
        "tests/test_a.py",
    }
