"""Judging StateMachine objects: is each valid, which one governs a kind, is that kind served.

Pure: from the objects, the revisions kept and the kinds served, it says for each
machine what its status must say and which revision new jobs of its kind start
with. The checks are `jobmachine validate`'s, located by field path; a machine
that fails them leaves its previous revision in force, and of two machines that
govern one kind the one created first keeps it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from engine.controller.machines.revisions import revision_name
from engine.definition import CompiledDefinition, Diagnostic, compile_definition
from engine.definition.cel_types import SchemaLookup
from engine.definition.errors import DefinitionError
from engine.definition.extends import RawDefinition, resolve
from engine.definition.loader import build_definitions, object_definition
from engine.definition.validate import check_definitions
from engine.kube.resources import Resource

_SHOWN_PROBLEMS = 10
Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Judgement:
    """What a machine's current spec is worth by itself (other machines aside)."""

    problems: tuple[str, ...] = ()
    document: Mapping[str, Any] | None = None
    """The machine as it runs (bases merged in) when it is valid."""
    compiled: CompiledDefinition | None = None
    abstract: bool = False

    @property
    def valid(self) -> bool:
        return not self.problems and self.document is not None

    @property
    def governs(self) -> tuple[str, str] | None:
        governs = (self.document or {}).get("spec", {}).get("governs")
        if not isinstance(governs, Mapping) or self.abstract:
            return None
        return str(governs.get("apiVersion")), str(governs.get("kind"))


@dataclass(frozen=True)
class Condition:
    """A condition of a StateMachine's status."""

    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class MachineVerdict:
    """Everything the engine decided about one StateMachine."""

    name: str
    generation: int | None
    accepted: Condition
    governing: Condition
    current_revision: str | None = None
    """The revision new jobs of its kind start with (the object's status.currentRevision)."""
    new_revision: Mapping[str, Any] | None = None
    """The document of a revision to keep, when the current spec is valid and new."""
    governs: tuple[str, str] | None = None
    resource: Resource | None = None
    """The served resource of its kind, when it governs one."""
    bases: tuple[str, ...] = field(default_factory=tuple)


class Judge:
    """Judges machines, remembering each judgement by content (compiling CEL is costly)."""

    def __init__(self) -> None:
        self._by_content: dict[str, Judgement] = {}

    def judge(self, objects: Iterable[Obj], schemas: SchemaLookup | None = None
              ) -> dict[str, tuple[Judgement, tuple[str, ...]]]:
        """Name -> (judgement, names of the machines it extends) for every object; `job`
        is typed against the schema `schemas` gives for the governed kind (its CRD)."""
        raws = {raw.name: raw for raw in map(object_definition, objects) if raw.name}
        found: dict[str, tuple[Judgement, tuple[str, ...]]] = {}
        for name, raw in raws.items():
            resolved, problems = resolve(raw, raws.get)
            if resolved is None:
                found[name] = (Judgement(_messages(raw, problems)), _chain(raw, raws))
                continue
            key = _content_key(resolved.raw, schemas)
            if key not in self._by_content:
                others = [r for n, r in raws.items() if n != name]
                self._by_content[key] = _judge(raw, others, schemas)
            found[name] = (self._by_content[key], resolved.bases)
        return found


def _judge(raw: RawDefinition, others: list[RawDefinition], schemas: SchemaLookup | None
           ) -> Judgement:
    definitions, diagnostics = build_definitions([raw], bases=others)
    diagnostics += check_definitions(definitions, schemas)
    problems = _messages(raw, diagnostics)
    if problems or not definitions:
        return Judgement(problems or ("the machine could not be read",))
    loaded = definitions[0]
    if loaded.abstract:
        return Judgement((), loaded.data, None, abstract=True)
    try:
        compiled = compile_definition(loaded)
    except DefinitionError as exc:
        return Judgement(_messages(raw, exc.diagnostics))
    return Judgement((), loaded.data, compiled)


def _messages(raw: RawDefinition, diagnostics: Iterable[Diagnostic]) -> tuple[str, ...]:
    """Errors as `field.path: message`; a problem in a base names the base object too."""
    found = []
    for diagnostic in diagnostics:
        if not diagnostic.is_error:
            continue
        where = diagnostic.position.field_path or "(document)"
        if diagnostic.position.file != raw.path:
            where = f"{diagnostic.position.file}: {where}"
        found.append(f"{where}: {diagnostic.message}")
    return tuple(dict.fromkeys(found))


