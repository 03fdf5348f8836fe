"""The shipped in-cluster manifests (deploy/base) agree with the engine: RBAC, the Deployment
and the image.

RBAC is checked against the resources the engine uses, so a new resource or verb
in the engine fails here before it fails in a cluster with a 403. Job kinds are
data: the engine's ClusterRole aggregates labelled roles, and the shipped kinds'
role must grant every kind in crds/. The Deployment's arguments are parsed by
the real `jobmachine` command (nothing runs). The overlays, as `kubectl kustomize`
renders them, are checked in tests/e2e/test_kubectl_kustomize.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from engine.cli import app
from engine.controller.machines.revisions import CONTROLLER_REVISIONS
from engine.controller.machines.served import CRDS
from engine.kube.resources import (
    CONFIGMAPS,
    EVENTS,
    LEASES,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    STATE_MACHINES,
    Resource,
)
from engine.settings import EngineSettings
from tests.kinds import KINDS, NAMED

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "base"
AGGREGATE = "jobmachine.dev/aggregate-to-engine"

# What the engine does with each resource, and where.
WATCHED = {"get", "list", "watch"}  # watch.py: list + watch; claims.py: the fresh GET
JOB_VERBS = WATCHED | {"patch", "delete"}  # reconcile.py: finalizer patch, TTL delete
JOB_STATUS_VERBS = {"update"}  # status.py: replace of /status
JOB_FINALIZERS_VERBS = {"update"}  # blockOwnerDeletion on children needs update of /finalizers
CHILD_VERBS = WATCHED | {"create", "patch", "delete"}  # actions.py, claims.py
EVENT_VERBS = {"create", "patch"}  # events.py: new events, aggregated repeats
INFORMED = {"list", "watch"}  # watch.py: an informer lists, then watches
NODE_VERBS = INFORMED  # reconcile.py: a pod on a node that is not Ready is lost
LEASE_VERBS = {"get", "list", "create", "update", "delete"}  # leader.py, shard_leases.py
MACHINE_VERBS = INFORMED  # machines/controller.py: the StateMachine informer
MACHINE_STATUS_VERBS = {"update"}  # machines/status.py: replace of /status
REVISION_VERBS = INFORMED | {"create", "delete"}  # machines/controller.py


def documents(name: str) -> list[dict[str, Any]]:
    with (DEPLOY / name).open() as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


ALL_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


def granted(rules: list[dict[str, Any]], group: str, resource: str) -> set[str]:
    """Every verb the rules allow on `resource` of API group `group` (wildcards count)."""
    verbs: set[str] = set()
    for rule in rules:
        groups, resources = rule.get("apiGroups", ()), rule.get("resources", ())
        if (group in groups or "*" in groups) and (resource in resources or "*" in resources):
            verbs |= set(rule.get("verbs", ()))
    return ALL_VERBS if "*" in verbs else verbs


RBAC = documents("rbac.yaml")
CLUSTER_ROLE = next(d for d in RBAC if d["kind"] == "ClusterRole" and "aggregationRule" in d)
AGGREGATED_RULES = [
    rule for d in RBAC if d["kind"] == "ClusterRole"
    and (d["metadata"].get("labels") or {}).get(AGGREGATE) == "true"
    for rule in d["rules"]
]
ROLE = one(RBAC, "Role")
DEPLOYMENT = one(documents("deployment.yaml"), "Deployment")
ENGINE = DEPLOYMENT["spec"]["template"]["spec"]["containers"][0]
ARGS: list[str] = ENGINE["args"]


def option(name: str) -> str:
    """The value of `--name=value` among the Deployment's arguments."""
    (value,) = [a.split("=", 1)[1] for a in ARGS if a.startswith(f"--{name}=")]
    return value


def _needed() -> list[tuple[Resource, str, set[str]]]:
    needed: list[tuple[Resource, str, set[str]]] = []
    for resource in KINDS.values():
        needed += [
            (resource, resource.plural, JOB_VERBS),
            (resource, f"{resource.plural}/status", JOB_STATUS_VERBS),
            (resource, f"{resource.plural}/finalizers", JOB_FINALIZERS_VERBS),
        ]
    needed += [
        (PODS, PODS.plural, CHILD_VERBS),
        (SERVICES, SERVICES.plural, CHILD_VERBS),
        (CONFIGMAPS, CONFIGMAPS.plural, CHILD_VERBS | {"update"}),
        (SECRETS, SECRETS.plural, CHILD_VERBS | {"update"}),
        (EVENTS, EVENTS.plural, EVENT_VERBS),
        (NODES, NODES.plural, NODE_VERBS),
        (STATE_MACHINES, STATE_MACHINES.plural, MACHINE_VERBS),
        (STATE_MACHINES, f"{STATE_MACHINES.plural}/status", MACHINE_STATUS_VERBS),
        (CRDS, CRDS.plural, INFORMED),
    ]
    needed += [(resource, resource.plural, INFORMED) for resource in NAMED.values()]
    return needed


@pytest.mark.parametrize(
    ("resource", "name", "verbs"), _needed(), ids=[n for _, n, _ in _needed()]
)
def test_the_cluster_role_grants_what_the_engine_does(
    resource: Resource, name: str, verbs: set[str]
) -> None:
    missing = verbs - granted(AGGREGATED_RULES, resource.group, name)
    assert not missing, f"deploy/base/rbac.yaml lets the engine not {sorted(missing)} {name}"


