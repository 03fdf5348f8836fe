"""What a body may be before the server's validators see it: nested at most MAX_DEPTH levels,
and shaped as the built-in kind's Go types (an object where a struct or map is, a list where
a list is), else a 400 worded as Go's decoder words it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.admission.typed_decoding import decode_typed
from engine.cluster.apiserver.encoding.json_documents import MAX_DEPTH, check_depth
from engine.cluster.apiserver.endpoints.responses import warning_header
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, PODS


def _nested(levels: int) -> Any:
    """A document of exactly `levels` nested objects."""
    value: Any = {}
    for _ in range(levels - 1):
        value = {"x": value}
    return value


@given(st.integers(1, MAX_DEPTH * 3), st.booleans())
def test_documents_up_to_the_limit_pass_and_deeper_ones_are_400(levels: int,
                                                                 in_list: bool) -> None:
    document = [_nested(levels - 1)] if in_list and levels > 1 else _nested(levels)
    if levels <= MAX_DEPTH:
        check_depth(document, "the request body")
        return
    with pytest.raises(ApiError) as refused:
        check_depth(document, "the request body")
    assert (refused.value.code, refused.value.reason) == (400, "BadRequest")
    assert refused.value.message == (f"the request body is nested more than {MAX_DEPTH} "
                                     f"levels deep, more than this server accepts")


def test_depth_far_past_pythons_recursion_limit_is_measured() -> None:
    with pytest.raises(ApiError):
        check_depth(_nested(50_000), "the patch")


@pytest.mark.parametrize(("body", "message"), [
    ({"metadata": {"name": "p", "labels": ["a"]}, "spec": {"containers": []}},
     "json: cannot unmarshal array into Go struct field Pod.metadata.labels of type object"),
    ({"metadata": {"name": "p"}, "spec": {"containers": {"name": "a"}}},
     "json: cannot unmarshal object into Go struct field Pod.spec.containers of type array"),
    ({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "env": [[]]}]}},
     "json: cannot unmarshal array into Go struct field Pod.spec.containers.env of type object"),
    ({"metadata": {"name": "p"}, "spec": {"containers": [{"name": {"x": 1}}]}},
     "json: cannot unmarshal object into Go struct field Pod.spec.containers.name of type a "
     "scalar"),
])
def test_a_body_of_the_wrong_shape_is_400_naming_the_field(body: dict[str, Any],
                                                           message: str) -> None:
    with pytest.raises(ApiError) as refused:
        decode_typed(PODS, body)
    assert refused.value.code == 400
    assert refused.value.message == f'Pod in version "v1" cannot be handled as a Pod: {message}'


_STORED_POD = {"metadata": {"name": "p", "labels": {"a": "b"}},
               "spec": {"containers": [{"name": "a", "env": [{"name": "E"}]}, {"name": "b"}]},
               "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled"}]}}


@pytest.mark.parametrize(("change", "message"), [
    (lambda pod: pod["metadata"].update(labels=["a"]),
     "json: cannot unmarshal array into Go struct field Pod.metadata.labels of type object"),
    (lambda pod: pod["spec"]["containers"][0].update(env=[[]]),
     "json: cannot unmarshal array into Go struct field Pod.spec.containers.env of type object"),
    (lambda pod: pod["spec"]["containers"][1].update(name={"x": 1}),
     "json: cannot unmarshal object into Go struct field Pod.spec.containers.name of type a "
     "scalar"),
    (lambda pod: pod["spec"]["containers"].append({"name": "c", "ports": {}}),
     "json: cannot unmarshal object into Go struct field Pod.spec.containers.ports of type "
     "array"),
    (lambda pod: pod["status"].update(conditions={"type": "Ready"}),
     "json: cannot unmarshal object into Go struct field Pod.status.conditions of type array"),
])
def test_an_update_of_the_wrong_shape_is_400_whatever_it_leaves_as_stored(
        change: Any, message: str) -> None:
    """An update's shapes are checked where it differs from the stored object (the rest was
    checked when stored): a misfit anywhere it changed, the second item of a list included,
    is refused as on create."""
    body = copy.deepcopy(_STORED_POD)
    change(body)
    decode_typed(PODS, copy.deepcopy(_STORED_POD), _STORED_POD)
    with pytest.raises(ApiError) as refused:
        decode_typed(PODS, body, _STORED_POD)
    assert refused.value.code == 400
    assert refused.value.message == f'Pod in version "v1" cannot be handled as a Pod: {message}'


def test_configmap_data_must_map_strings() -> None:
    with pytest.raises(ApiError) as refused:
        decode_typed(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"k": 1}})
    assert "cannot unmarshal number into Go struct field ConfigMap.data of type string" in (
        refused.value.message)


def test_a_warning_quotes_control_characters_as_go_does() -> None:
    assert warning_header('unknown field "\x1f\n\\"') == (
        '299 - "unknown field \\"\\x1f\\n\\\\\\""')
