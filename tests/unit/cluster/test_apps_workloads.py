"""Deployment, ReplicaSet and ReplicationController defaulting and validation, as upstream.

Defaults with absent fields and with the explicit zero values Go clients send; validation
causes with kube-apiserver's field paths and words; maxSurge/maxUnavailable read as
getIntOrPercentValue reads them (property-based).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.admission.apps_defaults import (
    deployment_defaults,
    replica_set_defaults,
    replication_controller_defaults,
)
from engine.cluster.apiserver.validation.apps_workloads import (
    go_int_or_string,
    int_or_percent_value,
    strategy_causes,
    validate_deployment,
    validate_deployment_status,
    validate_replica_set,
    validate_replica_status,
    validate_replication_controller,
)
from engine.cluster.apiserver.validation.builtin_validation import validate_builtin

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def deployment(**spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE),
            **spec}
    return deployment_defaults({"metadata": {"name": "web"}, "spec": body})


def messages(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def test_deployment_defaults() -> None:
    spec = deployment()["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert spec["template"]["metadata"]["creationTimestamp"] is None


def test_deployment_defaults_keep_explicit_zero_pointers_and_fill_zero_values() -> None:
    spec = deployment(replicas=0, revisionHistoryLimit=0, minReadySeconds=0, paused=False,
                      strategy={"type": "", "rollingUpdate": {"maxSurge": 0}})["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (0, 0)
    assert "minReadySeconds" not in spec and "paused" not in spec  # omitempty
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"}}


def test_recreate_gets_no_rolling_update() -> None:
    assert deployment(strategy={"type": "Recreate"})["spec"]["strategy"] == {"type": "Recreate"}


def test_status_as_go_writes_the_zero_one() -> None:
    assert deployment()["status"] == {}
    rs = replica_set_defaults({"metadata": {"name": "r"}, "spec": {"template": TEMPLATE}})
    assert rs["status"] == {"replicas": 0} and rs["spec"]["replicas"] == 1


def test_a_replication_controller_takes_its_templates_labels() -> None:
    rc = replication_controller_defaults({"metadata": {"name": "r"},
                                          "spec": {"template": copy.deepcopy(TEMPLATE)}})
    assert rc["spec"]["selector"] == {"app": "web"}
    assert rc["metadata"]["labels"] == {"app": "web"}
    assert rc["spec"]["replicas"] == 1
    kept = replication_controller_defaults({"metadata": {"name": "r", "labels": {"x": "y"}},
                                            "spec": {"selector": {"app": "web"},
                                                     "template": copy.deepcopy(TEMPLATE)}})
    assert kept["metadata"]["labels"] == {"x": "y"}


def test_a_valid_deployment_has_no_causes() -> None:
    assert validate_deployment(deployment(), None) == []


def test_deployment_spec_causes_in_upstreams_words() -> None:
    bad = deployment(replicas=-1, minReadySeconds=10, progressDeadlineSeconds=10,
                     revisionHistoryLimit=-2)
    bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert messages(validate_deployment(bad, None)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
        "ReplicaSet is not Supported",
        "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
        "spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds",
    ]


def test_selector_required_not_empty_and_matching() -> None:
    missing = deployment()
    del missing["spec"]["selector"]
    assert messages(validate_deployment(missing, None))[:2] == [
        "spec.selector: Required value",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
        "`selector` does not match template `labels`",
    ]
    empty = messages(validate_deployment(deployment(selector={}), None))
    assert empty == ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]"
                     "string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty "
                     "selector is invalid for deployment"]
    other = messages(validate_deployment(deployment(selector={"matchLabels": {"app": "x"}}),
                                         None))
    assert other == ['spec.template.metadata.labels: Invalid value: map[string]string{"app":'
                     '"web"}: `selector` does not match template `labels`']


def test_strategy_rules() -> None:
    assert messages(strategy_causes({"type": "Recreate", "rollingUpdate": {}}, "s")) == [
        "s.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]
    both_zero = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}
    assert messages(strategy_causes(both_zero, "s")) == [
        's.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
        'StrVal:"0%"}: may not be 0 when `maxSurge` is 0']
    over = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "x", "maxUnavailable": "101%"}}
    assert [c.field for c in strategy_causes(over, "s")] == [
        "s.rollingUpdate.maxSurge", "s.rollingUpdate.maxUnavailable"]
    assert "must not be greater than 100%" in strategy_causes(over, "s")[1].message
    unknown = strategy_causes({"type": "Blue"}, "s")[0]
    assert unknown.message.endswith('supported values: "Recreate", "RollingUpdate"')


@given(st.integers(0, 10_000))
def test_a_percent_reads_as_its_number(number: int) -> None:
    assert int_or_percent_value(f"{number}%") == number
    assert int_or_percent_value(number) == number
    assert go_int_or_string(f"{number}%").endswith(f'StrVal:"{number}%"}}')


@given(st.text(max_size=8))
def test_any_other_string_reads_as_intvalue_does(text: str) -> None:
    value = int_or_percent_value(text)
    if text.endswith("%") and text[:-1].isascii() and text[:-1].isdigit():
        assert value == int(text[:-1])
    else:
        try:
            assert value == int(text)
        except ValueError:
            assert value == 0


def test_the_selector_is_immutable_in_apps_v1_but_not_for_a_replication_controller() -> None:
    old = deployment()
    new = deployment(selector={"matchLabels": {"app": "web", "tier": "a"}})
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "a"
    assert messages(validate_deployment(new, old))[-1].endswith("field is immutable")
    rs_old = replica_set_defaults(copy.deepcopy(old))
    rs_new = replica_set_defaults(copy.deepcopy(new))
    assert validate_replica_set(rs_new, rs_old)[-1].message.endswith("field is immutable")
    rc_old = replication_controller_defaults({"metadata": {"name": "r"}, "spec": {
        "template": copy.deepcopy(TEMPLATE)}})
    rc_new = copy.deepcopy(rc_old)
    rc_new["spec"]["selector"] = {}
    rc_new["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    rc_new = replication_controller_defaults(rc_new)
    assert validate_replication_controller(rc_new, rc_old) == []


def test_a_replica_sets_update_lists_its_spec_causes_twice_as_upstream() -> None:
    old = replica_set_defaults({"metadata": {"name": "r"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE)}})
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = -1
    assert [c.field for c in validate_replica_set(new, old)] == ["spec.replicas"] * 2


def test_status_rules() -> None:
    old = deployment()
    bad = {**old, "status": {"replicas": 1, "readyReplicas": 2, "availableReplicas": 2,
                             "collisionCount": 1}}
    assert [c.field for c in validate_deployment_status(bad, old)] == [
        "status.readyReplicas", "status.availableReplicas"]
    counted = {**old, "status": {"collisionCount": 2}}
    dropped = {**old, "status": {"collisionCount": 1}}
    assert messages(validate_deployment_status(dropped, counted)) == [
        "status.collisionCount: Invalid value: 1: cannot be decremented"]
    rs = {"status": {"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": -1}}
    assert [c.field for c in validate_replica_status(rs, rs)] == [
        "status.readyReplicas", "status.fullyLabeledReplicas", "status.availableReplicas"]


def test_through_the_builtin_entry_point_a_status_write_is_judged_by_status_rules() -> None:
    old = deployment()
    new = {**old, "status": {"replicas": 2, "updatedReplicas": -1}}
    assert messages(validate_builtin("Deployment", new, old, subresource="status")) == [
        "status.updatedReplicas: Invalid value: -1: must be greater than or equal to 0"]
