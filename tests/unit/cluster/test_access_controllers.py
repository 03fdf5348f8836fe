"""The identity and access controllers and the bootstrap policy: a `default` ServiceAccount in
every namespace (kube-controller-manager's serviceaccounts controller), ClusterRole aggregation
(pkg/controller/clusterroleaggregation), and the default roles and bindings kube-apiserver's
RBAC post-start hook makes."""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.apiserver.auth.identity import service_account_user
from engine.cluster.apiserver.auth.rbac import RbacAuthorizer
from engine.cluster.apiserver.auth.rbac_bootstrap import BOOTSTRAP_BINDINGS, BOOTSTRAP_ROLES
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    INITIAL_NAMESPACES,
    NAMESPACES,
    SERVICE_ACCOUNTS,
)
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

RBAC = "rbac.authorization.k8s.io"
AGGREGATE = "example.com/aggregate-to-jobs"


class SettlingReactor(ManualReactor):
    """A manual reactor whose run fails, rather than hangs, when the controllers never settle."""

    def run(self) -> None:
        for _ in range(10_000):
            if not self._queue or self._queue[0][0] > self.now:
                return
            heapq.heappop(self._queue)[2]()
        raise AssertionError("the controllers keep rescheduling themselves")


@pytest.fixture
def reactor() -> ManualReactor:
    return SettlingReactor()


def default_account(core: Core, ns: str) -> dict[str, Any] | None:
    entry = core.store.table.get(SERVICE_ACCOUNTS.key, ns, "default")
    return entry.obj if entry is not None else None


def cluster_role(core: Core, name: str) -> dict[str, Any]:
    return core.store.get(CLUSTER_ROLES, "", name).obj


# --- default service accounts --------------------------------------------------------------


def test_the_initial_namespaces_have_a_default_account_from_the_start(core: Core) -> None:
    for ns in INITIAL_NAMESPACES:
        account = default_account(core, ns)
        assert account is not None, ns
        assert (account["apiVersion"], account["kind"]) == ("v1", "ServiceAccount")
        assert account["metadata"]["uid"]


def test_a_new_namespace_gets_its_account_once_the_controller_runs(
    core: Core, reactor: ManualReactor
) -> None:
    namespace(core, "team")
    assert default_account(core, "team") is None  # a controller, not part of the create
    reactor.run()
    account = default_account(core, "team")
    assert account is not None
    managers = [m["manager"] for m in account["metadata"].get("managedFields", [])]
    assert managers in ([], ["service-account-controller"])


def test_a_deleted_default_account_comes_back_as_a_new_object(
    core: Core, reactor: ManualReactor
) -> None:
    namespace(core, "team")
    reactor.run()
    old = default_account(core, "team")
    assert old is not None
    delete(core.store, SERVICE_ACCOUNTS, "team", "default", DeleteOptions())
    assert default_account(core, "team") is None
    reactor.run()
    new = default_account(core, "team")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]


def test_other_accounts_are_left_alone(core: Core, reactor: ManualReactor) -> None:
    core.store.create(SERVICE_ACCOUNTS, "default", {"metadata": {"name": "robot"}})
    delete(core.store, SERVICE_ACCOUNTS, "default", "robot", DeleteOptions())
    reactor.run()
    assert core.store.table.get(SERVICE_ACCOUNTS.key, "default", "robot") is None


def hold(core: Core, ns: str) -> None:
    """An object with a finalizer of its own keeps `ns` Terminating once it is deleted."""
    core.store.create(CONFIGMAPS, ns, {"metadata": {"name": "held",
                                                    "finalizers": ["example.com/hold"]}})


def test_a_terminating_namespace_gets_no_account(core: Core, reactor: ManualReactor) -> None:
    namespace(core, "team")
    hold(core, "team")
    reactor.run()
    assert default_account(core, "team") is not None
    delete(core.store, NAMESPACES, "", "team", DeleteOptions())
    reactor.run()
    space = core.store.get(NAMESPACES, "", "team").obj
    assert space["status"]["phase"] == "Terminating"
    assert default_account(core, "team") is None  # deleted with the content, not recreated


def test_a_namespace_deleted_before_the_controller_runs_gets_no_account(
    core: Core, reactor: ManualReactor
) -> None:
    namespace(core, "brief")
    hold(core, "brief")
    delete(core.store, NAMESPACES, "", "brief", DeleteOptions())
    reactor.run()
    assert core.store.get(NAMESPACES, "", "brief").obj["status"]["phase"] == "Terminating"
    assert default_account(core, "brief") is None


