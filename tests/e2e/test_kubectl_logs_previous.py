"""kubectl against `jobmachine apiserver` and a process node: bare Pods under restartPolicy
OnFailure restart in place as on a kubelet, and kubectl reads them as it reads a kubelet's pods.

One server and node for the module, of its own: the session's server holds pods other tests
expect to stay unscheduled. The node's restart back-off comes from its documented environment
variable, long enough to watch a container wait in CrashLoopBackOff.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator

import pytest

from engine.cluster.apiserver.endpoints.serve import running_apiserver
from engine.cluster.node import running_node
from engine.cluster.node.status.backoff import INITIAL_ENV
from tests.e2e.conftest import KUBECTL, Kubectl, _kubectl_for
from tests.polling import eventually

pytestmark = pytest.mark.e2e

BACKOFF_S = "20"
# Numbers its attempts with files in the pod's working directory, which restarts keep.
ATTEMPT = "import os, sys, time\nn = len(os.listdir('.')) + 1\nopen(f'a{n}', 'w').close()\n"


def _pod(name: str, script: str, *, policy: str = "OnFailure", **container: str) -> str:
    """A bare Pod running `script` with this Python (JSON is YAML, so no quoting)."""
    main = {"name": "main", "image": "python:3.12", "command": [sys.executable, "-c", script],
            **container}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"restartPolicy": policy, "containers": [main]}})


@pytest.fixture(scope="module")
def node_kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl on a server with a process node whose restart back-off opens at 20 s."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    directory = tmp_path_factory.mktemp("logs-previous")
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv(INITIAL_ENV, BACKOFF_S)
        with running_apiserver(tls=True) as server, running_node(
                server, mode="process", state_dir=directory / "node"):
            yield _kubectl_for(server, directory / "cache", directory, "default")


def _row(kubectl: Kubectl, name: str) -> list[str]:
    """kubectl get pod NAME's columns: NAME READY STATUS RESTARTS AGE."""
    return re.split(r"\s{2,}", kubectl("get", "pod", name, "--no-headers").stdout.strip())


def _row_when(kubectl: Kubectl, name: str, status: str) -> list[str]:
    """The pod's columns once its STATUS reads `status`."""
    def reached() -> list[str] | None:
        row = _row(kubectl, name)
        return row if row[2] == status else None

    found: list[str] = eventually(reached, timeout=60, interval=0.3)
    return found


def test_a_restarted_container_shows_its_failed_attempt_with_previous(
        node_kubectl: Kubectl) -> None:
    script = ATTEMPT + ("print(f'attempt {n}: ' + ('failing' if n == 1 else 'serving'), "
                        "flush=True)\nif n == 1:\n    sys.exit(2)\ntime.sleep(600)")
    node_kubectl.apply(_pod("flaky", script))
    eventually(lambda: node_kubectl.run("logs", "flaky").stdout == "attempt 2: serving\n",
               timeout=60, interval=0.3)
    name, ready, status, restarts, _ = _row_when(node_kubectl, "flaky", "Running")
    assert (name, ready, status) == ("flaky", "1/1", "Running")
    assert re.fullmatch(r"1 \(\d+s ago\)", restarts)
    assert node_kubectl("logs", "flaky", "--previous").stdout == "attempt 1: failing\n"


def test_a_crash_looping_container_waits_and_says_why(node_kubectl: Kubectl) -> None:
    node_kubectl.apply(_pod("crashing", ATTEMPT + "print(f'crash {n}')\nsys.exit(3)"))
    row = _row_when(node_kubectl, "crashing", "CrashLoopBackOff")
    assert row[:3] == ["crashing", "0/1", "CrashLoopBackOff"]
    assert re.fullmatch(r"1 \(\d+s ago\)", row[3])
    assert node_kubectl("logs", "crashing", "--previous").stdout == "crash 2\n"
    assert node_kubectl("logs", "crashing").stdout == "crash 2\n"
    described = node_kubectl("describe", "pod", "crashing").stdout
    uid = node_kubectl("get", "pod", "crashing", "-o", "jsonpath={.metadata.uid}").stdout
    assert re.search(r"State:\s+Waiting\n\s+Reason:\s+CrashLoopBackOff\n", described)
    assert re.search(r"Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+3\n",
                     described)
    assert re.search(r"Restart Count:\s+1\n", described)
    assert re.search(r"Warning\s+BackOff\s+.*jobmachine-node\s+Back-off restarting failed "
                     rf"container main in pod crashing_default\({uid}\)", described)
    assert re.search(r"Normal\s+Started\s+\S+ \(x2 over \S+\)\s+jobmachine-node\s+Started "
                     r"container main", described)


def test_a_container_that_never_restarted_has_no_previous_attempt(
        node_kubectl: Kubectl) -> None:
    node_kubectl.apply(_pod("once", "import sys\nprint('only once')\nsys.exit(1)",
                            policy="Never", terminationMessagePolicy="FallbackToLogsOnError"))
    assert _row_when(node_kubectl, "once", "Error")[:4] == ["once", "0/1", "Error", "0"]
    previous = node_kubectl.run("logs", "once", "--previous")
    assert previous.returncode == 1
    assert previous.stderr.strip() == ('Error from server (BadRequest): previous terminated '
                                       'container "main" in pod "once" not found')
    assert node_kubectl("logs", "once").stdout == "only once\n"
    described = node_kubectl("describe", "pod", "once").stdout
    assert re.search(r"State:\s+Terminated\n\s+Reason:\s+Error\n\s+Message:\s+only once\n",
                     described)
