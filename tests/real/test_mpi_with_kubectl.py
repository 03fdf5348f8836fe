"""The MPIJob walk-through of docs/guide.md, as a user runs it: `jobmachine up` started from
the activated venv, the scripts' ConfigMap and examples/real/mpi.yaml applied with the real
kubectl, the job waited for with kubectl, the trained result read from the Launcher's log.

The Launcher's `mpirun` reaches the Workers only through `kubectl exec` as its own service
account, so this also checks what the engine gave that account: exec into exactly the
job's Workers, nothing more.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import KUBECTL, Kubectl
from tests.e2e.up_process import running_up
from tests.real.support import REAL, needs_real_extra, result_lines

# Real mpirun reaching its Workers through kubectl exec: timed out once beside other tests in
# the two-process suite (17 s alone, 27 s with both cores busy), so it runs alone.
pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.exclusive, needs_real_extra,
              pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed here")]

LAUNCHER = "system:serviceaccount:default:mpi-real-launcher"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    home = tmp_path_factory.mktemp("mpi-kubectl")
    with running_up(home, "-q", path_first=Path(sys.executable).parent) as up:
        env = {**up.env, "KUBECONFIG": str(up.kubeconfig), "KUBECACHEDIR": str(home / "cache"),
               "HOME": str(home)}
        yield Kubectl(env, "default")


@pytest.fixture(scope="module")
def finished(kubectl: Kubectl) -> Kubectl:
    kubectl("create", "configmap", "example-scripts", f"--from-file={REAL}")
    kubectl("apply", "-f", str(REAL / "mpi.yaml"))
    waited = kubectl.run("wait", "--for=condition=Succeeded", "mpijob/mpi-real",
                         "--timeout=180s", timeout=200)
    if waited.returncode != 0:
        seen = [kubectl.run(*command).stdout for command in (
            ("get", "mpijob,pods", "-o", "wide"), ("describe", "mpijob", "mpi-real"),
            ("logs", "mpi-real-launcher-0", "--tail=60"))]
        pytest.fail(f"mpi-real did not succeed: {waited.stderr}\n" + "\n".join(seen))
    return kubectl


def test_the_launcher_prints_the_result_the_ranks_agreed_on(finished: Kubectl) -> None:
    log = finished("logs", "mpi-real-launcher-0").stdout
    lines = result_lines(log)
    assert len(lines) == 1, log
    (line,) = lines
    assert re.fullmatch(
        r"mpi launcher: 2 of 2 ranks in pods mpi-real-worker-0, mpi-real-worker-1, "
        r"pi 3\.1415926536, max weight error 0\.0\d+, model [0-9a-f]{12} the same on every "
        r"rank \(ok\)", line), log
    # mpirun started the Workers' daemons through kubexec.sh (its `set -x` trace), i.e.
    # kubectl exec; the ranks ran in both Worker pods (the result line says so).
    assert "+ /opt/kube/kubectl exec mpi-real-worker-" in log, log


def test_the_launcher_may_exec_into_its_workers_only(finished: Kubectl) -> None:
    def can(*what: str) -> str:
        return finished.run("auth", "can-i", *what, f"--as={LAUNCHER}").stdout.strip()

    assert can("create", "pods/mpi-real-worker-0", "--subresource=exec") == "yes"
    assert can("create", "pods/mpi-real-worker-1", "--subresource=exec") == "yes"
    assert can("create", "pods/mpi-real-launcher-0", "--subresource=exec") == "no"
    assert can("delete", "pods/mpi-real-worker-0") == "no"
    assert can("list", "pods") == "yes"
    owners = finished("get", "serviceaccount,role,rolebinding", "mpi-real-launcher", "-o",
                      "jsonpath={range .items[*]}{.kind} {.metadata.ownerReferences[0].name}"
                      "{'\\n'}{end}").stdout.split("\n")
    assert [o for o in owners if o] == ["ServiceAccount mpi-real", "Role mpi-real",
                                        "RoleBinding mpi-real"]
