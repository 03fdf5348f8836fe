"""CRD structural schemas: structural checks, pruning, defaulting, validation, CEL rules."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.schema.cel_rules import RuleCompileError
from engine.cluster.apiserver.schema.schema_validation import CompiledSchema, check_crd_schema

ROOT = "spec.versions[0].schema.openAPIV3Schema"


def _schema(spec: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", **spec}}, **root}


def _obj(spec: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "x.io/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec, **extra}


def _messages(
    schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[str]:
    return [f"{c.field}: {c.message}" for c in CompiledSchema(schema).apply(obj, old).causes]


# --- structural checks -------------------------------------------------------


def test_structural_schema_passes() -> None:
    schema = _schema(
        {
            "properties": {
                "replicas": {"type": "integer", "default": 1, "minimum": 0},
                "any": {"x-kubernetes-int-or-string": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
            },
            "x-kubernetes-validations": [{"rule": "self.replicas >= 0"}],
        }
    )
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
    }
    assert check_crd_schema(schema, ROOT) == []


@pytest.mark.parametrize(
    ("schema", "field", "fragment"),
    [
        ({"properties": {}}, f"{ROOT}.type", "must not be empty at the root"),
        (
            _schema({"properties": {"a": {}}}),
            f"{ROOT}.properties[spec].properties[a].type",
            "must not be empty",
        ),
        (
            _schema({"properties": {"a": {"$ref": "#/d"}}}),
            f"{ROOT}.properties[spec].properties[a].$ref",
            "not supported",
        ),
        (
            _schema(
                {
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": {"type": "string"},
                }
            ),
            f"{ROOT}.properties[spec].additionalProperties",
            "mutual exclusive",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
                },
            },
            f"{ROOT}.properties[metadata]",
            "name and generateName",
        ),
        (
            _schema({"properties": {"l": {"type": "array"}}}),
            f"{ROOT}.properties[spec].properties[l].items",
            "Required",
        ),
        (
            _schema(
                {
                    "properties": {
                        "l": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
                    }
                }
            ),
            f"{ROOT}.properties[spec].properties[l].uniqueItems",
            "quadratic",
        ),
        (
            _schema(
                {
                    "properties": {
                        "l": {
                            "type": "array",
                            "items": {"type": "object"},
                            "x-kubernetes-list-type": "map",
                        }
                    }
                }
            ),
            f"{ROOT}.properties[spec].properties[l].x-kubernetes-list-map-keys",
            "must not be empty",
        ),
        (
            _schema({"x-kubernetes-validations": [{"rule": "self.name.reverse() == 'x'"}]}),
            f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
            "undeclared reference to 'reverse'",
        ),
        (
            _schema({"x-kubernetes-validations": [{"rule": "self.?name"}]}),
            f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
            "compilation failed",
        ),
        (
            _schema({"x-kubernetes-validations": [{"rule": "x > 1"}]}),
            f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
            "undeclared reference to 'x'",
        ),
        (
            _schema(
                {"x-kubernetes-validations": [{"rule": "true", "messageExpression": "bogus("}]}
            ),
            f"{ROOT}.properties[spec].x-kubernetes-validations[0].messageExpression",
            "compilation failed",
        ),
        (
            _schema({"properties": {"n": {"type": "integer", "default": "x"}}}),
            f"{ROOT}.properties[spec].properties[n].default",
            "must be of type integer",
        ),
        (
            _schema(
                {"properties": {"o": {"type": "object", "properties": {}, "default": {"z": 1}}}}
            ),
            f"{ROOT}.properties[spec].properties[o].default",
            "unknown field",
        ),
        (
            _schema({"properties": {"n": {"type": "integer", "default": 5, "maximum": 3}}}),
            f"{ROOT}.properties[spec].properties[n].default",
            "less than or equal to 3",
        ),
    ],
)
def test_non_structural_schemas_are_rejected(
    schema: dict[str, Any], field: str, fragment: str
) -> None:
    causes = check_crd_schema(schema, ROOT)
    assert any(c.field == field and fragment in c.message for c in causes), causes


def test_unsupported_rule_fails_at_compile_not_request_time() -> None:
    with pytest.raises(RuleCompileError):
        CompiledSchema(_schema({"x-kubernetes-validations": [{"rule": "self.a.quantity()"}]}))


# --- pruning and defaulting --------------------------------------------------


def test_pruning_reports_paths_and_keeps_type_meta() -> None:
    schema = _schema(
        {
            "properties": {
                "known": {"type": "string"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
                "map": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"v": {"type": "integer"}},
                    },
                },
            }
        }
    )
    obj = _obj(
        {
            "known": "k",
            "junk": 1,
            "free": {"anything": {"deep": 1}},
            "items": [{"a": "x", "b": "y"}],
            "map": {"k1": {"v": 1, "w": 2}},
        },
        status={"x": 1},
    )
    obj["metadata"]["bogus"] = True
    result = CompiledSchema(schema).apply(obj)
    assert sorted(result.pruned) == [
        "metadata.bogus",
        "spec.items[0].b",
        "spec.junk",
        "spec.map.k1.w",
        "status",
    ]
    assert result.obj["spec"] == {
        "known": "k",
        "free": {"anything": {"deep": 1}},
        "items": [{"a": "x"}],
        "map": {"k1": {"v": 1}},
    }
    assert result.obj["apiVersion"] == "x.io/v1" and result.obj["metadata"] == {"name": "w"}
    assert "junk" in obj["spec"]


def test_embedded_resource_keeps_its_type_meta() -> None:
    schema = _schema(
        {
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            }
        }
    )
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "t"},
        "spec": {"a": 1},
        "junk": 1,
    }
    result = CompiledSchema(schema).apply(_obj({"template": template}))
    assert result.obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "t"},
        "spec": {"a": 1},
    }
    assert result.pruned == ["spec.template.junk"]


def test_defaults_nested_and_in_items() -> None:
    schema = _schema(
        {
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "policy": {
                    "type": "object",
                    "default": {},
                    "properties": {"mode": {"type": "string", "default": "auto"}},
                },
                "list": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"w": {"type": "integer", "default": 7}},
                    },
                },
                "nullable": {"type": "string", "nullable": True, "default": "d"},
                "plain": {"type": "string"},
            },
        }
    )
    result = CompiledSchema(schema).apply(
        _obj({"list": [{}, {"w": 2}], "nullable": None, "plain": None})
    )
    assert result.obj["spec"] == {
        "list": [{"w": 7}, {"w": 2}],
        "nullable": None,
        "replicas": 1,
        "policy": {"mode": "auto"},
    }
    assert result.causes == []
    assert (
        CompiledSchema(schema)
        .apply({"apiVersion": "x.io/v1", "kind": "W", "metadata": {}})
        .obj["spec"]["replicas"]
        == 1
    )


# --- OpenAPI keywords --------------------------------------------------------

KEYWORDS = _schema(
    {
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "multipleOf": 0.5},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "flag": {"type": "boolean"},
            "port": {"x-kubernetes-int-or-string": True},
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 2,
                "minItems": 1,
                "x-kubernetes-list-type": "set",
            },
            "entries": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"],
                "items": {
                    "type": "object",
                    "required": ["k"],
                    "properties": {"k": {"type": "string"}},
                },
            },
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "blob": {"type": "string", "format": "byte"},
            "note": {"type": "string", "nullable": True},
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "maxProperties": 1,
            },
        },
    }
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"name": "abc"}, None),
        ({}, "spec.name: Required value"),
        (
            {"name": 5},
            'spec.name: Invalid value: "integer": spec.name in body must be of '
            'type string: "integer"',
        ),
        (
            {"name": "abc", "replicas": "x"},
            'spec.replicas: Invalid value: "string": spec.replicas in body must be '
            'of type integer: "string"',
        ),
        ({"name": "abc", "replicas": 1.0}, None),
        ({"name": "abc", "replicas": 1.5}, "must be of type integer"),
        ({"name": "abc", "flag": 1}, "must be of type boolean"),
        ({"name": "abc", "replicas": True}, "must be of type integer"),
        (
            {"name": "a"},
            'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long',
        ),
        ({"name": "abcdef"}, "spec.name: Too long: may not be more than 5 bytes"),
        ({"name": "AB"}, "spec.name in body should match '^[a-z]+$'"),
        (
            {"name": "abc", "replicas": 0},
            "spec.replicas: Invalid value: 0: spec.replicas in body should be "
            "greater than or equal to 1",
        ),
        ({"name": "abc", "replicas": 11}, "should be less than or equal to 10"),
        ({"name": "abc", "ratio": 0}, "spec.ratio in body should be greater than 0"),
        ({"name": "abc", "ratio": 0.7}, "should be a multiple of 0.5"),
        (
            {"name": "abc", "mode": "c"},
            'spec.mode: Unsupported value: "c": supported values: "a", "b"',
        ),
        ({"name": "abc", "port": "http"}, None),
        ({"name": "abc", "port": 80}, None),
        # A whole JSON number is an integer to kube-openapi (the Kubeflow SDK's quantities).
        ({"name": "abc", "port": 80.0}, None),
        ({"name": "abc", "port": 1.5}, "must be of type integer,string"),
        (
            {"name": "abc", "tags": ["a", "b", "c"]},
            "spec.tags: Too many: 3: must have at most 2 items",
        ),
        ({"name": "abc", "tags": []}, "should have at least 1 items"),
        ({"name": "abc", "tags": ["a", "a"]}, 'spec.tags[1]: Duplicate value: "a"'),
        (
            {"name": "abc", "entries": [{"k": "x"}, {"k": "x"}]},
            'spec.entries[1]: Duplicate value: {"k":"x"}',
        ),
        ({"name": "abc", "entries": [{}]}, "spec.entries[0].k: Required value"),
        ({"name": "abc", "when": "2024-01-02T03:04:05Z"}, None),
        (
            {"name": "abc", "when": "yesterday"},
            'spec.when: Invalid value: "yesterday": spec.when in body must be of '
            'type date-time: "yesterday"',
        ),
        ({"name": "abc", "day": "2024-02-30"}, "must be of type date"),
        ({"name": "abc", "id": "not-a-uuid"}, "must be of type uuid"),
        ({"name": "abc", "blob": "!!"}, "must be of type byte"),
        ({"name": "abc", "note": None}, None),
        ({"name": "abc", "labels": {"a": 1}}, "spec.labels.a in body must be of type string"),
        ({"name": "abc", "labels": {"a": "1", "b": "2"}}, "spec.labels: Too many: 2"),
    ],
)
def test_keywords(spec: dict[str, Any], expected: str | None) -> None:
    messages = _messages(KEYWORDS, _obj(spec))
    if expected is None:
        assert messages == []
    else:
        assert any(expected in m for m in messages), messages


def test_null_for_non_nullable_field_without_default_is_dropped() -> None:
    result = CompiledSchema(KEYWORDS).apply(_obj({"name": "abc", "mode": None}))
    assert "mode" not in result.obj["spec"] and result.causes == []


def test_combinators() -> None:
    schema = _schema(
        {
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "not": {"required": ["c"]},
        }
    )
    assert _messages(schema, _obj({"a": "x"})) == []
    assert any("oneOf" in m for m in _messages(schema, _obj({"a": "x", "b": "y"})))
    schema["properties"]["spec"]["anyOf"] = [{"properties": {"a": {"enum": ["z"]}}}]
    assert any("anyOf" in m for m in _messages(schema, _obj({"a": "x"})))


# --- CEL rules ---------------------------------------------------------------

RULES = _schema(
    {
        "properties": {
            "replicas": {"type": "integer"},
            "max": {"type": "integer", "default": 5},
            "name": {"type": "string"},
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"],
                "items": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}, "v": {"type": "integer"}},
                    "x-kubernetes-validations": [
                        {"rule": "self.v >= oldSelf.v", "message": "v may not decrease"}
                    ],
                },
            },
        },
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.max", "message": "too many replicas"},
            {
                "rule": "!has(self.name) || self.name.lowerAscii().startsWith('ab')",
                "fieldPath": ".name",
                "reason": "FieldValueForbidden",
            },
            {
                "rule": "self.replicas >= oldSelf.replicas",
                "messageExpression": "'cannot scale down from ' + string(oldSelf.replicas)",
            },
            {
                "rule": "!has(self.name) || self.name.split('-').size() < 3",
                "reason": "FieldValueRequired",
                "message": "few dashes",
            },
            {"rule": "self.replicas != 42"},
        ],
    }
)


@pytest.mark.parametrize(
    ("spec", "old", "expected"),
    [
        ({"replicas": 3}, None, []),
        ({"replicas": 9}, None, ['spec: Invalid value: "object": too many replicas']),
        ({"replicas": 1, "name": "Abc"}, None, []),
        (
            {"replicas": 1, "name": "xyz"},
            None,
            [
                "spec.name: Forbidden: failed rule: !has(self.name) || "
                "self.name.lowerAscii().startsWith('ab')"
            ],
        ),
        (
            {"replicas": 1},
            {"replicas": 3},
            ['spec: Invalid value: "object": cannot scale down from 3'],
        ),
        ({"replicas": 4}, {"replicas": 3}, []),
        ({"replicas": 1, "name": "ab-c-d"}, None, ["spec: Required value: few dashes"]),
        (
            {"replicas": 42, "max": 50},
            None,
            ['spec: Invalid value: "object": failed rule: self.replicas != 42'],
        ),
    ],
)
def test_rules(spec: dict[str, Any], old: dict[str, Any] | None, expected: list[str]) -> None:
    assert _messages(RULES, _obj(spec), _obj(old) if old else None) == expected


def test_transition_rules_correlate_list_map_items_by_key() -> None:
    old = _obj({"replicas": 1, "items": [{"k": "a", "v": 5}, {"k": "b", "v": 1}]})
    new = _obj(
        {"replicas": 1, "items": [{"k": "b", "v": 0}, {"k": "a", "v": 6}, {"k": "c", "v": 0}]}
    )
    assert _messages(RULES, new, old) == [
        'spec.items[0]: Invalid value: "object": v may not decrease'
    ]
    assert _messages(RULES, new) == []


def test_rule_runtime_errors_are_causes() -> None:
    schema = _schema(
        {
            "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.a > 0"}],
        }
    )
    assert _messages(schema, _obj({})) == [
        'spec: Invalid value: "object": no such key: a evaluating rule: self.a > 0'
    ]


def test_type_errors_block_rules() -> None:
    messages = _messages(RULES, _obj({"replicas": "many"}))
    assert messages[0].startswith("spec.replicas: Invalid value")
    assert "some validation rules were not checked" in messages[1]


def test_root_rules_see_metadata_name() -> None:
    schema = _schema({}, **{"x-kubernetes-validations": [{"rule": "self.metadata.name == 'w'"}]})
    assert _messages(schema, _obj({})) == []
    bad = _obj({})
    bad["metadata"]["name"] = "q"
    failed = ": Invalid value: \"object\": failed rule: self.metadata.name == 'w'"
    assert _messages(schema, bad) == [failed]


def test_kubernetes_string_and_list_functions() -> None:
    rules = [
        "self.s.indexOf('b') == 1",
        "self.s.lastIndexOf('b') == 3",
        "self.s.upperAscii() == 'ABCB'",
        "self.s.replace('b', 'x') == 'axcx'",
        "self.s.substring(1, 3) == 'bc'",
        "self.s.charAt(0) == 'a'",
        "' x '.trim() == 'x'",
        "self.l.join('-') == 'a-b'",
        "self.n.isSorted() && self.n.sum() == 6 && self.n.min() == 1 && self.n.max() == 3",
        "self.s.find('c.') == 'cb'",
        "self.s.findAll('b').size() == 2",
        "self.s.matches('^a') && self.l.all(x, x.size() == 1) && self.n.exists_one(x, x == 2)",
        "self.n.map(x, x * 2).filter(x, x > 2) == [4, 6]",
    ]
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "string"}},
            "n": {"type": "array", "items": {"type": "integer"}},
        },
        "x-kubernetes-validations": [{"rule": r} for r in rules],
    }
    assert check_crd_schema(schema, "s") == []
    result = CompiledSchema(schema).apply({"s": "abcb", "l": ["a", "b"], "n": [1, 2, 3]})
    assert result.causes == []


RATCHETED = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}},
                 "x-kubernetes-validations": [{"rule": "self.replicas <= 5",
                                               "message": "too many replicas"}]},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def test_unchanged_values_ratchet_their_rules() -> None:
    """An object stored before a rule existed (or under a looser one) can still be written
    where it leaves the offending value as it was (a status write); a change to that value,
    or a new object, is checked (kube-apiserver's CRD validation ratcheting)."""
    stored = _obj({"replicas": 9})
    too_many = ['spec: Invalid value: "object": too many replicas']
    assert _messages(RATCHETED, {**stored, "status": {"phase": "Running"}}, stored) == []
    assert _messages(RATCHETED, _obj({"replicas": 10}), stored) == too_many
    assert _messages(RATCHETED, stored) == too_many


def test_transition_rules_are_evaluated_even_on_unchanged_values() -> None:
    """A rule reading oldSelf is not ratcheted: it holds for every write."""
    schema = _schema({"properties": {"v": {"type": "integer"}},
                      "x-kubernetes-validations": [{"rule": "self.v > oldSelf.v",
                                                    "message": "v must grow"}]})
    stored = _obj({"v": 1})
    assert _messages(schema, _obj({"v": 1}), stored) == [
        'spec: Invalid value: "object": v must grow']


def test_a_transition_rule_below_does_not_unratchet_the_rules_above_it() -> None:
    """An unchanged spec holding an immutable field (a transition rule, as Kubeflow's
    runPolicy.managedBy) still ratchets the spec's own rules; the transition rule runs."""
    schema = _schema({
        "properties": {"replicas": {"type": "integer"},
                       "policy": {"type": "object",
                                  "properties": {"owner": {"type": "string"}},
                                  "x-kubernetes-validations": [
                                      {"rule": "self.owner == oldSelf.owner",
                                       "message": "owner is immutable"}]}},
        "x-kubernetes-validations": [{"rule": "self.replicas <= 5",
                                      "message": "too many replicas"}],
    })
    stored = _obj({"replicas": 9, "policy": {"owner": "a"}})
    assert _messages(schema, _obj({"replicas": 9, "policy": {"owner": "a"}}), stored) == []
    assert _messages(schema, _obj({"replicas": 9, "policy": {"owner": "b"}}), stored) == [
        'spec: Invalid value: "object": too many replicas',
        'spec.policy: Invalid value: "object": owner is immutable',
    ]
