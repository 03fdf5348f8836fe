"""benchmarks/compare.py's command line (no server): workload sizes of 0 are refused at once,
with argparse's usage error, instead of a run that waits for an end that never comes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare.py"


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("given", "said"), [
    (["--wide", "0"], "argument --wide: 0 is not a count: each must be at least 1"),
    (["--jobs", "0"], "argument --jobs: 0 is not a count: each must be at least 1"),
    (["--jobs", "100,-3"], "argument --jobs: -3 is not a count: each must be at least 1"),
    (["--wide", "ten"], "argument --wide: 'ten' is not a whole number"),
])
def test_a_workload_of_no_jobs_or_workers_is_refused(
        compare: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        given: list[str], said: str) -> None:
    monkeypatch.setattr(sys, "argv", ["compare.py", *given])
    with pytest.raises(SystemExit) as exited:
        compare.parse_args()
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


def test_counts_are_read_as_given(compare: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["compare.py", "--jobs", "100, 300,", "--wide", ""])
    args = compare.parse_args()
    assert (args.jobs, args.wide) == ([100, 300], [])
