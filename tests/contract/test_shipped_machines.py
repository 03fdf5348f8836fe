"""Every machine shipped in `machines/` validates cleanly and its CEL runs on both engines.

The checker (`cel_expr_python`) and the evaluator (`cel`) must both accept every
expression, or a definition that validated could fail at run time.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import cel
import pytest
from cel_expr_python import cel as celcpp
from cel_expr_python.ext import ext_encoders, ext_math, ext_strings

from engine.api.kind_schemas import kind_schema_lookup
from engine.definition.cel import ENGINE_FUNCTIONS, Scope, cel_type
from engine.definition.cel_types import cel_types
from engine.definition.expressions import compile_expressions
from engine.definition.loader import load_file
from engine.definition.validate import job_schema, validate_paths, validate_report

MACHINES = Path(__file__).resolve().parents[2] / "machines"
FILES = sorted(p for p in MACHINES.glob("*") if p.suffix in (".yaml", ".yml"))
UPSTREAM_CRDS = Path(__file__).resolve().parent / "kubeflow_crds"
SCHEMAS = kind_schema_lookup([MACHINES])
"""The shipped kinds' schemas (crds/), which `job` is typed against as validate does."""


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_validates_without_errors_or_warnings(path: Path) -> None:
    assert [str(d) for d in validate_paths([path])] == []


def _checker(scope: Scope) -> celcpp.Env:
    types = cel_types(scope.types)
    variables = {v.name: cel_type(v.cel_type, types) for v in scope.variables}
    extensions = [ext_strings.ExtStrings(), ext_math.ExtMath(), ext_encoders.ExtEncoders()]
    # The engine's own functions (sum) are part of the language: declared, not built in.
    functions = [f.checker_declaration() for f in ENGINE_FUNCTIONS.values()]
    return celcpp.NewEnv(descriptor_pool=types.pool, variables=variables,
                         extensions=extensions, functions=functions)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_expression_compiles_with_both_implementations(path: Path) -> None:
    # Each in the scope the engine checked it in (the table keeps it).
    sources: list[tuple[str, Scope]] = []
    for loaded in load_file(path):
        table = compile_expressions(loaded, job_schema(loaded, SCHEMAS))
        assert table.diagnostics == []
        sources += [(e.source, table.scopes[p]) for p, e in table.expressions.items()]
        sources += [(part.expression.source, table.scopes[p]) for p, t in table.templates.items()
                    for part in t.parts if part.expression is not None]
    assert sources, "a machine without any CEL is unlikely: is the walk broken?"
    for source, scope in sources:
        _checker(scope).compile(source)
        cel.compile(source)


def test_the_kubeflow_machines_validate_against_kubeflows_own_crds(tmp_path: Path) -> None:
    """A cluster may serve PyTorchJob and TFJob with the training operator's CRDs, whose
    status is typed (ours is open): every expression of the shipped machines must hold
    against them too, or the engine would refuse its own machines there."""
    for packed in sorted(UPSTREAM_CRDS.glob("*.yaml.gz")):
        (tmp_path / packed.name.removesuffix(".gz")).write_bytes(gzip.decompress(
            packed.read_bytes()))
    schemas = kind_schema_lookup([MACHINES], [tmp_path])
    for kind in ("PyTorchJob", "TFJob"):
        found = schemas("kubeflow.org/v1", kind)
        assert found is not None and "properties" in found.schema["properties"]["status"]
    assert [str(d) for d in validate_report([MACHINES], schemas).diagnostics] == []
