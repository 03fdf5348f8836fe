"""A job as the API server stores it: a custom resource pruned and defaulted by its CRD's
schema, a batch Job defaulted as kube-apiserver defaults it.

A JobSet written without `replicas` or `groupName` is stored with upstream's defaults
(1, `default`) and its machine reads them there; a TrainJob's JobSet, made from a
runtime's template, is defaulted the same way when the engine creates it, and so are a
JobSet's Jobs (completions and parallelism 1 when neither is set, the generated
selector). The schema is the CRD of the kind (beside the machine files, else the shipped
ones: as `validate` and `check` find it); both are applied with the embedded API
server's own code. Another kind is stored as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.cluster.apiserver.admission.batch_defaults import job_defaults
from engine.cluster.apiserver.encoding.json_documents import json_copy
from engine.cluster.apiserver.schema.schema_validation import CompiledSchema
from engine.definition.cel_types import SchemaLookup

BATCH_JOB = ("batch/v1", "Job")


class Storage:
    """Prunes and defaults objects by their kind's schema (each schema compiled once)."""

    def __init__(self, schemas: SchemaLookup) -> None:
        self._schemas = schemas
        self._compiled: dict[tuple[str, str], CompiledSchema | None] = {}

    def stored(self, obj: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The object as the API server would store it, and why it would refuse it (each
        cause as `field: message`; none for a kind without a schema here)."""
        key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if key == BATCH_JOB:
            stored = job_defaults(json_copy(dict(obj)), creating=True)
            return {k: v for k, v in stored.items() if k != "status" or v}, []
        schema = self._schema(*key)
        if schema is None:
            return dict(obj), []
        result = schema.apply(dict(obj))
        return result.obj, [f"{c.field}: {c.message}" if c.field else c.message
                            for c in result.causes]

    def _schema(self, api_version: str, kind: str) -> CompiledSchema | None:
        key = (api_version, kind)
        if key not in self._compiled:
            found = self._schemas(api_version, kind)
            self._compiled[key] = None if found is None else CompiledSchema(found.schema)
        return self._compiled[key]
