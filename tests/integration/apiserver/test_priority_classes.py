"""PriorityClasses and pod priority over HTTP, through the official client.

The scheduling.k8s.io/v1 kind as served (discovery, the built-in classes,
validation, the one-default rule, printing), the Priority admission on pod
create, and the requests-from-limits defaulting, each answered with the code
and message kube-apiserver sends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod, raw, status_of

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture
def scheduling(api: client.ApiClient) -> client.SchedulingV1Api:
    return client.SchedulingV1Api(api)


def priority_class(name: str, value: int = 1000, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value, **fields}


def refused(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(client.ApiException) as caught:
        call()
    return caught.value.status, status_of(caught.value)


class TestServedKind:
    def test_discovery_lists_priorityclasses_with_their_short_name(
        self, server: RunningApiServer
    ) -> None:
        resources = raw(server, "GET", "/apis/scheduling.k8s.io/v1").json()["resources"]
        (entry,) = [r for r in resources if r["name"] == "priorityclasses"]
        assert (entry["kind"], entry["namespaced"], entry["shortNames"]) == (
            "PriorityClass", False, ["pc"]
        )
        assert entry["singularName"] == "priorityclass"
        assert "deletecollection" in entry["verbs"]
        groups = raw(server, "GET", "/apis").json()["groups"]
        assert "scheduling.k8s.io" in [g["name"] for g in groups]

    def test_the_system_classes_exist_from_the_start(
        self, scheduling: client.SchedulingV1Api
    ) -> None:
        classes = {pc.metadata.name: pc for pc in scheduling.list_priority_class().items}
        assert {name: pc.value for name, pc in classes.items()} == {
            "system-cluster-critical": 2000000000,
            "system-node-critical": 2000001000,
        }
        node = classes["system-node-critical"]
        assert node.preemption_policy == "PreemptLowerPriority"
        assert not node.global_default
        assert node.description.startswith("Used for system critical pods")

    def test_create_defaults_the_preemption_policy(
        self, scheduling: client.SchedulingV1Api
    ) -> None:
        created = scheduling.create_priority_class(priority_class("high", description="d"))
        assert (created.value, created.preemption_policy, created.description) == (
            1000, "PreemptLowerPriority", "d"
        )
        assert created.metadata.generation == 1 and created.metadata.namespace is None
        fetched = scheduling.read_priority_class("high")
        assert fetched.metadata.uid == created.metadata.uid

    def test_the_table_has_upstreams_columns(
        self, server: RunningApiServer, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(
            priority_class("quiet", 5, globalDefault=True, preemptionPolicy="Never")
        )
        answer = raw(
            server, "GET", "/apis/scheduling.k8s.io/v1/priorityclasses", headers={"Accept": TABLE}
        ).json()
        assert [c["name"] for c in answer["columnDefinitions"]] == [
            "Name", "Value", "Global-Default", "Age", "PreemptionPolicy"
        ]
        rows = {row["cells"][0]: row["cells"] for row in answer["rows"]}
        assert rows["quiet"][1:3] + rows["quiet"][4:] == [5, True, "Never"]
        assert rows["system-node-critical"][1:3] == [2000001000, False]


class TestValidation:
    def test_user_values_above_one_billion_are_forbidden(
        self, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(priority_class("top", 1_000_000_000))
        code, status = refused(
            lambda: scheduling.create_priority_class(priority_class("over", 1_000_000_001))
        )
        assert code == 422
        assert status["message"] == (
            'PriorityClass.scheduling.k8s.io "over" is invalid: value: Forbidden: maximum '
            "allowed value of a user defined priority is 1000000000"
        )

    def test_system_names_are_reserved(self, scheduling: client.SchedulingV1Api) -> None:
        code, status = refused(
            lambda: scheduling.create_priority_class(priority_class("system-mine", 10))
        )
        assert code == 422
        assert status["details"]["causes"] == [
            {
                "reason": "FieldValueForbidden",
                "field": "metadata.name",
                "message": "Forbidden: priority class names with 'system-' prefix are reserved "
                "for system use only. error: system-mine is not a known system priority class",
            }
        ]

    def test_value_and_preemption_policy_are_immutable(
        self, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(priority_class("high", 10))
        code, status = refused(lambda: scheduling.patch_priority_class("high", {"value": 11}))
        assert (code, status["message"]) == (
            422,
            'PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: may not be '
            "changed in an update.",
        )
        code, status = refused(
            lambda: scheduling.patch_priority_class("high", {"preemptionPolicy": "Never"})
        )
        assert (code, status["message"]) == (
            422,
            'PriorityClass.scheduling.k8s.io "high" is invalid: preemptionPolicy: Invalid '
            'value: "Never": field is immutable',
        )
        described = scheduling.patch_priority_class("high", {"description": "now"})
        assert described.description == "now" and described.metadata.generation == 1

    def test_only_one_class_may_be_the_global_default(
        self, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(priority_class("base", 1, globalDefault=True))
        scheduling.create_priority_class(priority_class("other", 2))
        code, status = refused(
            lambda: scheduling.create_priority_class(priority_class("more", 3, globalDefault=True))
        )
        assert code == 403
        assert status["reason"] == "Forbidden"
        assert status["message"] == (
            'priorityclasses.scheduling.k8s.io "more" is forbidden: PriorityClass base is '
            "already marked as default. Only one default can exist"
        )
        assert status["details"] == {
            "name": "more", "group": "scheduling.k8s.io", "kind": "priorityclasses"
        }
        code, _ = refused(
            lambda: scheduling.patch_priority_class("other", {"globalDefault": True})
        )
        assert code == 403
        scheduling.patch_priority_class("base", {"description": "still the default"})

    def test_system_classes_cannot_be_deleted_by_name(
        self, scheduling: client.SchedulingV1Api
    ) -> None:
        code, status = refused(lambda: scheduling.delete_priority_class("system-node-critical"))
        assert (code, status["message"]) == (
            403,
            'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a '
            "system priority class and cannot be deleted",
        )
        scheduling.create_priority_class(priority_class("high"))
        scheduling.delete_priority_class("high")
        names = {pc.metadata.name for pc in scheduling.list_priority_class().items}
        assert names == {"system-cluster-critical", "system-node-critical"}


class TestPodPriority:
    def test_a_pod_gets_its_class_value_and_policy(
        self, core: client.CoreV1Api, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(priority_class("batch", 50, preemptionPolicy="Never"))
        created = core.create_namespaced_pod("default", pod("a", priorityClassName="batch"))
        assert (created.spec.priority, created.spec.preemption_policy) == (50, "Never")
        critical = core.create_namespaced_pod(
            "default", pod("b", priorityClassName="system-node-critical")
        )
        assert critical.spec.priority == 2000001000

    def test_an_unknown_class_is_forbidden(self, core: client.CoreV1Api) -> None:
        code, status = refused(
            lambda: core.create_namespaced_pod("default", pod("a", priorityClassName="nope"))
        )
        assert code == 403
        assert status == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'pods "a" is forbidden: no PriorityClass with name nope was found',
            "reason": "Forbidden",
            "details": {"name": "a", "kind": "pods"},
            "code": 403,
        }
        assert core.list_namespaced_pod("default").items == []

    def test_without_a_class_the_default_or_zero_applies(
        self, core: client.CoreV1Api, scheduling: client.SchedulingV1Api
    ) -> None:
        plain = core.create_namespaced_pod("default", pod("a"))
        assert (plain.spec.priority, plain.spec.priority_class_name) == (0, None)
        assert plain.spec.preemption_policy == "PreemptLowerPriority"
        scheduling.create_priority_class(priority_class("base", 7, globalDefault=True))
        defaulted = core.create_namespaced_pod("default", pod("b"))
        assert (defaulted.spec.priority, defaulted.spec.priority_class_name) == (7, "base")

    def test_a_priority_other_than_the_computed_one_is_forbidden(
        self, core: client.CoreV1Api
    ) -> None:
        core.create_namespaced_pod("default", pod("same", priority=0))
        code, status = refused(lambda: core.create_namespaced_pod("default", pod("a", priority=5)))
        assert (code, status["message"]) == (
            403,
            'pods "a" is forbidden: the integer value of priority (5) must not be provided in '
            "pod spec; priority admission controller computed 0 from the given PriorityClass "
            "name",
        )
        code, status = refused(
            lambda: core.create_namespaced_pod("default", pod("b", preemptionPolicy="Never"))
        )
        assert (code, status["message"]) == (
            403,
            'pods "b" is forbidden: the string value of PreemptionPolicy (Never) must not be '
            "provided in pod spec; priority admission controller computed PreemptLowerPriority "
            "from the given PriorityClass name",
        )

    def test_a_generated_name_is_refused_under_its_prefix(self, core: client.CoreV1Api) -> None:
        body = pod("", priorityClassName="nope")
        body["metadata"] = {"generateName": "worker-"}
        code, status = refused(lambda: core.create_namespaced_pod("default", body))
        assert code == 403
        assert status["message"].startswith('pods "worker-" is forbidden')

    def test_a_replace_without_priority_keeps_it(
        self, api: client.ApiClient, core: client.CoreV1Api, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(priority_class("high", 1000))
        created = core.create_namespaced_pod("default", pod("a", priorityClassName="high"))
        body = api.sanitize_for_serialization(created)
        del body["spec"]["priority"], body["spec"]["preemptionPolicy"]
        body["metadata"]["labels"] = {"touched": "yes"}
        replaced = core.replace_namespaced_pod("a", "default", body)
        assert (replaced.spec.priority, replaced.metadata.labels) == (1000, {"touched": "yes"})

    def test_the_admissions_fields_belong_to_no_manager(
        self, core: client.CoreV1Api, scheduling: client.SchedulingV1Api
    ) -> None:
        scheduling.create_priority_class(priority_class("base", 7, globalDefault=True))
        created = core.create_namespaced_pod("default", pod("a"))
        (entry,) = created.metadata.managed_fields
        spec = entry.fields_v1["f:spec"]
        assert not {"f:priority", "f:preemptionPolicy", "f:priorityClassName"} & set(spec)


class TestRequestsFromLimits:
    def test_limits_alone_become_requests_and_the_pod_is_guaranteed(
        self, core: client.CoreV1Api
    ) -> None:
        limits = {"cpu": "1", "memory": "1Gi"}
        body = pod("a")
        body["spec"]["containers"][0]["resources"] = {"limits": limits}
        body["spec"]["initContainers"] = [
            {"name": "setup", "image": "busybox", "resources": {"limits": limits}}
        ]
        created = core.create_namespaced_pod("default", body)
        assert created.spec.containers[0].resources.requests == limits
        assert created.spec.init_containers[0].resources.requests == limits
        assert created.status.qos_class == "Guaranteed"

    def test_a_given_request_is_kept(self, core: client.CoreV1Api) -> None:
        body = pod("a")
        body["spec"]["containers"][0]["resources"] = {
            "limits": {"cpu": "1", "memory": "1Gi"},
            "requests": {"cpu": "250m"},
        }
        created = core.create_namespaced_pod("default", body)
        assert created.spec.containers[0].resources.requests == {"cpu": "250m", "memory": "1Gi"}
        assert created.status.qos_class == "Burstable"


@contextmanager
def scheduling_api(data_dir: Path) -> Iterator[client.SchedulingV1Api]:
    """A persistent server on `data_dir` and a client for it, both closed at the end."""
    with running_apiserver(data_dir=data_dir) as server:
        api = config.new_client_from_config(config_file=str(server.kubeconfig))
        try:
            yield client.SchedulingV1Api(api)
        finally:
            api.close()


def test_system_classes_come_back_after_a_deletecollection_and_a_restart(tmp_path: Path) -> None:
    """As upstream: deletecollection passes the per-name guard; the next start recreates them."""
    with scheduling_api(tmp_path) as scheduling:
        scheduling.create_priority_class(priority_class("mine", 3))
        scheduling.delete_collection_priority_class()
        assert scheduling.list_priority_class().items == []
    with scheduling_api(tmp_path) as scheduling:
        names = sorted(pc.metadata.name for pc in scheduling.list_priority_class().items)
        assert names == ["system-cluster-critical", "system-node-critical"]
    with scheduling_api(tmp_path) as scheduling:
        assert len(scheduling.list_priority_class().items) == 2