def test_a_namespace_held_by_its_own_finalizer_lets_the_controllers_settle(
    core: Core, reactor: ManualReactor
) -> None:
    core.store.create(NAMESPACES, "", {"metadata": {"name": "team",
                                                    "finalizers": ["example.com/hold"]}})
    reactor.run()
    delete(core.store, NAMESPACES, "", "team", DeleteOptions())
    reactor.run()
    assert core.store.get(NAMESPACES, "", "team").obj["status"]["phase"] == "Terminating"
    assert default_account(core, "team") is None


# --- ClusterRole aggregation ---------------------------------------------------------------


def rule(*resources: str, verbs: tuple[str, ...] = ("get",)) -> dict[str, Any]:
    return {"verbs": list(verbs), "apiGroups": ["example.com"], "resources": list(resources)}


def add_role(core: Core, name: str, rules: list[dict[str, Any]],
             labels: dict[str, str] | None = None) -> None:
    core.store.create(CLUSTER_ROLES, "", {"metadata": {"name": name, "labels": labels or {}},
                                          "rules": rules})


def add_aggregated(core: Core, name: str, *selectors: dict[str, Any]) -> None:
    core.store.create(CLUSTER_ROLES, "", {
        "metadata": {"name": name},
        "aggregationRule": {"clusterRoleSelectors": list(selectors)},
    })


def relabel(core: Core, name: str, labels: dict[str, str]) -> None:
    role = cluster_role(core, name)
    core.store.update(CLUSTER_ROLES, "", name,
                      {**role, "metadata": {**role["metadata"], "labels": labels}})


def set_rules(core: Core, name: str, rules: list[dict[str, Any]]) -> None:
    core.store.update(CLUSTER_ROLES, "", name, {**cluster_role(core, name), "rules": rules})


ON = {AGGREGATE: "true"}


def test_an_aggregated_role_holds_the_union_of_the_matching_roles_rules(
    core: Core, reactor: ManualReactor
) -> None:
    add_role(core, "b-shards", [rule("shardedjobs"), rule("shared")], ON)
    add_role(core, "a-trainers", [rule("trainers"), rule("shared")], ON)
    add_role(core, "c-unrelated", [rule("secrets")], {AGGREGATE: "false"})
    add_role(core, "d-unlabelled", [rule("configmaps")])
    add_aggregated(core, "jobs-admin", {"matchLabels": ON})
    reactor.run()
    # Matching roles in name order, each rule once.
    assert cluster_role(core, "jobs-admin")["rules"] == [
        rule("trainers"), rule("shared"), rule("shardedjobs")]
    assert cluster_role(core, "jobs-admin")["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": ON}]}


def test_aggregation_follows_new_changed_relabelled_and_deleted_roles(
    core: Core, reactor: ManualReactor
) -> None:
    add_aggregated(core, "jobs-admin", {"matchLabels": ON})
    reactor.run()
    assert cluster_role(core, "jobs-admin").get("rules") in (None, [])
    add_role(core, "a", [rule("trainers")], ON)
    add_role(core, "b", [rule("shardedjobs")], ON)
    reactor.run()
    assert cluster_role(core, "jobs-admin")["rules"] == [rule("trainers"), rule("shardedjobs")]
    set_rules(core, "a", [rule("trainers", verbs=("get", "list"))])
    reactor.run()
    assert cluster_role(core, "jobs-admin")["rules"] == [
        rule("trainers", verbs=("get", "list")), rule("shardedjobs")]
    relabel(core, "a", {})
    reactor.run()
    assert cluster_role(core, "jobs-admin")["rules"] == [rule("shardedjobs")]
    delete(core.store, CLUSTER_ROLES, "", "b", DeleteOptions())
    reactor.run()
    assert cluster_role(core, "jobs-admin").get("rules") in (None, [])
    relabel(core, "a", ON)
    reactor.run()
    assert cluster_role(core, "jobs-admin")["rules"] == [rule("trainers", verbs=("get", "list"))]


def test_hand_edits_to_an_aggregated_role_are_put_back(
    core: Core, reactor: ManualReactor
) -> None:
    add_role(core, "a", [rule("trainers")], ON)
    add_aggregated(core, "jobs-admin", {"matchLabels": ON})
    reactor.run()
    set_rules(core, "jobs-admin", [rule("secrets", verbs=("*",))])
    reactor.run()
    assert cluster_role(core, "jobs-admin")["rules"] == [rule("trainers")]


def test_match_expressions_select_too(core: Core, reactor: ManualReactor) -> None:
    add_role(core, "a", [rule("trainers")], {"tier": "jobs"})
    add_role(core, "b", [rule("secrets")], {"tier": "infra"})
    add_aggregated(core, "agg", {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["jobs", "batch"]}]})
    reactor.run()
    assert cluster_role(core, "agg")["rules"] == [rule("trainers")]


