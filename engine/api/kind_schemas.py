"""Where a machine's expressions find the schema of the kind it governs.

`jobmachine validate` and `check` type `job` against its kind (engine.definition.cel_types):
the schema comes from a CRD or a kind description (`JobKind`, turned into its CRD as
`jobmachine crd` would), looked for in the files given with `--kind`, then beside the
machine files, then among the shipped CRDs. In a cluster the engine reads the installed CRD
instead (engine.controller.machines.served). A kind found nowhere leaves `job` untyped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from engine import yaml_documents
from engine.api.crd import crd_for_kind
from engine.api.kind_description import JobKind, load_kind_file
from engine.definition.cel_types import JobSchema, SchemaLookup
from engine.definition.errors import DefinitionError, Diagnostic
from engine.definition.validate import definition_files
from engine.shipped import shipped_dir_if_present

KindKey = tuple[str, str]  # (apiVersion, kind)


def crd_schemas(crd: Mapping[str, Any]) -> dict[KindKey, JobSchema]:
    """(apiVersion, kind) -> the schema of each version of a CRD that has one."""
    spec = crd.get("spec") or {}
    kind = str((spec.get("names") or {}).get("kind") or "")
    found: dict[KindKey, JobSchema] = {}
    for version in spec.get("versions") or ():
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")
                  if isinstance(version, Mapping) else None)
        if kind and isinstance(schema, Mapping):
            found[(f"{spec.get('group')}/{version.get('name')}", kind)] = JobSchema(schema, kind)
    return found


def _documents(path: Path) -> Iterator[Any]:
    """The YAML documents of a file, read fast (CRDs are large; positions are needed only
    for a kind description with errors, read again then); a file that does not read yields
    nothing: validate reports machine files' problems itself, and others are not its
    business."""
    try:
        yield from yaml_documents.load_all(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return


def schemas_in(paths: Iterable[Path], *, strict: bool = False, recursive: bool = True
               ) -> dict[KindKey, JobSchema]:
    """The kinds' schemas in the CRDs and kind descriptions under `paths` (first found
    wins); `strict` (files named with --kind) raises `DefinitionError` for a path that does
    not exist or the first kind description with errors, with its FILE:LINE:COL."""
    found: dict[KindKey, JobSchema] = {}
    for file in definition_files(paths, recursive=recursive):
        if isinstance(file, Diagnostic):
            if strict:
                raise DefinitionError([file])
            continue
        for document in _documents(file):
            for key, schema in _schemas_of(document, file, strict=strict).items():
                found.setdefault(key, schema)
    return found


def _schemas_of(document: Any, file: Path, *, strict: bool) -> dict[KindKey, JobSchema]:
    """The schemas a CRD or a kind description declares ({} for any other document)."""
    if not isinstance(document, Mapping):
        return {}
    if document.get("kind") == "CustomResourceDefinition":
        return crd_schemas(document)
    if document.get("kind") != "JobKind":
        return {}
    try:
        return crd_schemas(crd_for_kind(JobKind.model_validate(document)))
    except ValueError:
        if strict:
            load_kind_file(file)  # raises with the positions of the problems
        return {}


def schema_lookup(found: Mapping[KindKey, JobSchema]) -> SchemaLookup:
    """A lookup over schemas already found."""
    return lambda api_version, kind: found.get((api_version, kind))


def kind_schema_lookup(machine_paths: Iterable[Path], kind_paths: Iterable[Path] = ()
                       ) -> SchemaLookup:
    """Where `validate` and `check` find each governed kind's schema: the `--kind` files,
    then the machine files' folders, then the shipped CRDs (first found wins)."""
    found = schemas_in(kind_paths, strict=True)
    folders = {path if path.is_dir() else path.parent for path in machine_paths}
    shipped = shipped_dir_if_present("crds")
    for more in (schemas_in(sorted(folders), recursive=False),
                 schemas_in([shipped]) if shipped else {}):
        for key, schema in more.items():
            found.setdefault(key, schema)
    return schema_lookup(found)
