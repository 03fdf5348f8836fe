"""Whether requests fit what the node has left, at the exact edge, and kube-scheduler's
message word for word when they do not."""

from __future__ import annotations

from decimal import Decimal

from engine.cluster.node.scheduling.fit import node_message, short_of

D = Decimal
NODE = {"cpu": D(4), "memory": D(8 * 2**30), "pods": D(110)}
USED = {"cpu": D("2.5"), "memory": D(2**30), "pods": D(109)}


def test_a_request_exactly_equal_to_what_is_left_fits() -> None:
    assert short_of(NODE, USED, {"cpu": D("1.5"), "memory": D(7 * 2**30), "pods": D(1)}) == []


def test_one_unit_more_than_what_is_left_does_not() -> None:
    assert short_of(NODE, USED, {"cpu": D("1.501")}) == ["cpu"]
    assert short_of(NODE, USED, {"memory": D(7 * 2**30 + 1)}) == ["memory"]
    assert short_of(NODE, USED, {"pods": D(2)}) == ["pods"]


def test_nothing_used_counts_as_zero() -> None:
    assert short_of(NODE, {}, {"cpu": D(4)}) == []
    assert short_of(NODE, {}, {"cpu": D("4.001")}) == ["cpu"]


def test_a_resource_the_node_lacks_is_short_only_when_asked_for() -> None:
    assert short_of(NODE, USED, {"nvidia.com/gpu": D(0), "cpu": D(0)}) == []
    assert short_of(NODE, {}, {"nvidia.com/gpu": D("0.001")}) == ["nvidia.com/gpu"]


def test_zero_requests_fit_even_on_an_overcommitted_node() -> None:
    assert short_of(NODE, {"cpu": D(5)}, {"cpu": D(0), "memory": D(1)}) == []


def test_the_short_resources_come_sorted() -> None:
    wanted = {"pods": D(2), "nvidia.com/gpu": D(1), "memory": D(8 * 2**30), "cpu": D(2)}
    assert short_of(NODE, USED, wanted) == ["cpu", "memory", "nvidia.com/gpu", "pods"]


def test_the_message_for_one_short_resource() -> None:
    assert node_message(["cpu"]) == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")


def test_the_message_for_several_short_resources() -> None:
    assert node_message(["cpu", "memory", "nvidia.com/gpu"]) == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")


def test_too_many_pods_in_kube_schedulers_words() -> None:
    assert node_message(["pods"]) == (
        "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")


def test_reasons_are_ordered_as_kube_scheduler_sorts_them() -> None:
    # kube-scheduler's FitError sorts the reason strings themselves ("1 Insufficient ..."
    # before "1 Too many pods"), not the resource names.
    short = short_of(NODE, USED, {"pods": D(2), "xilinx.com/fpga": D(1), "cpu": D(2)})
    assert node_message(short) == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient xilinx.com/fpga, "
        "1 Too many pods. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")