def test_a_binding_to_an_aggregated_role_grants_what_a_labelled_role_adds(
    core: Core, reactor: ManualReactor
) -> None:
    add_aggregated(core, "jobs-admin", {"matchLabels": ON})
    core.store.create(CLUSTER_ROLE_BINDINGS, "", {
        "metadata": {"name": "engine"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "jobs-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "engine", "namespace": "default"}],
    })
    engine = service_account_user("default", "engine")
    request = RequestInfo(verb="get", path="/x", resource_request=True, api_group="example.com",
                          api_version="v1", namespace="default", resource="trainers", name="t")
    decide: Callable[[], bool] = lambda: RbacAuthorizer(core.store.table).authorize(  # noqa: E731
        engine, request).allowed
    reactor.run()
    assert not decide()
    add_role(core, "trainers", [rule("trainers")], ON)
    reactor.run()
    assert decide()


def test_rules_come_selector_by_selector(core: Core, reactor: ManualReactor) -> None:
    add_role(core, "a", [rule("from-a")], {"second": "yes"})
    add_role(core, "z", [rule("from-z")], {"first": "yes"})
    add_aggregated(core, "agg", {"matchLabels": {"first": "yes"}},
                   {"matchLabels": {"second": "yes"}})
    reactor.run()
    assert cluster_role(core, "agg")["rules"] == [rule("from-z"), rule("from-a")]


# --- bootstrap policy ----------------------------------------------------------------------


def bootstrap_names() -> tuple[set[str], set[str]]:
    return ({role["metadata"]["name"] for role in BOOTSTRAP_ROLES},
            {binding["metadata"]["name"] for binding in BOOTSTRAP_BINDINGS})


def stored_names(core: Core) -> tuple[set[str], set[str]]:
    table = core.store.table
    return ({name for _, name in table.bucket(CLUSTER_ROLES.key).entries},
            {name for _, name in table.bucket(CLUSTER_ROLE_BINDINGS.key).entries})


def test_the_bootstrap_policy_exists_from_the_start(core: Core) -> None:
    roles, bindings = bootstrap_names()
    assert {"cluster-admin", "system:discovery", "system:basic-user",
            "system:public-info-viewer", "system:monitoring"} <= roles
    assert stored_names(core) == (roles, bindings)
    admin = core.store.get(CLUSTER_ROLE_BINDINGS, "", "cluster-admin").obj
    assert admin["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"}
    assert admin["subjects"] == [{"apiGroup": RBAC, "kind": "Group", "name": "system:masters"}]
    for obj in (admin, cluster_role(core, "cluster-admin")):
        assert obj["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
        assert obj["metadata"]["annotations"] == {
            "rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert cluster_role(core, "cluster-admin")["rules"] == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]


def restart(data: Path, change: Callable[[Core], None] | None = None) -> tuple[set[str], set[str],
                                                                            dict[str, Any]]:
    """Open the stored state, apply `change`, close; return what was there on opening."""

    async def body() -> tuple[set[str], set[str], dict[str, Any]]:
        reactor = ManualReactor()
        core = make_core(reactor, data_dir=data)
        roles, bindings = stored_names(core)
        admin = cluster_role(core, "cluster-admin")
        if change is not None:
            change(core)
            reactor.run()
        await core.flushed()
        await core.close()
        return roles, bindings, admin

    return asyncio.run(body())


def test_deleted_bootstrap_roles_and_bindings_are_recreated_on_restart(tmp_path: Path) -> None:
    def remove(core: Core) -> None:
        delete(core.store, CLUSTER_ROLES, "", "system:discovery", DeleteOptions())
        delete(core.store, CLUSTER_ROLE_BINDINGS, "", "cluster-admin", DeleteOptions())
        assert "system:discovery" not in stored_names(core)[0]

    restart(tmp_path, remove)
    roles, bindings, _ = restart(tmp_path)
    assert (roles, bindings) == bootstrap_names()


def test_user_roles_and_default_accounts_survive_a_restart(tmp_path: Path) -> None:
    def add(core: Core) -> None:
        add_role(core, "mine", [rule("trainers")])
        namespace(core, "team")

    restart(tmp_path, add)

    async def check() -> None:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        assert cluster_role(core, "mine")["rules"] == [rule("trainers")]
        assert default_account(core, "team") is not None
        await core.close()

    asyncio.run(check())


def test_a_stripped_bootstrap_role_gets_its_rules_back_on_restart(tmp_path: Path) -> None:
    restart(tmp_path, lambda core: set_rules(core, "cluster-admin", [rule("pods")]))
    _, _, admin = restart(tmp_path)
    assert {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]} in admin["rules"]
