"""What the local node offers: this machine's CPUs and memory and 110 pods, overridden by
`name=quantity,...`, with a clear error for anything else."""

from __future__ import annotations

import os
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from engine.cluster.node.scheduling.capacity import Capacity

D = Decimal
HELP = "write name=quantity, e.g. cpu=8,memory=16Gi,nvidia.com/gpu=2"


def test_this_machine_offers_its_cpus_its_memory_and_disk_in_ki_and_110_pods() -> None:
    written = Capacity.of_this_machine().written
    assert sorted(written) == ["cpu", "ephemeral-storage", "memory", "pods"]
    assert written["cpu"] == str(os.cpu_count() or 1)
    assert re.fullmatch(r"[1-9][0-9]*Ki", written["memory"])
    assert written["ephemeral-storage"] == f"{shutil.disk_usage('/').total // 1024}Ki"
    assert written["pods"] == "110"


def test_amounts_are_the_written_quantities_in_base_units() -> None:
    capacity = Capacity({"cpu": "1500m", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "2"})
    assert capacity.amounts == {"cpu": D("1.5"), "memory": D(16 * 2**30), "pods": D(110),
                                "nvidia.com/gpu": D(2)}
    memory = Capacity.of_this_machine().amounts["memory"]
    assert memory > 0 and memory % 1024 == 0


def test_overrides_replace_defaults_and_add_extended_resources() -> None:
    default = Capacity.of_this_machine().written
    written = Capacity.parse("cpu=8,memory=16Gi,nvidia.com/gpu=2").written
    assert written == {"cpu": "8", "memory": "16Gi", "pods": default["pods"],
                       "ephemeral-storage": default["ephemeral-storage"], "nvidia.com/gpu": "2"}


def test_no_text_means_the_defaults() -> None:
    assert Capacity.parse("").written == Capacity.of_this_machine().written
    assert Capacity.of_this_machine({}).written == Capacity.of_this_machine().written


def test_whitespace_and_empty_items_are_tolerated() -> None:
    written = Capacity.parse(" , pods = 4 ,, example.com/Foo_bar.1=0 ,").written
    assert written["pods"] == "4"
    assert written["example.com/Foo_bar.1"] == "0"


def test_the_last_of_repeated_names_wins() -> None:
    assert Capacity.parse("cpu=2,cpu=3").amounts["cpu"] == D(3)


@pytest.mark.parametrize(("text", "item"), [
    ("cpu8", "cpu8"), ("=8", "=8"), ("cpu=", "cpu="), ("cpu = ", "cpu ="), ("=", "="),
])
def test_items_that_are_not_name_equals_quantity(text: str, item: str) -> None:
    with pytest.raises(ValueError) as caught:
        Capacity.parse(f"memory=1Gi,{text}")
    assert str(caught.value) == f"node capacity {item!r}: {HELP}"


@pytest.mark.parametrize("name", [
    "-cpu", "cpu-", "my gpu", "nvidia.com/", "/gpu", "a/b/c", "Nvidia.com/gpu", "gpu!",
    "-x.io/gpu",
])
def test_bad_resource_names(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        Capacity.parse(f"{name}=1")
    assert str(caught.value) == f"node capacity '{name}=1': {name!r} is not a resource name"


@pytest.mark.parametrize("value", ["lots", "1Ki2", "8 Gi", "1.2.3"])
def test_bad_quantities(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        Capacity.parse(f"memory={value}")
    assert str(caught.value) == (f"node capacity 'memory={value}': {value!r} is not a quantity "
                                 f"(e.g. 2, 500m, 16Gi)")


@pytest.mark.parametrize("value", ["-1", "-1m", "-0.5Gi"])
def test_negative_quantities(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        Capacity.parse(f"cpu={value}")
    assert str(caught.value) == f"node capacity 'cpu={value}': a capacity cannot be negative"


def test_zero_is_a_capacity() -> None:
    assert Capacity.parse("nvidia.com/gpu=0,pods=0").amounts["pods"] == 0


def test_an_exa_quantity_is_accepted() -> None:
    assert Capacity.parse("ephemeral-storage=1E").amounts["ephemeral-storage"] == D(10**18)


def test_memory_is_the_kernels_mem_total() -> None:
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    [line] = [x for x in meminfo if x.startswith("MemTotal:")]
    assert Capacity.of_this_machine().written["memory"] == f"{line.split()[1]}Ki"


def test_without_proc_meminfo_memory_is_the_physical_pages_in_ki(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreadable(*_: object, **__: object) -> str:
        raise OSError("no /proc here")

    monkeypatch.setattr("pathlib.Path.read_text", unreadable)
    pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert Capacity.of_this_machine().written["memory"] == f"{pages // 1024}Ki"


def test_a_machine_whose_cpus_cannot_be_counted_offers_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert Capacity.of_this_machine().written["cpu"] == "1"


def test_an_item_with_two_equals_signs_is_a_bad_quantity_not_a_bad_name() -> None:
    with pytest.raises(ValueError, match=r"^node capacity 'cpu=1=2': ") as refused:
        Capacity.parse("cpu=1=2")
    assert "is not a resource name" not in str(refused.value)
