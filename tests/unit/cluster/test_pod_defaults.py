"""Pod defaulting that reaches resources: requests taken from limits, then the QoS class.

kube-apiserver's SetDefaults_Pod requests every limited resource at its limit
when the container does not request it (containers and init containers), and
the registry computes status.qosClass from the result.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from engine.cluster.apiserver.admission.defaults import Held, apply_defaults
from engine.cluster.apiserver.admission.qos import qos_class, quantity
from engine.cluster.apiserver.registry.builtins import PODS

_HELD = Held(list, tuple)  # no services: pods allocate nothing


def created(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return apply_defaults(PODS.key, {"metadata": {"name": "p"}, "spec": spec}, None, _HELD)


def container(name: str = "c", **resources: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.36", "resources": resources}


def resources_of(pod: dict[str, Any], key: str = "containers") -> list[dict[str, Any]]:
    return [c["resources"] for c in pod["spec"][key]]


class TestRequestsFromLimits:
    def test_a_limited_resource_without_a_request_is_requested_at_its_limit(self) -> None:
        pod = created(container(limits={"cpu": "2", "memory": "1Gi"}, requests={"cpu": "500m"}))
        assert resources_of(pod) == [
            {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}
        ]

    def test_init_containers_too(self) -> None:
        pod = created(container(), init=(container("setup", limits={"nvidia.com/gpu": "1"}),))
        assert resources_of(pod, "initContainers") == [
            {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
        ]

    @pytest.mark.parametrize(
        "resources",
        [{}, {"limits": {}}, {"requests": {"cpu": "1"}}, {"limits": None}],
    )
    def test_nothing_limited_adds_nothing(self, resources: dict[str, Any]) -> None:
        assert resources_of(created(container(**resources))) == [resources]

    def test_a_null_requests_map_is_filled(self) -> None:
        pod = created(container(limits={"cpu": "1"}, requests=None))
        assert resources_of(pod) == [{"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}]

    def test_an_update_is_defaulted_the_same_way(self) -> None:
        old = created(container(limits={"cpu": "1"}))
        body = {**old, "spec": {**old["spec"], "containers": [container(limits={"cpu": "1"})]}}
        new = apply_defaults(PODS.key, body, old, _HELD)
        assert resources_of(new) == resources_of(old)


class TestQosClass:
    def test_limits_alone_make_a_guaranteed_pod(self) -> None:
        pod = created(container(limits={"cpu": "1", "memory": "1Gi"}))
        assert pod["status"]["qosClass"] == "Guaranteed"

    def test_nothing_requested_is_best_effort_and_zero_counts_as_nothing(self) -> None:
        assert created(container())["status"]["qosClass"] == "BestEffort"
        zero = created(container(requests={"cpu": "0", "memory": "0"}))
        assert zero["status"]["qosClass"] == "BestEffort"

    def test_requests_below_limits_are_burstable(self) -> None:
        pod = created(container(limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "100m"}))
        assert pod["status"]["qosClass"] == "Burstable"

    def test_a_container_without_both_limits_makes_the_pod_burstable(self) -> None:
        full = container("a", limits={"cpu": "1", "memory": "1Gi"})
        cpu_only = container("b", limits={"cpu": "1"})
        assert created(full, cpu_only)["status"]["qosClass"] == "Burstable"
        assert created(full, container("b"))["status"]["qosClass"] == "Burstable"

    def test_init_containers_count(self) -> None:
        full = container("a", limits={"cpu": "1", "memory": "1Gi"})
        assert created(full, init=(container("i"),))["status"]["qosClass"] == "Burstable"
        both = created(full, init=(container("i", limits={"cpu": "1", "memory": "1Gi"}),))
        assert both["status"]["qosClass"] == "Guaranteed"

    def test_quantities_compare_by_value_not_by_spelling(self) -> None:
        spec = {
            "containers": [
                {"resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                               "requests": {"cpu": "1000m", "memory": "1073741824"}}}
            ]
        }
        assert qos_class(spec) == "Guaranteed"

    def test_only_cpu_and_memory_count(self) -> None:
        spec = {
            "containers": [
                {"resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                               "requests": {"cpu": "1", "memory": "1Gi"}}}
            ]
        }
        assert qos_class(spec) == "Guaranteed"
        assert qos_class({"containers": [{"resources": {"requests": {"pods": "1"}}}]}) == (
            "BestEffort"
        )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("2", "2"),
        ("1Ki", "1024"),
        ("1e3", "1000"),
        ("1.5G", "1500000000"),
        (4, "4"),
        ("0.1", "0.1"),
    ],
)
def test_quantity_reads_every_suffix(text: Any, value: str) -> None:
    assert quantity(text) == Decimal(value)


@pytest.mark.parametrize("text", ["", "abc", "1x", True, None])
def test_quantity_refuses_what_is_not_one(text: Any) -> None:
    assert quantity(text) is None


def test_a_spec_that_defaults_to_itself_is_not_walked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored pod's spec, read again by each status write, is defaulted once: the second
    time the same spec is handed back at once. Another spec with the same content, or one
    that still lacks a default, is walked (and defaulted) as before."""
    from engine.cluster.apiserver.admission import pod_defaults

    settled = created(container())["spec"]
    walked: list[object] = []
    real = pod_defaults.template_spec_defaults
    monkeypatch.setattr(pod_defaults, "template_spec_defaults",
                        lambda spec: walked.append(spec) or real(spec))
    assert pod_defaults.pod_spec_defaults(settled) is settled
    assert pod_defaults.pod_spec_defaults(settled) is settled
    assert len(walked) == 1
    copy = {**settled}
    assert pod_defaults.pod_spec_defaults(copy) is copy
    assert len(walked) == 2
    bare = {"containers": [container()]}
    assert pod_defaults.pod_spec_defaults(bare)["restartPolicy"] == "Always"
    assert pod_defaults.pod_spec_defaults(bare)["restartPolicy"] == "Always"
    assert len(walked) == 4