def _content_key(raw: RawDefinition, schemas: SchemaLookup | None) -> str:
    """The machine's content and its kind's schema: a changed CRD is judged again."""
    spec = raw.data.get("spec") if isinstance(raw.data, Mapping) else None
    governs = spec.get("governs") if isinstance(spec, Mapping) else None
    schema = None
    if schemas is not None and isinstance(governs, Mapping):
        schema = schemas(str(governs.get("apiVersion")), str(governs.get("kind")))
    content = orjson.dumps(raw.data, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(content + (schema.digest if schema else "").encode()).hexdigest()


def _chain(raw: RawDefinition, raws: Mapping[str, RawDefinition]) -> tuple[str, ...]:
    """The names a machine extends, as far as they exist (for re-judging when a base changes)."""
    chain: list[str] = []
    current: RawDefinition | None = raw
    while current is not None and current.extends and current.extends not in chain:
        chain.append(current.extends)
        current = raws.get(current.extends)
    return tuple(chain)


@dataclass(frozen=True)
class KeptRevision:
    """A revision the engine keeps: its name, machine, governed kind and generation."""

    name: str
    machine: str
    governs: tuple[str, str]
    generation: str


def verdicts(
    objects: Iterable[Obj],
    judged: Mapping[str, tuple[Judgement, tuple[str, ...]]],
    kept: Mapping[str, KeptRevision],
    served: Mapping[tuple[str, str], Resource],
) -> dict[str, MachineVerdict]:
    """What every StateMachine's status must say, and which revision is in force for each."""
    ordered = sorted(objects, key=_age)
    candidates: dict[str, tuple[str, tuple[str, str]]] = {}
    for obj in ordered:
        name = obj["metadata"]["name"]
        judgement, _ = judged[name]
        candidate = _candidate(obj, judgement, kept)
        if candidate is not None:
            candidates[name] = candidate
    owners: dict[tuple[str, str], str] = {}
    for obj in ordered:
        name = obj["metadata"]["name"]
        if name in candidates:
            owners.setdefault(candidates[name][1], name)
    world = _World(candidates, owners, kept, served)
    return {obj["metadata"]["name"]: _verdict(obj, judged[obj["metadata"]["name"]], world)
            for obj in ordered}


@dataclass(frozen=True)
class _World:
    """What every verdict is judged against."""

    candidates: Mapping[str, tuple[str, tuple[str, str]]]
    """Machine -> (the revision it would put in force, the kind that revision governs)."""
    owners: Mapping[tuple[str, str], str]
    """Kind -> the machine that governs it (the oldest candidate)."""
    kept: Mapping[str, KeptRevision]
    served: Mapping[tuple[str, str], Resource]


def _age(obj: Obj) -> tuple[str, str]:
    metadata = obj["metadata"]
    return str(metadata.get("creationTimestamp") or ""), str(metadata["name"])


def _candidate(
    obj: Obj, judgement: Judgement, kept: Mapping[str, KeptRevision]
) -> tuple[str, tuple[str, str]] | None:
    """The revision this machine would put in force, and the kind it governs: its current
    spec when valid, else the revision its status says is in force (if still kept)."""
    governs = judgement.governs
    if judgement.valid and governs is not None and judgement.document is not None:
        return revision_name(obj["metadata"]["name"], judgement.document), governs
    previous = (obj.get("status") or {}).get("currentRevision")
    if judgement.valid or previous not in kept:
        return None
    return str(previous), kept[str(previous)].governs


def _verdict(obj: Obj, judged: tuple[Judgement, tuple[str, ...]], world: _World
             ) -> MachineVerdict:
    judgement, bases = judged
    metadata = obj["metadata"]
    name = str(metadata["name"])
    generation = metadata.get("generation")
    said = f"generation {generation}" if generation is not None else "the machine"
    if judgement.abstract and judgement.valid:
        return MachineVerdict(
            name, generation,
            Condition("Accepted", "True", "Valid", f"{said} is valid"),
            Condition("Governing", "False", "Abstract",
                      "an abstract machine governs no kind itself: machines extend it"),
            bases=bases,
        )
    candidate = world.candidates.get(name)
    accepted = _accepted(name, said, judgement, candidate, world)
    if candidate is None:
        return MachineVerdict(name, generation, accepted, Condition(
            "Governing", "False", accepted.reason,
            "no revision of this machine is in force: " + _no_start(judgement)), bases=bases)
    revision, governs = candidate
    new = judgement.document if judgement.valid and revision not in world.kept else None
    if world.owners.get(governs) != name:
        return MachineVerdict(name, generation, accepted, Condition(
            "Governing", "False", "Conflict", accepted.message), bases=bases)
    resource = world.served.get(governs)
    if resource is None:
        return MachineVerdict(name, generation, accepted, Condition(
            "Governing", "False", "CRDNotInstalled",
            f"no CustomResourceDefinition serves {governs[0]} {governs[1]}: install its CRD "
            "(e.g. `jobmachine crd DESCRIPTION | kubectl apply -f -`); the machine governs the "
            "kind as soon as it is served"),
            revision, new, governs, None, bases)
    return MachineVerdict(name, generation, accepted, Condition(
        "Governing", "True", "Governing",
        f"new {governs[1]} jobs start with revision {revision}; running jobs keep the revision "
        "they started with"), revision, new, governs, resource, bases)


def _accepted(
    name: str,
    said: str,
    judgement: Judgement,
    candidate: tuple[str, tuple[str, str]] | None,
    world: _World,
) -> Condition:
    owner = world.owners.get(candidate[1]) if candidate is not None else None
    if candidate is not None and owner not in (None, name):
        return Condition("Accepted", "False", "Conflict",
                         f"{candidate[1][1]} is governed by machine {owner}, created earlier: "
                         "only one machine governs a kind; delete one of them")
    if judgement.valid:
        return Condition("Accepted", "True", "Valid", f"{said} is valid")
    shown = "; ".join(judgement.problems[:_SHOWN_PROBLEMS])
    more = len(judgement.problems) - _SHOWN_PROBLEMS
    if more > 0:
        shown += f"; and {more} more (jobmachine validate lists them all)"
    if candidate is not None:
        previous = world.kept[candidate[0]]
        stays = (f"; revision {previous.name} (generation {previous.generation or '?'}) stays in "
                 "force")
    else:
        stays = ""
    return Condition("Accepted", "False", "Invalid", f"{said} is invalid: {shown}{stays}")


def _no_start(judgement: Judgement) -> str:
    governs = judgement.governs
    what = f"new {governs[1]} jobs" if governs else "new jobs of the kind it names"
    return f"{what} do not start until it is valid"
