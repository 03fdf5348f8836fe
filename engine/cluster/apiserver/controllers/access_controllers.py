"""The two controllers of identity and access that kube-controller-manager runs.

Every namespace gets a `default` ServiceAccount (recreated if deleted, never
in a namespace being deleted), so `kubectl create token default` works as on
any cluster. A ClusterRole with an `aggregationRule` has its rules kept equal
to the union of the rules of the ClusterRoles its selectors match, which is
how a platform team grants the engine a new job kind with one labelled
ClusterRole. `NamespaceKeeper` is what every per-namespace keeper shares (the root CA
publisher is one too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loguru import logger

from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CLUSTER_ROLES, NAMESPACES, SERVICE_ACCOUNTS
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.selectors import LabelSelector, SelectorError
from engine.cluster.apiserver.storage.objects import Change, Entry

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

DEFAULT_ACCOUNT = "default"
_ACCOUNTS_MANAGER = "service-account-controller"
_AGGREGATION_MANAGER = "clusterrole-aggregation-controller"


class NamespaceKeeper:
    """Keeps one named object in every namespace that is not terminating: looked at when
    the namespace appears, at start, and when that object has one of the `watched` kinds
    of change; `_keep` says what to do with it (None: it does not exist)."""

    def __init__(self, store: Store, resource: ResourceType, name: str,
                 watched: tuple[str, ...], component: str) -> None:
        self._store = store
        self._resource = resource
        self._name = name
        self._watched = watched
        self._log = logger.bind(component=component)
        store.table.listen(self._on_change)

    def resume(self) -> None:
        for (_, name) in list(self._store.table.bucket(NAMESPACES.key).entries):
            self._ensure(name)

    def _on_change(self, change: Change) -> None:
        metadata = change.entry.obj["metadata"]
        if change.key == NAMESPACES.key and change.type == "ADDED":
            name = metadata["name"]
            self._store.reactor.soon(lambda: self._ensure(name))
        elif (change.key == self._resource.key and change.type in self._watched
              and metadata["name"] == self._name):
            namespace = metadata["namespace"]
            self._store.reactor.soon(lambda: self._ensure(namespace))

    def _ensure(self, namespace: str) -> None:
        table = self._store.table
        space = table.get(NAMESPACES.key, "", namespace)
        if space is None or space.obj["metadata"].get("deletionTimestamp"):
            return
        try:
            self._keep(namespace, table.get(self._resource.key, namespace, self._name))
        except ApiError as exc:
            self._log.warning("could not keep {}/{}: {}", namespace, self._name, exc)

    def _keep(self, namespace: str, entry: Entry | None) -> None:
        raise NotImplementedError


class DefaultServiceAccounts(NamespaceKeeper):
    """Keeps a `default` ServiceAccount in every namespace that is not terminating."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, SERVICE_ACCOUNTS, DEFAULT_ACCOUNT, ("DELETED",),
                         "apiserver.serviceaccounts")

    def _keep(self, namespace: str, entry: Entry | None) -> None:
        if entry is None:
            self._store.create(SERVICE_ACCOUNTS, namespace, {"metadata": {"name": DEFAULT_ACCOUNT}},
                               field_manager=_ACCOUNTS_MANAGER)


class ClusterRoleAggregator:
    """Fills aggregated ClusterRoles' rules from the ClusterRoles their selectors match."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._scheduled = False
        self._log = logger.bind(component="apiserver.rbac")
        store.table.listen(self._on_change)

    def resume(self) -> None:
        self._schedule()

    def _on_change(self, change: Change) -> None:
        if change.key == CLUSTER_ROLES.key:
            self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self._store.reactor.soon(self._aggregate_all)

    def _aggregate_all(self) -> None:
        self._scheduled = False
        roles = {name: entry.obj for (_, name), entry in
                 self._store.table.bucket(CLUSTER_ROLES.key).entries.items()}
        for name, role in sorted(roles.items()):
            rule_selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors")
            if not rule_selectors:
                continue
            rules = _aggregated_rules(name, rule_selectors, roles)
            if rules is None or rules == (role.get("rules") or []):
                continue
            try:
                self._store.update(CLUSTER_ROLES, "", name, {**role, "rules": rules},
                                   field_manager=_AGGREGATION_MANAGER)
            except ApiError as exc:
                self._log.warning("could not aggregate ClusterRole {}: {}", name, exc)


def _aggregated_rules(name: str, rule_selectors: list[Any], roles: dict[str, Any]
                      ) -> list[Any] | None:
    """The union of the matching roles' rules in name order, without repeats; None when a
    selector is malformed (validation keeps those out, so this is only defensive)."""
    try:
        selectors = [LabelSelector.from_object(s) for s in rule_selectors if isinstance(s, dict)]
    except SelectorError:
        return None
    rules: list[Any] = []
    for selector in selectors:  # upstream's order: selector by selector, roles by name
        for other_name, other in sorted(roles.items()):
            labels = other["metadata"].get("labels") or {}
            if other_name != name and selector.matches(labels):
                rules.extend(rule for rule in other.get("rules") or () if rule not in rules)
    return rules
