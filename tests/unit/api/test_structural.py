"""pydantic JSON schema -> structural schema, keyword by keyword, on small models."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, StringConstraints, model_validator

from engine.api.structural import (
    NotStructuralError,
    accept_anything,
    accept_null,
    structural_schema,
)


class Leaf(BaseModel):
    """A leaf."""

    size: int = Field(default=3, ge=0, description="How big.")


class Tree(BaseModel):
    """A tree."""

    leaf: Leaf | None = Field(default=None, description="The leaf, when there is one.")
    port: int | str = Field(description="A number or a name.")
    mode: Literal["on"] = Field(description="The only mode.")
    labels: dict[str, Any] = Field(default_factory=dict, description="Anything.")
    sizes: dict[Literal["S", "M"], int] = Field(default_factory=dict, description="Per size.")
    named: dict[Annotated[str, StringConstraints(pattern="^[a-z]+$")], int] = Field(
        default_factory=dict, description="Per lower-case name."
    )
    ratio: float = Field(gt=0, description="Above zero.")
    maybe: int | None = Field(default=7, description="Null is a value of its own here.")


def test_refs_are_inlined_with_the_fields_description_winning() -> None:
    leaf = structural_schema(Tree)["properties"]["leaf"]

    assert leaf == {
        "description": "The leaf, when there is one.",
        "type": "object",
        "properties": {
            "size": {"default": 3, "description": "How big.", "minimum": 0, "type": "integer"}
        },
    }


def test_optional_with_none_default_is_plain_and_other_optionals_are_nullable() -> None:
    properties = structural_schema(Tree)["properties"]

    assert "nullable" not in properties["leaf"]
    assert properties["maybe"] == {
        "default": 7,
        "description": "Null is a value of its own here.",
        "nullable": True,
        "type": "integer",
    }


def test_int_or_string_const_and_free_maps() -> None:
    properties = structural_schema(Tree)["properties"]

    assert properties["port"] == {
        "description": "A number or a name.",
        "x-kubernetes-int-or-string": True,
    }
    assert properties["mode"] == {"description": "The only mode.", "enum": ["on"], "type": "string"}
    assert properties["labels"] == {
        "description": "Anything.",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_constrained_map_keys_become_cel_rules() -> None:
    properties = structural_schema(Tree)["properties"]

    (sizes,) = properties["sizes"]["x-kubernetes-validations"]
    (named,) = properties["named"]["x-kubernetes-validations"]
    assert sizes["rule"] == 'self.all(k, k in ["S", "M"])'
    assert named["rule"] == 'self.all(k, k.matches("^[a-z]+$"))'
    assert properties["named"]["additionalProperties"] == {"type": "integer"}
    assert "propertyNames" not in properties["sizes"]


def test_numeric_exclusive_bounds_become_openapi_v3_booleans() -> None:
    ratio = structural_schema(Tree)["properties"]["ratio"]

    assert (ratio["minimum"], ratio["exclusiveMinimum"]) == (0, True)


def test_root_keeps_required_and_drops_titles() -> None:
    schema = structural_schema(Tree)

    assert schema["required"] == ["port", "mode", "ratio"]
    assert "title" not in schema and schema["description"] == "A tree."


def test_a_union_without_structural_form_is_refused_by_name() -> None:
    class Mixed(BaseModel):
        value: int | list[int]

    with pytest.raises(NotStructuralError, match=r"Mixed\.value"):
        structural_schema(Mixed)


def test_a_recursive_model_is_refused() -> None:
    class Node(BaseModel):
        children: list[Node] = Field(default_factory=list)

    with pytest.raises(NotStructuralError, match="contains itself"):
        structural_schema(Node)


class Short(BaseModel):
    """Written as a bare name or a mapping."""

    name: str

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


class Holder(BaseModel):
    short: Short


def test_a_shorthand_must_be_declared() -> None:
    with pytest.raises(NotStructuralError, match=r"Short\._bare"):
        structural_schema(Holder)


def test_declared_shorthands_are_written_as_told() -> None:
    loose = structural_schema(Holder, shorthands={"Short._bare": accept_anything})
    nullable = structural_schema(Holder, shorthands={"Short._bare": accept_null})

    assert loose["properties"]["short"] == {
        "description": "Written as a bare name or a mapping.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert nullable["properties"]["short"]["nullable"] is True
    assert nullable["properties"]["short"]["properties"] == {"name": {"type": "string"}}
