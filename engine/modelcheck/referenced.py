"""The objects a checked job names through its machine's governs.references, as the cluster
could hold them.

A TrainJob's JobSet is made from the runtime it names (`references.runtime`), so what the
machine does depends on that object as much as on the job. For each object a job of a
shape names (the reference's CEL over the job, as the engine works it out), the check
explores the objects of that kind that ship beside the engine (`manifests/`: Trainer's
default runtimes) as the kind's schema stores them (pruned, defaulted, its rules held),
or, where none ships, the least one its schema admits (its required fields with valid
values and its defaults, as `schema_values` builds a job), each where the job looks for
it; and the situation where the object is missing at first (the job waits) and is
created later. Each is one shape (`Shape.referenced`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from engine.definition import CompiledDefinition, ReferenceTarget, reference_targets
from engine.definition.cel_types import SchemaLookup
from engine.modelcheck.schema_values import required_values
from engine.modelcheck.shapes import admission
from engine.shipped import shipped_dir_if_present
from engine.simulation.world import ReferenceKey, reference_key

MISSING_AT_FIRST = "missing at first"
"""How a variant says its object is created only after the job (the job waits for it)."""

Candidate = tuple[str, dict[str, Any]]
"""An object a reference may find: where it comes from in words, and the object."""


def referenced_variants(definition: CompiledDefinition, job: Mapping[str, Any],
                        schemas: SchemaLookup, manifests: Path | None = None
                        ) -> list[tuple[str, str]]:
    """The objects a job of the machine may find where it looks, as (words, JSON of
    `{"present": [...], "later": [...]}`): every combination of each reference's candidates
    (the shipped objects of its kind, else the least its schema admits), and the first
    combination again with every object missing at first. [] when the machine names no
    object, or the job names none it could find."""
    targets = {name: target for name, target in reference_targets(definition, job).items()
               if isinstance(target, ReferenceTarget)}
    if not targets:
        return []
    folder = manifests if manifests is not None else shipped_dir_if_present("manifests")
    shipped = _shipped_objects(folder)
    per_reference = [[(name, target, found) for found in _candidates(target, shipped, schemas)]
                     for name, target in sorted(targets.items())]
    variants: list[tuple[str, str]] = []
    for chosen in itertools.product(*per_reference):
        objects = [_placed(found[1], target) for _, target, found in chosen]
        words = "; ".join(f"{name}: {found[0]}" for name, _, found in chosen)
        variants.append((words, json.dumps({"present": objects, "later": []}, sort_keys=True)))
    if variants:
        first = json.loads(variants[0][1])
        words = f"{variants[0][0]}, {MISSING_AT_FIRST}"
        variants.append((words, json.dumps({"present": [], "later": first["present"]},
                                           sort_keys=True)))
    return variants


def objects_of(variant: tuple[str, str] | None
               ) -> tuple[dict[ReferenceKey, dict[str, Any]], dict[ReferenceKey, dict[str, Any]]]:
    """The objects a variant's world holds from the start, and those created later, by
    where a job finds them."""
    if variant is None:
        return {}, {}
    found = json.loads(variant[1])
    return ({_key(o): o for o in found["present"]}, {_key(o): o for o in found["later"]})


def created_words(obj: Mapping[str, Any]) -> str:
    """How a trace says the object is created."""
    metadata = obj["metadata"]
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{obj['kind']} {where}{metadata['name']} is created"


def _key(obj: Mapping[str, Any]) -> ReferenceKey:
    metadata = obj["metadata"]
    return reference_key(ReferenceTarget(obj["apiVersion"], obj["kind"],
                                         metadata.get("namespace"), metadata["name"]))


def _candidates(target: ReferenceTarget, shipped: list[dict[str, Any]],
                schemas: SchemaLookup) -> list[Candidate]:
    """The shipped objects of the target's kind as its schema stores them (pruned,
    defaulted; one it refuses is none); where none ships, the least object its schema
    admits. The shipped ones are what the machine is written for (a runtime's JobSet
    template, which the schema leaves free), as a checked job's replica specs are the
    check's own under the schema's required fields and defaults."""
    found = schemas(target.api_version, target.kind)
    store = admission(found.schema if found is not None else None)
    kept = [(f"{target.kind} {obj['metadata']['name']} (shipped)", stored)
            for obj in shipped
            if (obj.get("apiVersion"), obj.get("kind")) == (target.api_version, target.kind)
            and (stored := store(obj)) is not None]
    if kept or found is None:
        return kept
    least = store({"apiVersion": target.api_version, "kind": target.kind,
                   "metadata": {"name": target.name}, **required_values(found.schema)})
    return [] if least is None else [(f"{target.kind} with its schema's least values", least)]


def _placed(obj: Mapping[str, Any], target: ReferenceTarget) -> dict[str, Any]:
    """The object where the job looks for it: named as the job names it, in its namespace
    (a shipped runtime's contents under the name the checked job gives)."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items()
                if k not in ("name", "namespace")}
    metadata["name"] = target.name
    if target.namespace is not None:
        metadata["namespace"] = target.namespace
    return {**obj, "metadata": metadata}


def _shipped_objects(folder: Path | None) -> list[dict[str, Any]]:
    """Every object of the YAML files in `folder`, in file order."""
    if folder is None:
        return []
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.yaml")):
        found += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8"))
                  if isinstance(d, dict) and "kind" in d and "metadata" in d]
    return found
