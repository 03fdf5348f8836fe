"""The real kubectl with apps/v1 Deployments and ReplicaSets on the embedded API server.

No controller rolls Deployments out yet, so these are the server's part only: `kubectl create
deployment` stores one with upstream's defaults, `kubectl scale` writes through /scale,
`kubectl set image` sends a strategic merge patch of the template, `kubectl get deploy -o
wide` prints upstream's columns, `kubectl get deploy,rs` and `kubectl get all` list them,
`kubectl describe` reads them. Each test runs in its own namespace.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

REPLICA_SET = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: cache
spec:
  replicas: 2
  selector:
    matchLabels: {app: cache}
  template:
    metadata:
      labels: {app: cache}
    spec:
      containers:
      - {name: redis, image: redis:7}
"""


def test_create_deployment_stores_it_with_upstreams_defaults(kubectl: Kubectl) -> None:
    out = kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3").stdout
    assert out.strip() == "deployment.apps/web created"
    deployment = kubectl.get_json("deployment", "web")
    spec = deployment["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert deployment["metadata"]["generation"] == 1


def test_get_deploy_wide_prints_upstreams_columns(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    lines = kubectl("get", "deploy", "-o", "wide").stdout.splitlines()
    assert lines[0].split() == [
        "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]
    cells = lines[1].split()
    assert cells[:4] == ["web", "0/2", "0", "0"]
    assert cells[5:] == ["nginx", "nginx:1.27", "app=web"]


def test_scale_writes_replicas_through_the_scale_subresource(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
    out = kubectl("scale", "deployment/web", "--replicas=4").stdout
    assert out.strip() == "deployment.apps/web scaled"
    deployment = kubectl.get_json("deployment", "web")
    assert deployment["spec"]["replicas"] == 4
    assert deployment["metadata"]["generation"] == 2
    refused = kubectl.run("scale", "deployment/web", "--replicas=-1")
    assert refused.returncode != 0
    assert "replicas" in refused.stderr


def test_scale_with_current_replicas_precondition(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    wrong = kubectl.run("scale", "deployment/web", "--current-replicas=5", "--replicas=3")
    assert wrong.returncode != 0
    assert "Expected replicas to be 5, was 2" in wrong.stderr
    kubectl("scale", "deployment/web", "--current-replicas=2", "--replicas=3")
    assert kubectl.get_json("deployment", "web")["spec"]["replicas"] == 3


def test_set_image_patches_the_template(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27")
    out = kubectl("set", "image", "deployment/web", "nginx=nginx:1.28").stdout
    assert out.strip() == "deployment.apps/web image updated"
    deployment = kubectl.get_json("deployment", "web")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("nginx", "nginx:1.28")]
    assert deployment["metadata"]["generation"] == 2


def test_get_deploy_and_rs_and_all(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27")
    kubectl.apply(REPLICA_SET)
    listed = kubectl("get", "deploy,rs").stdout
    assert "deployment.apps/web" in listed
    assert "replicaset.apps/cache" in listed
    header = next(line for line in listed.splitlines() if line.startswith("NAME") and "DESIRED"
                  in line)
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    every = kubectl("get", "all").stdout
    assert "deployment.apps/web" in every and "replicaset.apps/cache" in every


def test_describe_deployment(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    out = kubectl("describe", "deployment", "web").stdout
    assert "Name:                   web" in out
    assert "Selector:               app=web" in out
    assert "StrategyType:           RollingUpdate" in out
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge" in out
    assert "nginx:1.27" in out


def test_invalid_deployment_is_refused_with_upstreams_words(kubectl: Kubectl) -> None:
    manifest = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  selector: {matchLabels: {app: a}}
  strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}
  template:
    metadata: {labels: {app: b}}
    spec:
      containers: [{name: c, image: busybox}]
"""
    refused = kubectl.run("apply", "-f", "-", stdin=manifest)
    assert refused.returncode != 0
    assert 'The Deployment "bad" is invalid' in refused.stderr
    assert "spec.template.metadata.labels: Invalid value" in refused.stderr
    assert ("spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy "
            "`type` is 'Recreate'") in refused.stderr
