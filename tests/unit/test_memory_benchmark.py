"""The pure helpers of benchmarks/memory.py (no timing, no server)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from engine.kube.resources import Resource

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory.py"


@pytest.fixture(scope="module")
def memory() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_rss_is_read_from_the_status_text_in_bytes(memory: ModuleType) -> None:
    status = "Name:\tpython\nVmHWM:\t  900 kB\nVmRSS:\t  1234 kB\nThreads:\t4\n"
    assert memory.rss_bytes(status) == 1234 * 1024


def test_a_status_without_rss_is_refused(memory: ModuleType) -> None:
    with pytest.raises(ValueError, match="VmRSS"):
        memory.rss_bytes("Name:\tzombie\n")


def test_growth_is_scaled_to_a_thousand_jobs(memory: ModuleType) -> None:
    assert memory.per_thousand(50.0, 500) == 100.0
    assert math.isnan(memory.per_thousand(5.0, 0))


def test_only_listable_top_level_resources_are_kept(memory: ModuleType) -> None:
    core = [
        {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "list", "watch"]},
        {"name": "pods/status", "kind": "Pod", "namespaced": True, "verbs": ["get", "patch"]},
        {"name": "nodes", "kind": "Node", "namespaced": False, "verbs": ["list"]},
        {"name": "bindings", "kind": "Binding", "namespaced": True, "verbs": ["create"]},
    ]
    jobs = [{"name": "pytorchjobs", "kind": "PyTorchJob", "verbs": ["list"]}]
    found = memory.listable_resources([("", "v1", core), ("kubeflow.org", "v1", jobs)])
    assert found == [
        Resource("", "v1", "pods", "Pod", True),
        Resource("", "v1", "nodes", "Node", False),
        Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", True),
    ]


def test_type_size_counts_compact_json(memory: ModuleType) -> None:
    size = memory.type_size([{"a": 1}, {"bb": [1, 2]}])
    assert (size.count, size.json_bytes) == (2, len('{"a":1}') + len('{"bb":[1,2]}'))
    assert size.mean == size.json_bytes / 2
    assert memory.type_size([]).mean == 0.0


def test_table_is_markdown(memory: ModuleType) -> None:
    assert memory.table(["a", "b"], [["1", "2"]]).splitlines() == [
        "| a | b |", "| --- | --- |", "| 1 | 2 |"]


def test_a_running_job_counts_once_every_replica_is_active(memory: ModuleType) -> None:
    def job(master: int, workers: int) -> dict[str, object]:
        return {"status": {"replicaStatuses": {"Master": {"active": master},
                                               "Worker": {"active": workers}}}}

    assert memory.all_running(job(1, 9), workers=9)
    assert not memory.all_running(job(1, 8), workers=9)
    assert not memory.all_running(job(0, 9), workers=9)
    assert not memory.all_running({"status": {}}, workers=9)
    assert not memory.all_running({}, workers=1)


def test_the_job_has_one_master_and_the_workers_asked_for(memory: ModuleType) -> None:
    specs = memory.pytorchjob("j", 5.0, workers=9)["spec"]["pytorchReplicaSpecs"]
    assert {kind: spec["replicas"] for kind, spec in specs.items()} == {"Master": 1, "Worker": 9}