def test_the_engines_cluster_role_aggregates_the_labelled_roles() -> None:
    selectors = CLUSTER_ROLE["aggregationRule"]["clusterRoleSelectors"]
    assert {"matchLabels": {AGGREGATE: "true"}} in selectors
    assert CLUSTER_ROLE["rules"] == []


def test_the_lease_and_the_revisions_are_granted_in_the_namespace_the_engine_uses() -> None:
    missing = LEASE_VERBS - granted(ROLE["rules"], LEASES.group, LEASES.plural)
    assert not missing
    missing = REVISION_VERBS - granted(ROLE["rules"], CONTROLLER_REVISIONS.group,
                                       CONTROLLER_REVISIONS.plural)
    assert not missing
    assert ROLE["metadata"]["namespace"] == option("lease-namespace")


def test_the_engines_namespace_is_where_it_runs() -> None:
    (variable,) = [e for e in ENGINE["env"] if e["name"] == "JOBMACHINE_SYSTEM_NAMESPACE"]
    assert variable["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert DEPLOYMENT["metadata"]["namespace"] == ROLE["metadata"]["namespace"]
    assert EngineSettings().system_namespace == ROLE["metadata"]["namespace"]


def test_the_roles_are_bound_to_the_deployments_service_account() -> None:
    account = one(RBAC, "ServiceAccount")["metadata"]
    assert DEPLOYMENT["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]
    assert DEPLOYMENT["metadata"]["namespace"] == account["namespace"]
    for binding_kind, role in (("ClusterRoleBinding", CLUSTER_ROLE), ("RoleBinding", ROLE)):
        binding = one(RBAC, binding_kind)
        assert binding["roleRef"]["kind"] == role["kind"]
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert {"kind": "ServiceAccount", "name": account["name"],
                "namespace": account["namespace"]} in binding["subjects"]


def test_the_deployment_runs_one_engine_in_cluster() -> None:
    assert ARGS[0] == "run"
    assert "--in-cluster" in ARGS
    assert DEPLOYMENT["spec"]["replicas"] == 1


def run_options(args: list[str]) -> dict[str, Any]:
    """`jobmachine run`'s options as its real parser reads `args` (an unknown one raises)."""
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    assert args[0] == "run"
    params: dict[str, Any] = command.commands["run"].make_context("run", list(args[1:])).params
    return params


def test_the_deployments_arguments_are_real_options_of_jobmachine_run() -> None:
    params = run_options(ARGS)
    assert params["in_cluster"] is True
    assert params["leader_elect"] is False  # overlays/ha adds it
    assert params["kubeconfig"] is None
    assert params["machines"] is None  # the machines are StateMachine objects


def test_probes_ask_healthz_and_readyz_on_the_metrics_port() -> None:
    ports = {p["name"]: p["containerPort"] for p in ENGINE["ports"]}
    metrics_port = int(option("metrics-port"))
    # The engine listens on loopback by default: the kubelet's probes come to the pod's IP.
    assert option("metrics-address") == "0.0.0.0"
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        http = ENGINE[probe]["httpGet"]
        assert http["path"] == path
        port = http["port"]
        assert (ports[port] if isinstance(port, str) else port) == metrics_port


def test_the_image_runs_the_engine_without_private_machine_files() -> None:
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    (command,) = [line for line in lines if line.startswith("CMD")]
    assert "--machines" not in command


def assert_restricted(pod: dict[str, Any]) -> None:
    """What the restricted level of Pod Security admission checks, field by field: a
    namespace labelled pod-security.kubernetes.io/enforce=restricted admits the pod."""
    security = pod.get("securityContext") or {}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & {k for k, v in pod.items() if v}
    assert all("hostPath" not in volume for volume in pod.get("volumes") or ())
    for container in [*pod.get("initContainers", ()), *pod["containers"]]:
        own = container.get("securityContext") or {}
        run_as_non_root = own.get("runAsNonRoot", security.get("runAsNonRoot"))
        seccomp = (own.get("seccompProfile") or security.get("seccompProfile") or {}).get("type")
        assert run_as_non_root is True, container["name"]
        assert own.get("runAsUser", security.get("runAsUser")) != 0, container["name"]
        assert seccomp in ("RuntimeDefault", "Localhost"), container["name"]
        assert own.get("allowPrivilegeEscalation") is False, container["name"]
        assert own.get("privileged", False) is False, container["name"]
        assert (own.get("capabilities") or {}).get("drop") == ["ALL"], container["name"]
        assert not set((own.get("capabilities") or {}).get("add") or ()) - {"NET_BIND_SERVICE"}
        assert own.get("readOnlyRootFilesystem") is True, container["name"]
        assert all(port.get("hostPort", 0) == 0 for port in container.get("ports") or ())


def test_the_engine_pod_passes_the_restricted_pod_security_level() -> None:
    assert_restricted(DEPLOYMENT["spec"]["template"]["spec"])


def test_the_metrics_service_selects_the_engines_pods_on_the_metrics_port() -> None:
    service = one(documents("service.yaml"), "Service")
    pod = DEPLOYMENT["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] in {p["name"] for p in ENGINE["ports"]}
    assert service["metadata"]["namespace"] == DEPLOYMENT["metadata"]["namespace"]
