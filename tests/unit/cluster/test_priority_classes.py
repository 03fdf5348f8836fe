"""PriorityClass and the Priority admission plugin, without HTTP.

The kind's rules (value range, reserved names, defaults, immutability,
decoding), the pod admission (class lookup, global default, refusals) and the
one-default rule, each worded as kube-apiserver words them; then the same
through the store, where the plugin runs between defaulting and validation.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from engine.cluster.apiserver.admission.priority_admission import (
    admit_pod,
    check_priority_class,
    default_class,
)
from engine.cluster.apiserver.admission.typed_decoding import decode_typed
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.encoding.protobuf import decode_request
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.printing.tables import to_table
from engine.cluster.apiserver.registry.builtins import PODS, PRIORITY_CLASSES
from engine.cluster.apiserver.registry.priority_classes import (
    SYSTEM_CLASSES,
    priority_class_immutable,
    validate_priority_class,
    with_defaults,
)
from tests.unit.cluster.store_support import ManualReactor, make_core
from tests.unit.cluster.test_protobuf import envelope, ld, num


def pc(name: str, value: int = 1000, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
        **fields,
    }


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}], **spec},
    }


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    causes = validate_priority_class(obj)
    if old is not None:
        causes += priority_class_immutable(obj, old)
    return [f"{c.field}: {c.message}" for c in causes]


def refusal(call: Any) -> tuple[int, str]:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value.code, caught.value.message


# --- the kind ------------------------------------------------------------------------------


class TestValidation:
    def test_user_values_stop_at_one_billion(self) -> None:
        assert messages(pc("top", 1_000_000_000)) == []
        assert messages(pc("negative", -2_147_483_648)) == []
        assert messages(pc("over", 1_000_000_001)) == [
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
        ]

    @pytest.mark.parametrize(
        ("name", "value", "extra", "problem"),
        [
            ("system-mine", 5, {}, "system-mine is not a known system priority class"),
            (
                "system-node-critical",
                2_000_000_000,
                {},
                "value of system-node-critical PriorityClass must be 2000001000",
            ),
            (
                "system-cluster-critical",
                2_000_000_000,
                {"globalDefault": True},
                "globalDefault of system-cluster-critical PriorityClass must be false",
            ),
        ],
    )
    def test_the_system_prefix_is_reserved(
        self, name: str, value: int, extra: dict[str, Any], problem: str
    ) -> None:
        assert messages(pc(name, value, **extra)) == [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
            f"for system use only. error: {problem}"
        ]

    def test_the_system_classes_themselves_are_valid(self) -> None:
        for system in SYSTEM_CLASSES:
            assert messages(with_defaults(system.as_object())) == []

    def test_preemption_policy_is_one_of_two(self) -> None:
        assert messages(pc("a", preemptionPolicy="Never")) == []
        assert messages(pc("a", preemptionPolicy="")) == ["preemptionPolicy: Required value"]
        assert messages(pc("a", preemptionPolicy="Always")) == [
            'preemptionPolicy: Unsupported value: "Always": supported values: '
            '"PreemptLowerPriority", "Never"'
        ]

    def test_value_and_preemption_policy_are_immutable(self) -> None:
        old = pc("a", 10)
        assert messages(pc("a", 10, description="new", globalDefault=True), old) == []
        assert messages(pc("a", 11, preemptionPolicy="Never"), old) == [
            "value: Forbidden: may not be changed in an update.",
            'preemptionPolicy: Invalid value: "Never": field is immutable',
        ]


class TestDefaultsAndDecoding:
    def test_preemption_policy_defaults_unless_given(self) -> None:
        bare = {"metadata": {"name": "a"}, "value": 1}
        assert with_defaults(bare)["preemptionPolicy"] == "PreemptLowerPriority"
        assert with_defaults({**bare, "preemptionPolicy": None})["preemptionPolicy"] == (
            "PreemptLowerPriority"
        )
        assert with_defaults({**bare, "preemptionPolicy": "Never"})["preemptionPolicy"] == "Never"
        assert with_defaults({**bare, "preemptionPolicy": ""})["preemptionPolicy"] == ""

    def test_value_reads_zero_when_absent_and_zero_values_are_left_out(self) -> None:
        decoded = decode_typed(
            PRIORITY_CLASSES,
            {"metadata": {"name": "a"}, "globalDefault": False, "description": "", "value": None},
        )
        assert decoded == {"metadata": {"name": "a"}, "value": 0}

    @pytest.mark.parametrize(
        ("field", "value", "detail"),
        [
            ("value", "10", "cannot unmarshal string into Go struct field PriorityClass.value "
             "of type int32"),
            ("value", 2_147_483_648, "cannot unmarshal number 2147483648 into Go struct field "
             "PriorityClass.value of type int32"),
            ("value", 1.5, "cannot unmarshal number 1.5 into Go struct field PriorityClass.value "
             "of type int32"),
            ("globalDefault", "yes", "cannot unmarshal string into Go struct field "
             "PriorityClass.globalDefault of type bool"),
            ("preemptionPolicy", 1, "cannot unmarshal number into Go struct field "
             "PriorityClass.preemptionPolicy of type v1.PreemptionPolicy"),
        ],
    )
    def test_wrong_types_are_a_400(self, field: str, value: Any, detail: str) -> None:
        with pytest.raises(ApiError) as caught:
            decode_typed(PRIORITY_CLASSES, {"metadata": {"name": "a"}, field: value})
        assert caught.value.code == 400
        assert caught.value.message == (
            f'PriorityClass in version "v1" cannot be handled as a PriorityClass: json: {detail}'
        )

    def test_int32_bounds_decode(self) -> None:
        for value in (2_147_483_647, -2_147_483_648):
            assert decode_typed(PRIORITY_CLASSES, {"value": value})["value"] == value

    def test_protobuf_body_as_kubectl_create_priorityclass_sends_it(self) -> None:
        raw = ld(1, ld(1, "high")) + num(2, 1000) + num(3, 0) + ld(4, "d") + ld(5, "Never")
        assert decode_request(envelope("scheduling.k8s.io/v1", "PriorityClass", raw)) == {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "description": "d",
            "preemptionPolicy": "Never",
        }

    def test_protobuf_keeps_a_zero_value_and_a_negative_one(self) -> None:
        zero = decode_request(envelope("scheduling.k8s.io/v1", "PriorityClass", num(2, 0)))
        assert zero["value"] == 0
        negative = decode_request(envelope("scheduling.k8s.io/v1", "PriorityClass", num(2, -5)))
        assert negative["value"] == -5


class TestTable:
    def test_columns_and_cells_as_kubectl_get_pc_prints_them(self) -> None:
        now = datetime.datetime(2025, 6, 1, 12, 0, 0, tzinfo=datetime.UTC)
        obj = pc("high", 1000, globalDefault=True)
        obj["metadata"]["creationTimestamp"] = "2025-06-01T11:59:00Z"
        doc = to_table(PRIORITY_CLASSES, [obj], now=now, list_metadata={"resourceVersion": "3"})
        assert [(c["name"], c["type"], c["priority"]) for c in doc["columnDefinitions"]] == [
            ("Name", "string", 0),
            ("Value", "integer", 0),
            ("Global-Default", "boolean", 0),
            ("Age", "string", 0),
            ("PreemptionPolicy", "string", 0),
        ]
        assert doc["rows"][0]["cells"] == ["high", 1000, True, "60s", "PreemptLowerPriority"]


# --- the Priority admission plugin ----------------------------------------------------------


class TestPodAdmission:
    CLASSES = {"high": pc("high", 1000), "quiet": pc("quiet", 5, preemptionPolicy="Never")}

    def test_a_named_class_gives_its_value_and_policy(self) -> None:
        spec = admit_pod(pod(priorityClassName="quiet"), None, self.CLASSES, name="p")["spec"]
        assert (spec["priority"], spec["preemptionPolicy"]) == (5, "Never")
        assert spec["priorityClassName"] == "quiet"

    def test_an_unknown_class_is_forbidden_naming_the_pod_as_sent(self) -> None:
        body = pod(priorityClassName="nope")
        assert refusal(lambda: admit_pod(body, None, self.CLASSES, name="web-")) == (
            403,
            'pods "web-" is forbidden: no PriorityClass with name nope was found',
        )

    def test_without_a_class_and_without_a_default_priority_is_zero(self) -> None:
        spec = admit_pod(pod(priorityClassName=""), None, self.CLASSES, name="p")["spec"]
        assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
        assert "priorityClassName" not in spec

    def test_the_global_default_names_itself_in_the_pod(self) -> None:
        classes = {**self.CLASSES, "base": pc("base", 7, globalDefault=True,
                                              preemptionPolicy="Never")}
        spec = admit_pod(pod(), None, classes, name="p")["spec"]
        assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
            "base", 7, "Never"
        )

    def test_of_several_defaults_the_lowest_value_wins(self) -> None:
        classes = {
            "b": pc("b", 9, globalDefault=True),
            "a": pc("a", 8, globalDefault=True),
            "c": pc("c", 1),
        }
        chosen = default_class(classes)
        assert chosen is not None and chosen["metadata"]["name"] == "a"

    def test_a_matching_priority_passes_and_a_different_one_is_forbidden(self) -> None:
        same = pod(priorityClassName="high", priority=1000, preemptionPolicy="PreemptLowerPriority")
        assert admit_pod(same, None, self.CLASSES, name="p")["spec"]["priority"] == 1000
        assert admit_pod(pod(priority=0), None, self.CLASSES, name="p")["spec"]["priority"] == 0
        code, message = refusal(
            lambda: admit_pod(pod(priorityClassName="high", priority=3), None, self.CLASSES,
                              name="p")
        )
        assert (code, message) == (
            403,
            'pods "p" is forbidden: the integer value of priority (3) must not be provided in '
            "pod spec; priority admission controller computed 1000 from the given PriorityClass "
            "name",
        )

    def test_a_different_preemption_policy_is_forbidden(self) -> None:
        body = pod(priorityClassName="high", preemptionPolicy="Never")
        assert refusal(lambda: admit_pod(body, None, self.CLASSES, name="p")) == (
            403,
            'pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be '
            "provided in pod spec; priority admission controller computed PreemptLowerPriority "
            "from the given PriorityClass name",
        )

    def test_an_update_without_the_fields_keeps_the_stored_ones(self) -> None:
        old = pod(priorityClassName="high", priority=1000, preemptionPolicy="Never")
        new = admit_pod(pod(priorityClassName="high"), old, {}, name="p")["spec"]
        assert (new["priority"], new["preemptionPolicy"]) == (1000, "Never")
        changed = admit_pod(pod(priority=4), old, {}, name="p")["spec"]
        assert changed["priority"] == 4  # validation, not admission, refuses the change


class TestOneDefault:
    def test_a_second_default_is_forbidden_on_create(self) -> None:
        classes = {"base": pc("base", 1, globalDefault=True)}
        assert refusal(lambda: check_priority_class(pc("more", globalDefault=True), None,
                                                    classes)) == (
            403,
            'priorityclasses.scheduling.k8s.io "more" is forbidden: PriorityClass base is '
            "already marked as default. Only one default can exist",
        )
        check_priority_class(pc("more"), None, classes)
        check_priority_class(pc("first", globalDefault=True), None, {})

    def test_the_default_may_be_updated_but_another_may_not_become_one(self) -> None:
        base = pc("base", 1, globalDefault=True)
        classes = {"base": base, "other": pc("other")}
        check_priority_class({**base, "description": "x"}, base, classes)
        with pytest.raises(ApiError) as caught:
            check_priority_class(pc("other", globalDefault=True), classes["other"], classes)
        assert caught.value.code == 403


# --- through the store ----------------------------------------------------------------------


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def test_the_system_classes_exist_from_the_start(core: Core) -> None:
    stored = {
        name: entry.obj for (_, name), entry in core.store.table.bucket(
            PRIORITY_CLASSES.key).entries.items()
    }
    assert {name: obj["value"] for name, obj in stored.items()} == {
        "system-cluster-critical": 2_000_000_000,
        "system-node-critical": 2_000_001_000,
    }
    assert all(obj["preemptionPolicy"] == "PreemptLowerPriority" for obj in stored.values())
    assert all("globalDefault" not in obj for obj in stored.values())


def test_a_pod_create_runs_the_plugin_between_defaults_and_validation(core: Core) -> None:
    core.store.create(PRIORITY_CLASSES, "", pc("high", 1000))
    body = pod(priorityClassName="high")
    created = core.store.create(PODS, "default", body).entry.obj
    assert created["spec"]["priority"] == 1000
    assert created["spec"]["restartPolicy"] == "Always"
    # An invalid pod with an unknown class hears about the class first, as upstream answers.
    broken = {"metadata": {"generateName": "x-"}, "spec": {"priorityClassName": "gone"}}
    with pytest.raises(ApiError) as caught:
        core.store.create(PODS, "default", broken)
    assert caught.value.code == 403
    assert caught.value.message.startswith('pods "x-" is forbidden')


def test_a_pod_put_without_priority_keeps_it_and_a_changed_one_is_invalid(core: Core) -> None:
    core.store.create(PRIORITY_CLASSES, "", pc("high", 1000))
    created = core.store.create(PODS, "default", pod(priorityClassName="high")).entry.obj
    body = {**created, "spec": {k: v for k, v in created["spec"].items() if k != "priority"}}
    kept = core.store.update(PODS, "default", "p", body).entry.obj
    assert kept["spec"]["priority"] == 1000
    changed = {**created, "spec": {**created["spec"], "priority": 1}}
    with pytest.raises(ApiError) as caught:
        core.store.update(PODS, "default", "p", changed)
    assert caught.value.code == 422


def test_a_class_update_keeps_generation_one(core: Core) -> None:
    core.store.create(PRIORITY_CLASSES, "", pc("high", 1000))
    body = {**pc("high", 1000), "description": "now described"}
    updated = core.store.update(PRIORITY_CLASSES, "", "high", body).entry.obj
    assert updated["description"] == "now described"
    assert updated["metadata"]["generation"] == 1


def test_a_second_default_is_refused_after_validation(core: Core) -> None:
    core.store.create(PRIORITY_CLASSES, "", pc("base", 1, globalDefault=True))
    with pytest.raises(ApiError) as invalid:
        core.store.create(PRIORITY_CLASSES, "", pc("over", 2_000_000_000, globalDefault=True))
    assert invalid.value.code == 422
    with pytest.raises(ApiError) as forbidden:
        core.store.create(PRIORITY_CLASSES, "", pc("more", 2, globalDefault=True))
    assert forbidden.value.code == 403
