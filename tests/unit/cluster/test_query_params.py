"""Query parameters of resource requests as kube-apiserver reads them, without a server:
booleans as Go's ParseBool, int64s as ParseInt, resourceVersion as the storage's uint64,
dryRun only `All`, the list options ValidateListOptions refuses for a list and for a watch
(422, every cause listed), selectors that do not parse (400), and DeleteOptions merged
from the body and the query (the query wins; orphanDependents picks the policy)."""

from __future__ import annotations

from typing import Any

import pytest
from multidict import MultiDict

from engine.cluster.apiserver.endpoints.params import (
    delete_options,
    dry_run,
    flag,
    integer,
    list_query,
    resource_version,
)
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import PODS
from engine.cluster.apiserver.registry.deletion import DeleteOptions


def q(*pairs: tuple[str, str]) -> MultiDict[str]:
    return MultiDict(pairs)


def refused(call: Any) -> ApiError:
    with pytest.raises(ApiError) as error:
        call()
    return error.value


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True", "yes", "on", "",
                                  "f", "F", "2", "no"])
def test_any_value_but_zero_or_false_is_true_as_convert_slice_string_to_bool_reads_it(
        text: str) -> None:
    assert flag(q(("watch", text)), "watch") is True


@pytest.mark.parametrize("text", ["0", "false", "False", "FALSE", "fAlSe"])
def test_zero_false_in_any_case_or_no_value_is_false(text: str) -> None:
    assert flag(q(("watch", text)), "watch") is False
    assert flag(q(), "watch") is False


def test_the_first_of_repeated_values_decides() -> None:
    assert flag(q(("watch", "false"), ("watch", "true")), "watch") is False
    assert flag(q(("watch", "1"), ("watch", "0")), "watch") is True


def test_an_int64_parameter_parses_as_go_does() -> None:
    assert integer(q(("limit", "+5")), "limit") == 5
    assert integer(q(("limit", str(2**63 - 1))), "limit") == 2**63 - 1
    assert integer(q(("limit", "")), "limit") is None
    for bad in (" 5", "1_0", "5.0", str(2**63), "٣"):
        assert refused(lambda bad=bad: integer(q(("limit", bad)), "limit")).message == (
            f"limit: invalid integer value {bad!r}")


def test_dry_run_is_all_or_nothing() -> None:
    assert dry_run(q(("dryRun", "All"))) is True
    assert dry_run(q()) is False
    assert refused(lambda: dry_run(q(("dryRun", "All"), ("dryRun", "Some")))).message == (
        'dryRun: Unsupported value: "Some": supported values: "All"')


def test_the_resource_version_is_a_uint64_in_etcds_words() -> None:
    assert resource_version(q(("resourceVersion", "0"))) is None
    assert resource_version(q(("resourceVersion", str(2**64 - 1)))) == 2**64 - 1
    assert refused(lambda: resource_version(q(("resourceVersion", "abc")))).message == (
        'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: '
        'parsing "abc": invalid syntax')
    assert refused(lambda: resource_version(q(("resourceVersion", str(2**64))))).message == (
        f'invalid resource version: resourceVersion: Invalid value: "{2**64}": '
        f'strconv.ParseUint: parsing "{2**64}": value out of range')


def options_refused(*pairs: tuple[str, str], watch: bool = False) -> str:
    error = refused(lambda: list_query(PODS, "team", q(*pairs), watch=watch))
    assert error.code == 422
    return error.message


