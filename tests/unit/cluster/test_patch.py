"""The three patch formats: RFC 7386, RFC 6902 and Kubernetes strategic merge."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.patch.patch import (
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from engine.cluster.apiserver.patch.values import PatchError

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "a", "b"]))
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=3)
    ),
    max_leaves=12,
)
DOCS = st.dictionaries(st.sampled_from("abcd"), JSON, max_size=4)


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    return value


def _diff(a: Any, b: Any) -> Any:
    """The merge patch that turns a into b (b without nulls inside objects)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return b
    patch: dict[str, Any] = {k: None for k in a if k not in b}
    for key, value in b.items():
        if key not in a or a[key] != value:
            patch[key] = _diff(a.get(key), value)
    return patch


# --- merge patch -----------------------------------------------------------


@given(DOCS, DOCS)
def test_merge_patch_of_diff_gives_target(a: dict[str, Any], b: dict[str, Any]) -> None:
    b = _strip_nulls(b)
    before = copy.deepcopy(a)
    patch = _diff(a, b)
    sent = copy.deepcopy(patch)
    assert merge_patch(a, patch) == b
    assert a == before
    assert patch == sent


def _depth(value: Any) -> int:
    """Levels of nested objects and lists, as check_depth counts them (a scalar adds none)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@given(DOCS, JSON)
def test_merge_patch_nests_no_deeper_than_its_target_or_itself(target: dict[str, Any],
                                                               patch: Any) -> None:
    """Why the server checks the depth of a merge patch and not of its result (the target
    is a stored object, within the limit)."""
    result = merge_patch(target, patch)
    assert _depth(result) <= max(_depth(target), _depth(patch))


def test_merge_patch_rfc_examples() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}}
    assert merge_patch(target, {"a": "z", "c": {"f": None}}) == {"a": "z", "c": {"d": "e"}}
    assert merge_patch({"a": ["b"]}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "foo"}, None) is None
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch([1, 2], {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}


# --- JSON patch ------------------------------------------------------------


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2]}, "x~y": 1, "p/q": 2}
    ops = [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "replace", "path": "/x~0y", "value": 10},
        {"op": "remove", "path": "/p~1q"},
        {"op": "copy", "from": "/a/b", "path": "/c"},
        {"op": "move", "from": "/a/b/1", "path": "/first"},
        {"op": "test", "path": "/c", "value": [0, 1, 2, 3]},
    ]
    assert json_patch(doc, ops) == {"a": {"b": [0, 2, 3]}, "x~y": 10, "c": [0, 1, 2, 3], "first": 1}
    assert doc == {"a": {"b": [1, 2]}, "x~y": 1, "p/q": 2}


def test_json_patch_whole_document() -> None:
    assert json_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert json_patch({"a": 1}, [{"op": "add", "path": "", "value": {"b": 2}}]) == {"b": 2}


@pytest.mark.parametrize(
    ("ops", "code", "fragment"),
    [
        ([{"op": "test", "path": "/a", "value": 2}], 422, "testing value /a failed"),
        ([{"op": "test", "path": "/t", "value": 1}], 422, "test failed"),
        ([{"op": "remove", "path": "/nope"}], 422, "Unable to remove nonexistent key: nope"),
        ([{"op": "replace", "path": "/nope", "value": 1}], 422, "doc is missing key: /nope"),
        ([{"op": "add", "path": "/x/y", "value": 1}], 422, "doc is missing path"),
        ([{"op": "add", "path": "/l/5", "value": 1}], 422, "invalid index"),
        ([{"op": "add", "path": "/l/01", "value": 1}], 422, "invalid index"),
        ([{"op": "move", "from": "/nope", "path": "/a"}], 422, "missing from path"),
        ([{"op": "move", "from": "/m", "path": "/m/k"}], 422, "its own child"),
        ([{"op": "frob", "path": "/a"}], 400, "Unexpected kind: frob"),
        ([{"path": "/a"}], 400, "Unexpected kind"),
        ([{"op": "add", "value": 1}], 400, "missing path"),
        ([{"op": "add", "path": "a", "value": 1}], 400, "JSON pointer"),
        ({"op": "add"}, 400, "cannot unmarshal"),
    ],
)
def test_json_patch_errors(ops: Any, code: int, fragment: str) -> None:
    with pytest.raises(PatchError) as info:
        json_patch({"a": 1, "t": True, "l": [0], "m": {}}, ops)
    assert info.value.code == code
    assert fragment in str(info.value)


OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "replace"]), st.sampled_from("abc"), st.integers(0, 9)
    ),
    max_size=8,
)


@given(st.dictionaries(st.sampled_from("abc"), st.integers(0, 9)), OPS)
def test_json_patch_agrees_with_a_dict_model(
    doc: dict[str, int], ops: list[tuple[str, str, int]]
) -> None:
    model = dict(doc)
    current: Any = doc
    for op, key, value in ops:
        operation: dict[str, Any] = {"op": op, "path": f"/{key}", "value": value}
        if op != "add" and key not in model:
            with pytest.raises(PatchError):
                json_patch(current, [operation])
            continue
        if op == "remove":
            del model[key]
        else:
            model[key] = value
        current = json_patch(current, [operation])
        assert current == model


@given(
    st.lists(st.integers(0, 9), max_size=5),
    st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=6),
)
def test_json_patch_list_insert_remove_agrees(
    items: list[int], steps: list[tuple[bool, int]]
) -> None:
    model, current = list(items), list(items)
    for insert, position in steps:
        if insert:
            index = min(position, len(model))
            model.insert(index, position)
            current = json_patch(
                {"l": current}, [{"op": "add", "path": f"/l/{index}", "value": position}]
            )["l"]
        elif model:
            index = position % len(model)
            del model[index]
            current = json_patch({"l": current}, [{"op": "remove", "path": f"/l/{index}"}])["l"]
        assert current == model


# --- strategic merge patch --------------------------------------------------


def _pod(*containers: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", **meta}, "spec": {"containers": list(containers)}}


def test_containers_merge_by_name_new_items_first_as_the_real_server() -> None:
    pod = _pod({"name": "a", "image": "1"}, {"name": "b", "image": "2"})
    out = strategic_merge_patch(pod, {"spec": {"containers": [{"name": "c", "image": "3"}]}}, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["c", "a", "b"]
    out = strategic_merge_patch(pod, {"spec": {"containers": [{"name": "b", "image": "9"}]}}, "Pod")
    assert out["spec"]["containers"] == [{"name": "a", "image": "1"}, {"name": "b", "image": "9"}]
    assert pod["spec"]["containers"][1]["image"] == "2"


def test_nested_lists_merge_by_their_own_keys() -> None:
    pod = _pod(
        {
            "name": "a",
            "env": [{"name": "X", "value": "1"}],
            "ports": [{"containerPort": 80, "name": "http"}],
            "volumeMounts": [{"mountPath": "/d", "name": "d"}],
        }
    )
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "env": [{"name": "Y", "value": "2"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "volumeMounts": [{"mountPath": "/d", "readOnly": True}],
                }
            ]
        }
    }
    container = strategic_merge_patch(pod, patch, "Pod")["spec"]["containers"][0]
    assert container["env"] == [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}]
    assert container["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert container["volumeMounts"] == [{"mountPath": "/d", "name": "d", "readOnly": True}]


def test_atomic_lists_are_replaced() -> None:
    pod = _pod({"name": "a", "args": ["x", "y"]})
    out = strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}, "Pod"
    )
    assert out["spec"]["containers"][0]["args"] == ["z"]
    node = {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    assert strategic_merge_patch(node, {"spec": {"taints": []}}, "Node")["spec"]["taints"] == []


def test_service_ports_by_port_and_conditions_by_type() -> None:
    svc = {"spec": {"ports": [{"port": 80, "name": "http"}]}}
    out = strategic_merge_patch(
        svc, {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}, "Service"
    )
    assert out["spec"]["ports"] == [{"port": 80, "name": "http", "targetPort": 8080}]
    pod = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "Initialized", "status": "True"},
            ]
        }
    }
    out = strategic_merge_patch(
        pod, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "Pod"
    )
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Initialized", "status": "True"},
    ]


def test_finalizers_merge_as_a_set() -> None:
    pod = _pod(finalizers=["a", "b"])
    out = strategic_merge_patch(pod, {"metadata": {"finalizers": ["b", "c"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["a", "b", "c"]


def test_owner_references_merge_by_uid() -> None:
    pod = _pod(ownerReferences=[{"uid": "1", "name": "x"}])
    out = strategic_merge_patch(
        pod, {"metadata": {"ownerReferences": [{"uid": "1", "controller": True}]}}, "Pod"
    )
    assert out["metadata"]["ownerReferences"] == [{"uid": "1", "name": "x", "controller": True}]


def test_null_deletes_and_maps_merge() -> None:
    pod = _pod(labels={"a": "1", "b": "2"})
    out = strategic_merge_patch(pod, {"metadata": {"labels": {"a": None, "c": "3"}}}, "Pod")
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}


def test_patch_directives_in_maps() -> None:
    pod = _pod(labels={"a": "1", "b": "2"})
    out = strategic_merge_patch(
        pod, {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}, "Pod"
    )
    assert out["metadata"]["labels"] == {"c": "3"}
    out = strategic_merge_patch(pod, {"metadata": {"labels": {"$patch": "delete"}}}, "Pod")
    assert out["metadata"]["labels"] == {}
    out = strategic_merge_patch(pod, {"metadata": {"labels": {"$patch": "merge", "c": "3"}}}, "Pod")
    assert out["metadata"]["labels"] == {"a": "1", "b": "2", "c": "3"}
    with pytest.raises(PatchError, match="Unknown patch type"):
        strategic_merge_patch(pod, {"metadata": {"labels": {"$patch": "frob"}}}, "Pod")


def test_patch_directives_in_list_elements() -> None:
    pod = _pod({"name": "a"}, {"name": "b"})
    out = strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}, "Pod"
    )
    assert out["spec"]["containers"] == [{"name": "b"}]
    out = strategic_merge_patch(
        pod, {"spec": {"containers": [{"$patch": "replace"}, {"name": "z"}]}}, "Pod"
    )
    assert out["spec"]["containers"] == [{"name": "z"}]
    with pytest.raises(PatchError, match="merging lists cannot yet be specified"):
        strategic_merge_patch(pod, {"spec": {"containers": [{"$patch": "merge"}]}}, "Pod")
    with pytest.raises(PatchError, match="does not contain declared merge key: name") as info:
        strategic_merge_patch(pod, {"spec": {"containers": [{"image": "x"}]}}, "Pod")
    assert info.value.code == 400


def test_delete_from_primitive_list() -> None:
    pod = _pod(finalizers=["a", "b", "c"])
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["d"]}}
    assert strategic_merge_patch(pod, patch, "Pod")["metadata"]["finalizers"] == ["d", "a", "c"]
    with pytest.raises(PatchError, match="primitives"):
        strategic_merge_patch(
            pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": "b"}}, "Pod"
        )


def test_set_element_order() -> None:
    pod = _pod({"name": "a"}, {"name": "b"}, {"name": "c"}, finalizers=["x", "y", "z"])
    patch = {
        "metadata": {"$setElementOrder/finalizers": ["z", "x", "y"]},
        "spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "i"}],
        },
    }
    out = strategic_merge_patch(pod, patch, "Pod")
    assert out["metadata"]["finalizers"] == ["z", "x", "y"]
    assert out["spec"]["containers"] == [{"name": "c"}, {"name": "a", "image": "i"}, {"name": "b"}]
    bad = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}],
            "containers": [{"name": "a", "image": "i"}],
        }
    }
    with pytest.raises(PatchError, match="doesn't match"):
        strategic_merge_patch(pod, bad, "Pod")


def test_retain_keys() -> None:
    pod = {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}
    patch = {
        "spec": {
            "volumes": [
                {"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}
            ]
        }
    }
    out = strategic_merge_patch(pod, patch, "Pod")
    assert out["spec"]["volumes"] == [{"name": "v", "hostPath": {"path": "/x"}}]
    bad = {
        "spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "hostPath": {"path": "/x"}}]}
    }
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(pod, bad, "Pod")
    assert info.value.code == 409


def test_new_subtree_has_its_directives_applied() -> None:
    out = strategic_merge_patch({}, {"metadata": {"labels": {"a": "1", "b": None}}}, "ConfigMap")
    assert out == {"metadata": {"labels": {"a": "1"}}}


def test_unlisted_kind_gets_object_meta_rules_only() -> None:
    obj = {"metadata": {"finalizers": ["a"]}, "spec": {"items": [{"name": "x"}]}}
    out = strategic_merge_patch(
        obj, {"metadata": {"finalizers": ["b"]}, "spec": {"items": [{"name": "y"}]}}, "Frob"
    )
    assert out == {"metadata": {"finalizers": ["b", "a"]}, "spec": {"items": [{"name": "y"}]}}


NAMED = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from("abcdef"), "image": st.sampled_from(["1", "2", "3"])}
    ),
    max_size=5,
    unique_by=lambda c: c["name"],
)


@given(NAMED, NAMED)
def test_keyed_merge_keeps_every_element_once_and_patch_wins(
    live: list[dict[str, str]], patch: list[dict[str, str]]
) -> None:
    pod = {"spec": {"containers": live}}
    before = copy.deepcopy(pod)
    merged = strategic_merge_patch(pod, {"spec": {"containers": patch}}, "Pod")["spec"][
        "containers"
    ]
    names = [c["name"] for c in merged]
    assert sorted(names) == sorted({c["name"] for c in live + patch})
    by_name = {c["name"]: c for c in merged}
    for container in patch:
        assert by_name[container["name"]] == container
    for container in live:
        if all(p["name"] != container["name"] for p in patch):
            assert by_name[container["name"]] == container
    assert [n for n in names if n in {p["name"] for p in patch}] == [p["name"] for p in patch]
    assert pod == before


@given(
    st.lists(st.sampled_from("abcdef"), unique=True),
    st.lists(st.sampled_from("abcdef"), unique=True),
)
def test_primitive_set_merge_is_a_union(live: list[str], patch: list[str]) -> None:
    merged = strategic_merge_patch(
        {"metadata": {"finalizers": live}}, {"metadata": {"finalizers": patch}}, "Pod"
    )
    assert sorted(merged["metadata"]["finalizers"]) == sorted(set(live) | set(patch))


@given(DOCS, DOCS)
def test_strategic_merge_without_lists_is_merge_patch(a: dict[str, Any], b: dict[str, Any]) -> None:
    patch = _diff(a, _strip_nulls(b))
    if "$patch" not in str(patch) and "[" not in str(patch):
        assert strategic_merge_patch(a, patch, "ConfigMap") == merge_patch(a, patch)
