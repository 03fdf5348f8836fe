"""The patch formats at their edges: every refusal with the code and the words
kube-apiserver answers with (evanphx/json-patch's for JSON patch, apimachinery's
strategicpatch for strategic merge), paths through lists, values the patch must not share
with the result, and strategic merge's directives below the top level (the merge keys of
a nested list found by its path)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.cluster.apiserver.patch.patch import (
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from engine.cluster.apiserver.patch.values import PatchError

DOC: dict[str, Any] = {"a": [{"b": 1}], "n": 1}


def _refused(call: Any, *args: Any) -> PatchError:
    with pytest.raises(PatchError) as raised:
        call(*args)
    return raised.value


@pytest.mark.parametrize("patch", [[1, 2], 5, "x", None])
def test_a_merge_patch_that_is_no_object_replaces_the_whole_document(patch: Any) -> None:
    assert merge_patch({"a": 1}, patch) == patch


def test_json_patch_paths_go_through_list_items() -> None:
    assert json_patch(DOC, [{"op": "replace", "path": "/a/0/b", "value": 2}]) == {
        "a": [{"b": 2}], "n": 1}
    assert json_patch(DOC, [{"op": "test", "path": "/a/0/b", "value": 1}]) == DOC
    assert json_patch(DOC, [{"op": "add", "path": "/a/0/c", "value": 3}])["a"] == [
        {"b": 1, "c": 3}]


@pytest.mark.parametrize(("operation", "message"), [
    ({"op": "replace", "path": "/a/1/b", "value": 2},
     "Unable to access invalid index: 1: invalid index referenced"),
    ({"op": "test", "path": "/a/1", "value": 2},
     "Unable to access invalid index: 1: invalid index referenced"),
    ({"op": "remove", "path": "/a/1"},
     "Unable to access invalid index: 1: invalid index referenced"),
    ({"op": "add", "path": "/a/2", "value": 2},
     "Unable to access invalid index: 2: invalid index referenced"),
    ({"op": "test", "path": "/x/y", "value": 1},
     'test operation does not apply: doc is missing path: "/x/y": missing value'),
    ({"op": "test", "path": "/x", "value": 1},
     "test operation does not apply: doc is missing from path: /x: missing value"),
    ({"op": "add", "path": "/x/y", "value": 1},
     'add operation does not apply: doc is missing path: "/x/y": missing value'),
    ({"op": "add", "path": "/n/y", "value": 1},
     'add operation does not apply: doc is missing path: "/n/y": missing value'),
    ({"op": "remove", "path": "/x/y"},
     'remove operation does not apply: doc is missing path: "/x/y": missing value'),
    ({"op": "remove", "path": ""},
     "remove operation does not apply: cannot remove the whole document"),
    ({"op": "move", "from": "/x/y", "path": "/z"},
     'move operation does not apply: doc is missing path: "/x/y": missing value'),
])
def test_a_json_patch_that_does_not_apply_is_422_with_evanphx_words(
        operation: dict[str, Any], message: str) -> None:
    refused = _refused(json_patch, DOC, [operation])
    assert (refused.code, str(refused)) == (422, message)


@pytest.mark.parametrize(("operation", "message"), [
    ({"op": "add", "path": "/n"}, "add operation is missing value"),
    ({"op": "replace", "path": "/n"}, "replace operation is missing value"),
    ({"op": "test", "path": "/n"}, "test operation is missing value"),
    ({"op": "move", "path": "/n"}, "move operation is missing from"),
    ({"op": "copy", "path": "/n", "from": 1}, "copy operation is missing from"),
])
def test_a_malformed_json_patch_operation_is_400(operation: dict[str, Any], message: str
                                                 ) -> None:
    refused = _refused(json_patch, DOC, [operation])
    assert (refused.code, str(refused)) == (400, message)


def test_a_json_patch_that_is_no_list_is_400_with_the_decoders_words() -> None:
    refused = _refused(json_patch, DOC, {"op": "add"})
    assert (refused.code, str(refused)) == (
        400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")


@pytest.mark.parametrize("op", ["add", "replace"])
def test_a_json_patch_value_is_not_shared_with_the_result(op: str) -> None:
    value = {"b": {"c": 1}}
    operations = [{"op": op, "path": "/n", "value": value},
                  {"op": "replace", "path": "/n/b/c", "value": 2}]
    kept = copy.deepcopy(operations)
    assert json_patch(DOC, operations)["n"] == {"b": {"c": 2}}
    assert operations == kept


def test_a_json_patch_replacing_the_whole_document_does_not_share_the_value() -> None:
    value = {"b": {"c": 1}}
    operations = [{"op": "replace", "path": "", "value": value},
                  {"op": "replace", "path": "/b/c", "value": 2}]
    assert json_patch(DOC, operations) == {"b": {"c": 2}}
    assert value == {"b": {"c": 1}}


def test_a_copied_value_is_its_own() -> None:
    doc = {"a": {"b": {"c": 1}}}
    patched = json_patch(doc, [{"op": "copy", "from": "/a", "path": "/d"},
                               {"op": "replace", "path": "/d/b/c", "value": 2}])
    assert patched == {"a": {"b": {"c": 1}}, "d": {"b": {"c": 2}}}


def test_a_strategic_merge_patch_that_is_no_object_is_400() -> None:
    refused = _refused(strategic_merge_patch, {}, [1], "Pod")
    assert (refused.code, str(refused)) == (
        400, "unable to unmarshal patch: not a JSON object")


POD: dict[str, Any] = {"spec": {"containers": [
    {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
    {"name": "b", "image": "b:1"},
]}}


def _pod(patch: dict[str, Any], target: dict[str, Any] = POD) -> dict[str, Any]:
    return strategic_merge_patch(target, patch, "Pod")


def test_a_replaced_map_still_merges_its_lists_by_their_keys() -> None:
    patched = _pod({"spec": {"$patch": "replace", "containers": [
        {"name": "c", "image": "c:1"}, {"name": "a", "$patch": "delete"}]}})
    assert patched == {"spec": {"containers": [{"name": "c", "image": "c:1"}]}}


def test_a_new_list_item_merges_its_own_lists_by_their_keys() -> None:
    patched = _pod({"spec": {"containers": [
        {"name": "c", "env": [{"name": "Y", "value": "2"}, {"name": "Z", "$patch": "delete"}]}]}})
    [new] = [c for c in patched["spec"]["containers"] if c["name"] == "c"]
    assert new == {"name": "c", "env": [{"name": "Y", "value": "2"}]}


def test_a_replaced_list_merges_its_items_lists_by_their_keys() -> None:
    patched = _pod({"spec": {"containers": [
        {"$patch": "replace"},
        {"name": "c", "env": [{"name": "Y", "value": "2"}, {"name": "Z", "$patch": "delete"}]}]}})
    assert patched == {"spec": {"containers": [
        {"name": "c", "env": [{"name": "Y", "value": "2"}]}]}}


def test_a_keyed_list_replacing_a_value_of_another_type_starts_empty() -> None:
    patched = _pod({"spec": {"containers": [{"name": "c", "image": "c:1"}]}},
                   {"spec": {"containers": {"name": "a"}}})
    assert patched == {"spec": {"containers": [{"name": "c", "image": "c:1"}]}}


@pytest.mark.parametrize(("patch", "code", "message"), [
    ({"spec": {"$patch": "merge!"}}, 400, "Unknown patch type: merge! in map: {}"),
    ({"metadata": {"finalizers": [{"a": 1}]}}, 400,
     "invalid list of primitives at metadata.finalizers: {'a': 1}"),
    ({"spec": {"containers": ["a"]}}, 400,
     "spec.containers: list item 'a' is not an object with merge key name"),
    ({"spec": {"containers": [{"image": "x"}]}}, 400,
     "map: {'image': 'x'} does not contain declared merge key: name"),
    ({"spec": {"containers": [{"$patch": "delete"}]}}, 400,
     "map: {'$patch': 'delete'} does not contain declared merge key: name"),
    ({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, 400,
     "merging lists cannot yet be specified in the patch"),
    ({"spec": {"containers": [{"name": "a", "$patch": "other"}]}}, 400,
     "Unknown patch type: other in map: {'name': 'a', '$patch': 'other'}"),
    ({"spec": {"$retainKeys": "containers"}}, 400, "invalid patch format of retainKeys"),
    ({"spec": {"$retainKeys": ["x"], "containers": []}}, 409,
     "invalid patch format of retainKeys"),
    ({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}, 400,
     "invalid list of primitives"),
    ({"spec": {"$setElementOrder/containers": "a"}}, 400,
     "invalid patch format of setElementOrder list"),
    ({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
               "containers": [{"name": "a"}, {"name": "b"}]}}, 400,
     "The order in patch list:\n[{'name': 'a'}, {'name': 'b'}]\n doesn't match "
     "$setElementOrder list:\n[{'name': 'b'}, {'name': 'a'}]\n"),
])
def test_a_malformed_strategic_merge_patch_is_refused_with_apimachinerys_words(
        patch: dict[str, Any], code: int, message: str) -> None:
    refused = _refused(strategic_merge_patch, POD | {"metadata": {"finalizers": ["a"]}},
                       patch, "Pod")
    assert (refused.code, str(refused)) == (code, message)


def test_retain_keys_lets_the_patchs_own_directives_through() -> None:
    patched = _pod({"spec": {"$retainKeys": ["containers"],
                             "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                             "$deleteFromPrimitiveList/args": ["x"]}})
    assert [c["name"] for c in patched["spec"]["containers"]] == ["b", "a"]


def test_set_element_order_takes_every_item_the_patch_names() -> None:
    patched = _pod({"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
        "containers": [{"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}]}})
    assert [c["name"] for c in patched["spec"]["containers"]] == ["b", "a", "c"]


def test_set_element_order_interleaves_live_only_items_by_their_live_order() -> None:
    """b comes before c on the server, so before it in the result (apimachinery's
    normalizeElementOrder); d after every item the order names."""
    live = {"spec": {"containers": [{"name": n} for n in ("a", "b", "c", "d")]}}
    patched = _pod({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                             "containers": [{"name": "c", "image": "c:2"}]}}, live)
    assert [c["name"] for c in patched["spec"]["containers"]] == ["b", "c", "a", "d"]


def test_set_element_order_of_a_list_without_a_merge_key_compares_whole_items() -> None:
    refused = _refused(strategic_merge_patch, {"spec": {"list": [{"a": 1}, {"a": 2}]}},
                       {"spec": {"$setElementOrder/list": [{"a": 1}, {"a": 2}],
                                 "list": [{"a": 2}, {"a": 1}]}}, "Pod")
    assert refused.code == 400
    assert str(refused).startswith("The order in patch list:")