class TestListOptions:
    def test_a_list_match_needs_a_version_no_continue_and_a_known_value(self) -> None:
        assert options_refused(("resourceVersionMatch", "Later"), ("continue", "x")) == (
            'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
            "resourceVersionMatch is forbidden unless resourceVersion is provided, "
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue "
            'is provided, resourceVersionMatch: Unsupported value: "Later": supported values: '
            '"Exact", "NotOlderThan", ""]')

    def test_exact_is_forbidden_for_version_zero(self) -> None:
        assert options_refused(("resourceVersionMatch", "Exact"),
                               ("resourceVersion", "0")) == (
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"')

    def test_send_initial_events_is_for_watches(self) -> None:
        assert options_refused(("sendInitialEvents", "true")).endswith(
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list")

    def test_a_watch_takes_a_match_only_with_initial_events_and_not_older_than(self) -> None:
        assert options_refused(("resourceVersionMatch", "Exact"), watch=True) == (
            'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, "
            'resourceVersionMatch: Unsupported value: "Exact": supported values: '
            '"NotOlderThan"]')
        assert options_refused(("sendInitialEvents", "true"), watch=True).endswith(
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
        assert options_refused(("sendInitialEvents", "true"), ("resourceVersionMatch", "Exact"),
                               watch=True) == (
            'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
            'resourceVersionMatch: Unsupported value: "Exact": supported values: '
            '"NotOlderThan"]')
        query = q(("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan"))
        assert list_query(PODS, "team", query, watch=True).resource_version_match == (
            "NotOlderThan")

    def test_a_good_query_carries_every_option(self) -> None:
        found = list_query(PODS, "team", q(
            ("labelSelector", "app=web"), ("fieldSelector", "spec.nodeName=n1"),
            ("limit", "10"), ("continue", "tok"), ("resourceVersion", "7")))
        assert (str(found.labels), found.limit, found.continue_token,
                found.resource_version) == ("app=web", 10, "tok", "7")
        assert found.fields is not None and found.namespace == "team"

    def test_a_selector_that_does_not_parse_is_a_bad_request_in_the_parsers_words(
        self
    ) -> None:
        error = refused(lambda: list_query(PODS, None, q(("labelSelector", "a>x"))))
        assert (error.code, error.message) == (
            400, "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
                 "operators, the value must be an integer")
        unknown = refused(lambda: list_query(PODS, None, q(("fieldSelector", "spec.x=1"))))
        assert unknown.code == 400


class TestDeleteOptions:
    def test_the_body_and_query_merge_and_the_query_wins(self) -> None:
        body = {"propagationPolicy": "Orphan", "gracePeriodSeconds": 30,
                "preconditions": {"uid": "u1", "resourceVersion": "9"}}
        assert delete_options(q(("propagationPolicy", "Foreground"),
                                ("gracePeriodSeconds", "0")), body) == DeleteOptions(
            propagation="Foreground", grace_period=0, uid="u1", resource_version="9")
        assert delete_options(q(), body) == DeleteOptions(
            propagation="Orphan", grace_period=30, uid="u1", resource_version="9")

    def test_orphan_dependents_picks_the_policy_when_none_is_given(self) -> None:
        assert delete_options(q(("orphanDependents", "true")), None).propagation == "Orphan"
        assert delete_options(q(), {"orphanDependents": False}).propagation == "Background"
        assert delete_options(q(), None).propagation is None

    def test_a_dry_run_from_either_place(self) -> None:
        assert delete_options(q(("dryRun", "All")), None).dry_run is True
        assert delete_options(q(), {"dryRun": ["All"]}).dry_run is True
        assert refused(lambda: delete_options(q(), {"dryRun": ["Some"]})).message == (
            'dryRun: Unsupported value: "Some": supported values: "All"')

    def test_a_body_of_the_wrong_shape_is_refused_as_go_decodes_it(self) -> None:
        assert refused(lambda: delete_options(q(), [1])).message == (
            "json: cannot unmarshal array into Go value of type v1.DeleteOptions")
        assert refused(lambda: delete_options(q(), {"gracePeriodSeconds": "5"})).message == (
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds "
            "of type int64")
        assert refused(lambda: delete_options(q(), {"gracePeriodSeconds": 1.5})).message == (
            "json: cannot unmarshal number 1.5 into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64")
        assert refused(lambda: delete_options(
            q(), {"preconditions": {"uid": 7}})).message == (
            "json: cannot unmarshal number into Go struct field DeleteOptions.preconditions.uid "
            "of type string")
