"""Where validate and check find a governed kind's schema: --kind files first, then beside
the machine files, then the shipped CRDs; a kind description counts as its CRD."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.api.kind_schemas import kind_schema_lookup, schemas_in
from engine.cli import app
from engine.definition.errors import DefinitionError
from engine.shipped import shipped_dir

EXAMPLE = shipped_dir("examples") / "custom-kind"
SHARDED = ("batch.example.com/v1", "ShardedJob")


def _machine(folder: Path, field: str = "job.spec.input") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = (EXAMPLE / "shardedjob-machine.yaml").read_text().replace("job.spec.input", field)
    path = folder / "shardedjob-machine.yaml"
    path.write_text(text)
    return path


def test_a_crd_and_a_kind_description_give_the_same_schema() -> None:
    from_crd = schemas_in([EXAMPLE / "shardedjob-crd.yaml"])[SHARDED]
    from_kind = schemas_in([EXAMPLE / "shardedjob-kind.yaml"])[SHARDED]
    assert from_crd == from_kind
    assert "input" in from_crd.schema["properties"]["spec"]["properties"]


def test_the_shipped_crds_type_the_shipped_kinds(tmp_path: Path) -> None:
    lookup = kind_schema_lookup([tmp_path])
    assert lookup("kubeflow.org/v1", "PyTorchJob") is not None
    assert lookup(*SHARDED) is None


def test_a_kind_given_with_kind_wins_over_one_beside_the_machine(tmp_path: Path) -> None:
    machine = _machine(tmp_path / "machines")
    shutil.copy(EXAMPLE / "shardedjob-crd.yaml", tmp_path / "machines")
    other = tmp_path / "other-kind.yaml"
    other.write_text((EXAMPLE / "shardedjob-kind.yaml").read_text().replace(
        "    input:\n", "    source:\n").replace("required: [input]", "required: [source]"))
    beside = kind_schema_lookup([machine])(*SHARDED)
    given = kind_schema_lookup([machine], [other])(*SHARDED)
    assert beside is not None and given is not None
    assert "input" in beside.schema["properties"]["spec"]["properties"]
    assert "source" in given.schema["properties"]["spec"]["properties"]


def test_a_broken_kind_description_given_with_kind_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "kind.yaml"
    broken.write_text((EXAMPLE / "shardedjob-kind.yaml").read_text().replace(
        "  group:", "  grop:"))
    with pytest.raises(DefinitionError, match=r"kind\.yaml:11:3: error: unknown field 'grop'"):
        kind_schema_lookup([tmp_path / "machines"], [broken])


def test_validate_types_job_with_the_crd_beside_the_machine(tmp_path: Path) -> None:
    machine = _machine(tmp_path, "job.spec.inptu")
    runner = CliRunner()
    untyped = runner.invoke(app, ["validate", str(machine)])
    assert untyped.exit_code == 0, untyped.output
    assert "`job` is not typed" in untyped.output
    shutil.copy(EXAMPLE / "shardedjob-crd.yaml", tmp_path)
    typed = runner.invoke(app, ["validate", str(machine)])
    assert typed.exit_code == 1
    assert f"{machine}:22:24: error: unknown field 'inptu' of job.spec (did you mean " \
        "'input'?); its fields: failureRules, input, runPolicy, shards" in typed.output
    given = runner.invoke(app, ["validate", str(machine), "--kind",
                                str(EXAMPLE / "shardedjob-kind.yaml")])
    assert given.exit_code == 1 and "unknown field 'inptu'" in given.output


def test_a_kind_path_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"missing\.yaml:1:1: error: no such file"):
        kind_schema_lookup([tmp_path], [tmp_path / "missing.yaml"])


def test_validate_and_check_stop_on_a_missing_kind_file_without_a_traceback(
    tmp_path: Path,
) -> None:
    machine = _machine(tmp_path)
    for command in ("validate", "check"):
        result = CliRunner().invoke(app, [command, str(machine), "--kind",
                                          str(tmp_path / "missing.yaml")])
        assert result.exit_code == 1, result.output
        assert f"{tmp_path / 'missing.yaml'}:1:1: error: no such file or folder" in (
            result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
