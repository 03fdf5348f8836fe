"""What `JobClient.create_job` accepts as a job: a dict, a YAML file, or a `JobBuilder`.

A manifest written for `kubectl apply` works unchanged, so a file is read as one
YAML document; several in one file are refused rather than silently cut to the first.
The namespace is settled here, once, the way kubectl settles it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from engine import yaml_documents
from engine.sdk.builder import JobBuilder
from engine.sdk.errors import InvalidJobError

JobInput = Mapping[str, Any] | str | Path | JobBuilder
"""A job document, the path of a YAML file holding one, or a builder."""


def job_document(job: JobInput, namespace: str | None, *, default: str) -> dict[str, Any]:
    """A copy of the job as a dict with its metadata.namespace set.

    The namespace is `namespace` when given, else the document's own, else `default`; a
    document naming another namespace than the one given is refused, as `kubectl apply
    -n` refuses it.
    """
    if isinstance(job, JobBuilder):
        document = job.build()
    elif isinstance(job, str | Path):
        document = _read_file(Path(job))
    else:
        document = copy.deepcopy(dict(job))
    metadata = document.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise InvalidJobError("the job's metadata is not a map")
    written = metadata.get("namespace")
    if namespace is not None and written not in (None, namespace):
        raise InvalidJobError(
            f"the job names namespace {written!r}, but it is to be created in {namespace!r}")
    metadata["namespace"] = namespace or written or default
    return document


def _read_file(path: Path) -> dict[str, Any]:
    try:
        documents = [d for d in yaml_documents.load_all(path.read_text()) if d is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidJobError(f"cannot read a job from {path}: {exc}") from exc
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise InvalidJobError(
            f"{path} must hold exactly one job document (a YAML map), not {len(documents)} "
            "documents")
    return documents[0]
