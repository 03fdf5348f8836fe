"""Pieces of the published schemas of the built-in workloads (batch and apps): integers,
strings, objects and the pod template, each with its description, as upstream's OpenAPI
shapes them. One place, so every kind's schema reads the same way."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
"""A field the server, not kubectl, validates (a pod spec, a label selector)."""


def integer(description: str, fmt: str = "int32") -> Schema:
    return {"type": "integer", "format": fmt, "description": description}


def text(description: str, *enum: str) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if enum:
        schema["enum"] = list(enum)
    return schema


def obj(description: str, properties: dict[str, Schema], *required: str) -> Schema:
    schema: Schema = {"type": "object", "description": description, "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def pod_template(meta: Schema, description: str) -> Schema:
    """A pod template: `meta` for its metadata, its spec open."""
    return obj(
        description,
        {"metadata": {"allOf": [meta], "description": "Labels and annotations of the pods."},
         "spec": {**OPEN, "description": "The spec of every pod (a Pod's spec)."}},
    )
