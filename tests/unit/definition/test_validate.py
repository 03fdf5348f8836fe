"""`jobmachine validate` and `load_definitions`: files, folders, exit codes, sorting."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.definition import DefinitionError, load_definitions, validate_paths
from tests.unit.definition.texts import JOB, document

SHADOWED = JOB + "      - {from: Running, to: Done, reason: Later}\n"
SHADOWED = SHADOWED.replace('when: "restarts == 0"', "reason: First")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_folders_are_searched_for_yaml_files(tmp_path: Path) -> None:
    write(tmp_path, "a/one.yaml", document(job=JOB.replace("to: Done", "to: Dnoe")))
    write(tmp_path, "a/b/two.yml", document().replace("name: demo", "name: two").replace(
        "kind: Demo", "kind: Two").replace("initial: Running", "initial: Nope"))
    write(tmp_path, "a/notes.txt", "not yaml: [")
    assert [str(d) for d in validate_paths([tmp_path / "a"])] == [
        f"{tmp_path}/a/b/two.yml:7:14: error: initial state 'Nope' is not defined; "
        "states: Running, Done",
        f"{tmp_path}/a/one.yaml:12:29: error: undefined state 'Dnoe' in 'to'; states: "
        "Running, Done",
    ]


def test_a_missing_path_is_an_error_line(tmp_path: Path) -> None:
    assert [str(d) for d in validate_paths([tmp_path / "nope.yaml"])] == [
        f"{tmp_path}/nope.yaml:1:1: error: no such file or folder"
    ]


def test_diagnostics_are_sorted_by_file_line_and_column(tmp_path: Path) -> None:
    job = JOB.replace("initial: Running", "initial: Start").replace("to: Done", "to: Dnoe")
    path = write(tmp_path, "x.yaml", document(job=job))
    found = validate_paths([path])
    assert [(d.position.line, d.position.column) for d in found] == [(7, 14), (12, 29)]


def test_the_same_name_twice_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", document())
    write(tmp_path, "b.yaml", document().replace("kind: Demo", "kind: Other"))
    assert [str(d) for d in validate_paths([tmp_path])] == [
        f"{tmp_path}/b.yaml:3:18: error: definition 'demo' is already defined at "
        f"{tmp_path}/a.yaml:3:18"
    ]


def test_the_same_governed_kind_twice_is_an_error(tmp_path: Path) -> None:
    second = document().replace("name: demo", "name: again")
    write(tmp_path, "a.yaml", document() + "---\n" + second)
    assert [str(d) for d in validate_paths([tmp_path])] == [
        f"{tmp_path}/a.yaml:30:12: error: example.dev/v1 Demo is already governed by definition "
        f"'demo' ({tmp_path}/a.yaml:5:12)"
    ]


def test_load_definitions_compiles_valid_files(tmp_path: Path) -> None:
    (compiled,) = load_definitions([write(tmp_path, "a.yaml", document())])
    assert compiled.name == "demo"
    assert compiled.job.initial == "Running"


def test_load_definitions_refuses_any_error(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", document(job=JOB + "      - {from: Done, to: Running}\n"))
    with pytest.raises(DefinitionError, match="transition out of terminal state 'Done'"):
        load_definitions([path])


def test_load_definitions_accepts_warnings(tmp_path: Path) -> None:
    assert len(load_definitions([write(tmp_path, "a.yaml", document(job=SHADOWED))])) == 1


def test_cli_exit_codes_and_lines(tmp_path: Path) -> None:
    runner = CliRunner()
    good = write(tmp_path, "good.yaml", document(job=SHADOWED))
    result = runner.invoke(app, ["validate", str(good)])
    assert result.exit_code == 0
    assert result.output == (
        f"{good}:13:9: warning: this transition can never fire: an earlier transition from "
        "the same state with no 'when' (line 12) always wins\n"
        f"{good}:5:12: note: no CRD or kind description of Demo (example.dev/v1) beside the "
        "machine or given with --kind: `job` is not typed\n"
        "1 machine, 0 errors, 1 warning\n"
    )
    bad = write(tmp_path, "bad.yaml", document(job=JOB.replace("to: Done", "to: Dnoe")))
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 1
    assert result.output == (
        f"{bad}:12:29: error: undefined state 'Dnoe' in 'to'; states: Running, Done\n"
        f"{bad}:5:12: note: no CRD or kind description of Demo (example.dev/v1) beside the "
        "machine or given with --kind: `job` is not typed\n"
        "1 machine, 1 error, 0 warnings\n"
    )


def test_a_plain_on_key_warns_that_kubectl_reads_it_as_a_boolean(tmp_path: Path) -> None:
    text = document(job=JOB + "      - {from: Running, to: Done, on: deleting}\n")
    path = write(tmp_path, "m.yaml", text)
    line = text.splitlines().index("      - {from: Running, to: Done, on: deleting}") + 1
    assert [str(d) for d in validate_paths([path])] == [
        f"{path}:{line}:35: warning: unquoted key 'on': YAML 1.1 parsers, kubectl's among "
        'them, read it as a boolean, so `kubectl apply` of this file would fail; write "on": '
        "instead",
    ]
    (warned,) = validate_paths([path])
    assert warned.position.path == ("spec", "job", "transitions", 1, "on")  # the key's own
    quoted = write(tmp_path, "q.yaml", text.replace(" on: deleting", ' "on": deleting'))
    assert validate_paths([quoted]) == []
