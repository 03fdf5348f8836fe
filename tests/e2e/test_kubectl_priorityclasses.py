"""kubectl and PriorityClasses: create, get, and pods that take their priority from one.

This module runs its own API server (a global default class would change
every pod of the session's shared server) with a fresh kubectl cache.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import yaml

from engine.cluster.apiserver.endpoints.kubeconfig import write_kubeconfig
from engine.cluster.apiserver.endpoints.serve import running_apiserver
from tests.e2e.conftest import KUBECTL, Kubectl

pytestmark = pytest.mark.e2e

DESCRIPTION = "for pods that must run first"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl against a server of this module's own, in a fresh namespace."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    home = tmp_path_factory.mktemp("priority")
    namespace = f"prio-{uuid.uuid4().hex[:8]}"
    with running_apiserver(tls=True) as server:
        config = write_kubeconfig(
            home / "kubeconfig", server=server.url, token=server.token,
            ca_file=server.ca_file, namespace=namespace,
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "HTTP"))}
        env.update(KUBECONFIG=str(config), KUBECACHEDIR=str(home / "cache"), HOME=str(home))
        runner = Kubectl(env, namespace)
        runner("create", "namespace", namespace)
        runner("create", "priorityclass", "high", "--value=1000", f"--description={DESCRIPTION}")
        yield runner


def pod_manifest(name: str, priority_class: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
        f"  priorityClassName: {priority_class}\n"
        "  containers:\n  - name: main\n    image: busybox:1.36\n"
    )


def test_get_pc_lists_the_new_class_beside_the_built_in_ones(kubectl: Kubectl) -> None:
    lines = kubectl("get", "pc").stdout.splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["high"][1:3] == ["1000", "false"]
    assert rows["high"][4] == "PreemptLowerPriority"
    assert rows["system-cluster-critical"][1:3] == ["2000000000", "false"]
    assert rows["system-node-critical"][1:3] == ["2000001000", "false"]


def test_get_pc_yaml_shows_the_class_as_created(kubectl: Kubectl) -> None:
    document = yaml.safe_load(kubectl("get", "priorityclass", "high", "-o", "yaml").stdout)
    assert document["apiVersion"] == "scheduling.k8s.io/v1"
    assert document["kind"] == "PriorityClass"
    assert (document["value"], document["description"]) == (1000, DESCRIPTION)
    assert document["preemptionPolicy"] == "PreemptLowerPriority"
    assert "globalDefault" not in document and "namespace" not in document["metadata"]


def test_a_pod_naming_the_class_gets_its_priority(kubectl: Kubectl) -> None:
    kubectl.apply(pod_manifest("important", "high"))
    jsonpath = "{.spec.priority} {.spec.preemptionPolicy} {.spec.priorityClassName}"
    printed = kubectl("get", "pod", "important", "-o", f"jsonpath={jsonpath}").stdout
    assert printed == "1000 PreemptLowerPriority high"


def test_a_pod_naming_an_unknown_class_is_refused(kubectl: Kubectl) -> None:
    result = kubectl.run("apply", "-f", "-", stdin=pod_manifest("orphan", "missing"))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "orphan" is '
        "forbidden: no PriorityClass with name missing was found"
    )
    assert kubectl.run("get", "pod", "orphan").returncode == 1


def test_system_classes_and_the_one_default_rule_hold(kubectl: Kubectl) -> None:
    deleted = kubectl.run("delete", "pc", "system-node-critical", "--timeout=30s")
    assert deleted.returncode == 1
    assert "this is a system priority class and cannot be deleted" in deleted.stderr
    kubectl("create", "priorityclass", "base", "--value=5", "--global-default")
    second = kubectl.run("create", "priorityclass", "base2", "--value=6", "--global-default")
    assert second.returncode == 1
    assert "PriorityClass base is already marked as default. Only one default can exist" in (
        second.stderr
    )
    kubectl("run", "plain", "--image=busybox:1.36", "--restart=Never")
    printed = kubectl(
        "get", "pod", "plain", "-o", "jsonpath={.spec.priority} {.spec.priorityClassName}"
    ).stdout
    assert printed == "5 base"
    kubectl("delete", "pc", "base", "--timeout=30s")


def test_kubectl_explain_reads_the_schema(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "priorityclass.value").stdout
    assert "FIELD: value <integer>" in explained
