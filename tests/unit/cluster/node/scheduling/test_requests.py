"""What a pod asks of its node, as kube-scheduler counts it: limits stand in for missing
requests, containers and sidecars add up, init containers take the max, overhead on top."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.node.scheduling.requests import container_requests, pod_requests, summed

D = Decimal


def box(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None,
        *, sidecar: bool = False) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    container: dict[str, Any] = {"name": "c", "resources": resources}
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None,
        overhead: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "initContainers": init or []}
    if overhead:
        spec["overhead"] = overhead
    return {"spec": spec}


def test_limits_stand_in_for_missing_requests_resource_by_resource() -> None:
    container = box({"cpu": "500m"}, {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1})
    assert container_requests(container) == {"cpu": D("0.5"), "memory": D(2**30),
                                             "nvidia.com/gpu": D(1)}


def test_no_resources_ask_for_nothing() -> None:
    assert container_requests({"name": "c"}) == {}
    assert container_requests(box({}, {})) == {}


def test_a_malformed_quantity_is_ignored_and_the_rest_kept() -> None:
    assert container_requests(box({"cpu": "lots", "memory": "1Mi", "x.io/y": True})) == {
        "memory": D(2**20)}
    assert container_requests(box({"cpu": "lots"}, {"cpu": "3"})) == {"cpu": D(3)}


def test_an_empty_pod_takes_one_pod_slot() -> None:
    assert pod_requests({}) == {"pods": D(1)}
    assert pod_requests({"spec": {"containers": None, "initContainers": None}}) == {"pods": D(1)}


def test_app_containers_are_summed_and_overhead_added() -> None:
    spec = pod([box({"cpu": "1", "memory": "1Gi"}), box({"cpu": "250m"}, {"memory": "512Mi"})],
               overhead={"cpu": "100m", "memory": "64Mi"})
    assert pod_requests(spec) == {"cpu": D("1.35"), "memory": D((1024 + 512 + 64) * 2**20),
                                  "pods": D(1)}


def test_regular_init_containers_count_as_a_max_per_resource_not_a_sum() -> None:
    spec = pod([box({"cpu": "1", "memory": "100Mi"})],
               init=[box({"cpu": "3", "memory": "10Mi"}), box({"cpu": "2", "memory": "1Gi"})],
               overhead={"cpu": "1"})
    assert pod_requests(spec) == {"cpu": D(4), "memory": D(2**30), "pods": D(1)}


def test_sidecars_run_beside_the_app_and_beside_every_later_init_container() -> None:
    # kube: sidecar 1 cpu, init 3, sidecar 2, init 2 -> the last init needs 1 + 2 + 2 = 5
    init = [box({"cpu": "1"}, sidecar=True), box({"cpu": "3"}),
            box({"cpu": "2"}, sidecar=True), box({"cpu": "2"})]
    assert pod_requests(pod([box({"cpu": "1"})], init))["cpu"] == D(5)
    # with a bigger app the sidecars add to it: 4 + 1 + 2 = 7
    assert pod_requests(pod([box({"cpu": "4"})], init))["cpu"] == D(7)


def test_a_sidecar_started_after_an_init_container_does_not_add_to_it() -> None:
    init = [box({"cpu": "3"}), box({"cpu": "1"}, sidecar=True)]
    assert pod_requests(pod([], init)) == {"cpu": D(3), "pods": D(1)}


def test_only_always_marks_a_sidecar() -> None:
    init = [box({"cpu": "2"}), {**box({"cpu": "2"}), "restartPolicy": "OnFailure"}]
    assert pod_requests(pod([box({"cpu": "1"})], init))["cpu"] == D(2)


def test_summed_adds_several_pods_requests() -> None:
    assert summed([]) == {}
    assert summed([{"cpu": D(1), "pods": D(1)}, {"cpu": D("0.5"), "memory": D(7)},
                   {"pods": D(1)}]) == {"cpu": D("1.5"), "memory": D(7), "pods": D(2)}


NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu"])
AMOUNTS = st.integers(0, 10**6).map(lambda n: f"{n}m") | st.integers(0, 64)
RESOURCES = st.dictionaries(NAMES, AMOUNTS, max_size=3)
CONTAINERS = st.builds(box, RESOURCES, RESOURCES | st.none())
INITS = st.builds(box, RESOURCES, RESOURCES | st.none(), sidecar=st.booleans())


@given(st.lists(CONTAINERS, max_size=4), st.lists(INITS, max_size=4))
def test_never_below_the_app_containers_nor_any_regular_init_container(
        containers: list[dict[str, Any]], init: list[dict[str, Any]]) -> None:
    total = pod_requests(pod(containers, init))
    app = summed(container_requests(c) for c in containers)
    regular = [container_requests(c) for c in init if "restartPolicy" not in c]
    for need in [app, *regular]:
        for name, amount in need.items():
            assert total.get(name, D(0)) >= amount
    assert total["pods"] == 1
