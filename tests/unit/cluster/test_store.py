"""The store's write rules, without HTTP: metadata, generation, conflicts, no-ops, dry run."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, PODS
from tests.unit.cluster.store_support import ManualReactor, make_core


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": data}


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_create_assigns_server_metadata_and_the_next_version(core: Core) -> None:
    before = core.store.table.rv
    obj = core.store.create(CONFIGMAPS, "default", _cm("a")).entry.obj
    assert obj["metadata"]["resourceVersion"] == str(before + 1)
    assert "generation" not in obj["metadata"] and obj["metadata"]["uid"]  # none on configmaps
    assert obj["apiVersion"] == "v1" and obj["kind"] == "ConfigMap"


def test_client_values_for_server_fields_are_ignored(core: Core) -> None:
    body = {"metadata": {"name": "a", "uid": "mine", "resourceVersion": "99"}}
    obj = core.store.create(CONFIGMAPS, "default", body).entry.obj
    assert obj["metadata"]["uid"] != "mine" and obj["metadata"]["resourceVersion"] != "99"


def test_stored_objects_are_never_mutated(core: Core) -> None:
    first = core.store.create(CONFIGMAPS, "default", _cm("a", k="1")).entry
    snapshot = orjson.dumps(first.obj)
    core.store.update(CONFIGMAPS, "default", "a", _cm("a", k="2"))
    core.store.patch(
        CONFIGMAPS, "default", "a", "application/merge-patch+json", b'{"data":{"k":"3"}}'
    )
    assert orjson.dumps(first.obj) == snapshot


def test_stale_update_conflicts(core: Core) -> None:
    created = core.store.create(CONFIGMAPS, "default", _cm("a")).entry.obj
    core.store.update(CONFIGMAPS, "default", "a", {**created, "data": {"x": "1"}})
    with pytest.raises(ApiError) as error:
        core.store.update(CONFIGMAPS, "default", "a", {**created, "data": {"x": "2"}})
    assert error.value.code == 409 and error.value.reason == "Conflict"


def test_no_op_write_is_not_a_write(core: Core) -> None:
    created = core.store.create(CONFIGMAPS, "default", _cm("a", k="1")).entry
    before = core.store.table.rv
    again = core.store.update(CONFIGMAPS, "default", "a", created.obj).entry
    assert again is created and core.store.table.rv == before


def test_generation_rules(core: Core) -> None:
    """Neither pods (as of v1.32) nor configmaps have one; per kind: tests/unit/cluster/
    test_generation.py."""
    core.store.create(PODS, "default", _pod("p"))
    labels = b'{"metadata":{"labels":{"a":"b"}}}'
    assert "generation" not in (
        core.store.patch(PODS, "default", "p", "application/merge-patch+json", labels).entry.obj[
            "metadata"
        ]
    )
    status = b'{"status":{"phase":"Running"}}'
    written = core.store.patch(
        PODS, "default", "p", "application/merge-patch+json", status, subresource="status"
    )
    assert "generation" not in written.entry.obj["metadata"]
    assert written.entry.obj["status"]["phase"] == "Running"
    core.store.create(CONFIGMAPS, "default", _cm("c", k="1"))
    changed = core.store.patch(
        CONFIGMAPS, "default", "c", "application/merge-patch+json", b'{"data":{"k":"2"}}'
    )
    assert "generation" not in changed.entry.obj["metadata"]


def test_dry_run_stores_nothing(core: Core) -> None:
    before = core.store.table.rv
    written = core.store.create(CONFIGMAPS, "default", _cm("a"), dry_run=True)
    assert written.entry.obj["metadata"]["uid"]
    assert core.store.table.rv == before
    assert core.store.table.get(CONFIGMAPS.key, "default", "a") is None


def test_events_and_leases_are_created_by_update(core: Core) -> None:
    from engine.cluster.apiserver.registry.builtins import LEASES

    written = core.store.update(LEASES, "default", "l", {"metadata": {"name": "l"}, "spec": {}})
    assert written.created and core.store.table.get(LEASES.key, "default", "l") is not None
    with pytest.raises(ApiError) as error:
        core.store.update(CONFIGMAPS, "default", "missing", _cm("missing"))
    assert error.value.code == 404


def test_generate_name_retries_on_collision(core: Core, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.cluster.apiserver.registry import store as store_module

    names = iter(["x-aaaaa", "x-aaaaa", "x-bbbbb"])
    monkeypatch.setattr(store_module, "generated_name", lambda base: next(names))
    body = {"metadata": {"generateName": "x-"}}
    assert core.store.create(CONFIGMAPS, "default", body).entry.obj["metadata"]["name"] == "x-aaaaa"
    assert core.store.create(CONFIGMAPS, "default", body).entry.obj["metadata"]["name"] == "x-bbbbb"


def test_unknown_builtin_fields_follow_field_validation(core: Core) -> None:
    body = {
        "metadata": {"name": "p", "lables": {}},
        "spec": {
            "containers": [{"name": "c", "image": "i", "imagee": "x"}],
            "restartPolcy": "Never",
        },
    }
    with pytest.raises(ApiError) as error:
        core.store.create(PODS, "default", body, field_validation="Strict")
    assert error.value.code == 400
    assert 'unknown field "metadata.lables"' in error.value.message
    assert 'unknown field "spec.containers[0].imagee"' in error.value.message
    written = core.store.create(PODS, "default", body, field_validation="Warn")
    assert 'unknown field "spec.restartPolcy"' in written.warnings
    stored = written.entry.obj
    assert "imagee" not in stored["spec"]["containers"][0] and "lables" not in stored["metadata"]
    assert "imagee" in body["spec"]["containers"][0]
