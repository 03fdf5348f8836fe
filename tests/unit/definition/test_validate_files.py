"""How `jobmachine validate` gathers its files: folders with or without their subfolders, a
missing path among others, every file's read problems, bases found beside the files named
(each folder searched once, what one folder gave kept), and `job` typed by the schemas
given, in the report's notes and in `load_with_positions`."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.definition import loader, validate
from engine.definition.cel_types import JobSchema
from engine.definition.validate import (
    definition_files,
    load_with_positions,
    validate_report,
)
from tests.unit.definition.test_validate import write
from tests.unit.definition.texts import JOB, abstract, document, extending

# `job.spec.size` compared with a number: an error only where `job` is typed.
SIZED = document(job=JOB.replace("restarts == 0", "job.spec.size > 2"))
SIZE_IS_TEXT = {
    "type": "object",
    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "string"}}}},
}


def knows_demo(api_version: str, kind: str) -> JobSchema | None:
    return JobSchema(SIZE_IS_TEXT, kind) if kind == "Demo" else None


def test_a_folder_without_its_subfolders(tmp_path: Path) -> None:
    top = write(tmp_path, "top.yaml", document())
    below = write(tmp_path, "sub/below.yml", document())
    assert list(definition_files([tmp_path], recursive=False)) == [top]
    assert list(definition_files([tmp_path])) == [below, top]


def test_a_missing_path_does_not_stop_the_paths_after_it(tmp_path: Path) -> None:
    given = write(tmp_path, "demo.yaml", document())
    report = validate_report([tmp_path / "nope.yaml", given])
    assert [str(d) for d in report.diagnostics] == [
        f"{tmp_path}/nope.yaml:1:1: error: no such file or folder"
    ]
    assert report.machines == 1


def test_the_read_problems_of_every_file_are_kept(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", "spec: [\n")
    second = write(tmp_path, "b.yaml", "spec: [\n")
    files = {d.position.file for d in validate_report([first, second]).diagnostics}
    assert files == {str(first), str(second)}


def test_a_folder_is_searched_for_bases_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "base.yaml", abstract(document()))
    one = write(tmp_path, "one.yaml", extending(name="one", kind="One"))
    two = write(tmp_path, "two.yaml", extending(name="two", kind="Two"))
    searched: list[Path] = []
    real = validate.folder_bases

    def spy(path: Path, *args: object, **kwargs: object) -> object:
        searched.append(path.parent)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(validate, "folder_bases", spy)
    report = validate_report([one, two])
    assert (report.diagnostics, report.machines) == ([], 2)
    assert searched == [tmp_path]



def test_the_files_named_are_not_read_again_when_their_folder_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = write(tmp_path, "base.yaml", abstract(document()))
    one = write(tmp_path, "one.yaml", extending(name="one", kind="One"))
    two = write(tmp_path, "two.yaml", document().replace("name: demo", "name: two"))
    read: list[str] = []
    real = loader.read_text
    monkeypatch.setattr(
        loader, "read_text", lambda text, name: read.append(name) or real(text, name)
    )
    report = validate_report([one, two])
    assert (report.diagnostics, report.machines) == ([], 2)
    assert sorted(read) == [str(base), str(one), str(two)]

def test_a_base_found_beside_one_file_is_kept_when_the_next_folder_is_searched(
    tmp_path: Path,
) -> None:
    write(tmp_path, "kinds/base.yaml", abstract(document()))
    child = write(tmp_path, "kinds/child.yaml", extending())
    other = write(tmp_path, "more/other.yaml", document().replace("kind: Demo", "kind: Other"))
    report = validate_report([child, other])
    assert (report.diagnostics, report.machines) == ([], 2)


def test_without_shipped_machines_the_search_says_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validate, "shipped_dir_if_present", lambda name: None)
    child = write(tmp_path, "child.yaml", extending(base="nowhere"))
    assert [str(d) for d in validate_report([child]).diagnostics] == [
        f"{child}:5:12: error: no machine named 'nowhere' to extend; looked in the files given, "
        f"{tmp_path}/, the shipped machines (none: no machines/ beside the package)"
    ]


def test_a_kind_the_schemas_know_gets_no_untyped_note(tmp_path: Path) -> None:
    given = write(tmp_path, "demo.yaml", document())
    assert validate_report([given], knows_demo).notes == []
    assert validate_report([given], lambda api_version, kind: None).notes == [
        f"{given}:5:12: note: no CRD or kind description of Demo (example.dev/v1) beside the "
        "machine or given with --kind: `job` is not typed"
    ]


def test_load_with_positions_types_job_by_the_schemas_given(tmp_path: Path) -> None:
    given = write(tmp_path, "demo.yaml", SIZED)
    compiled, diagnostics = load_with_positions([given], knows_demo)
    assert compiled == []
    assert [str(d) for d in diagnostics] == [
        f"{given}:12:56: error: CEL type error: found no matching overload for '_>_' applied "
        "to '(string, int)'"
    ]
    compiled, diagnostics = load_with_positions([given])
    assert (len(compiled), diagnostics) == (1, [])
