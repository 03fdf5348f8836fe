"""kubectl exec and kubectl cp against `jobmachine apiserver` and a process node: the command runs
inside the container (its environment, working directory and /etc/hosts), with its output,
exit code, input and terminal; a container that is not running and a simulated one say why.

One server and process node for the module, of its own (pods here run for minutes), and one
with a simulate node for the one test that needs it.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import termios
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cluster.apiserver.endpoints.serve import running_apiserver
from engine.cluster.node import running_node
from tests.e2e.conftest import KUBECTL, Kubectl, _kubectl_for
from tests.polling import eventually

pytestmark = pytest.mark.e2e

GREETING = "hello from the pod template"


def _pod(name: str, *, env: list[dict[str, object]] | None = None,
         annotations: dict[str, str] | None = None) -> str:
    """A bare Pod whose container marks its working directory, then sleeps."""
    main = {"name": "main", "image": "busybox",
            "command": ["sh", "-c", "echo started here > marker && exec sleep 3600"],
            "env": env or [{"name": "GREETING", "value": GREETING}]}
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "annotations": annotations or {}},
                       "spec": {"restartPolicy": "Never", "containers": [main]}})


def _running(kubectl: Kubectl, name: str) -> None:
    def started() -> bool:
        pod = kubectl.get_json("pod", name)
        states = [s.get("state", {}) for s in pod.get("status", {}).get("containerStatuses", [])]
        return bool(states) and "running" in states[0]

    eventually(started, timeout=60, interval=0.2)


@pytest.fixture(scope="module")
def node_kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl on a server of its own with a process node."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    directory = tmp_path_factory.mktemp("exec")
    with running_apiserver(tls=True) as server, running_node(
            server, mode="process", state_dir=directory / "node"):
        yield _kubectl_for(server, directory / "cache", directory, "default")


@pytest.fixture(scope="module")
def sleeper(node_kubectl: Kubectl) -> str:
    """A running pod the tests exec in, once its command has written the marker (the
    container runs before its shell gets there; on a loaded machine, well before)."""
    node_kubectl.apply(_pod("sleeper"))
    _running(node_kubectl, "sleeper")
    eventually(lambda: node_kubectl.run("exec", "sleeper", "--", "test", "-f", "marker")
               .returncode == 0, timeout=30, interval=0.2)
    return "sleeper"


def test_a_command_prints_on_stdout_and_stderr_and_exits_0(
        node_kubectl: Kubectl, sleeper: str) -> None:
    done = node_kubectl.run("exec", sleeper, "--", "sh", "-c", "echo out; echo err >&2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")


def test_the_exit_code_of_the_command_is_kubectls(node_kubectl: Kubectl, sleeper: str) -> None:
    done = node_kubectl.run("exec", sleeper, "--", "sh", "-c", "echo bye; exit 3")
    assert (done.returncode, done.stdout) == (3, "bye\n")
    assert done.stderr == "command terminated with exit code 3\n"


def test_stdin_reaches_the_command_and_ends(node_kubectl: Kubectl, sleeper: str) -> None:
    done = node_kubectl.run("exec", "-i", sleeper, "--", "sh", "-c", "cat; echo end",
                            stdin="hi\nthere\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "hi\nthere\nend\n", "")


def test_the_command_runs_in_the_containers_environment(
        node_kubectl: Kubectl, sleeper: str) -> None:
    script = 'echo "$GREETING"; echo "$HOSTNAME"; cat marker; grep -w sleeper /etc/hosts'
    done = node_kubectl("exec", sleeper, "--", "sh", "-c", script)
    greeting, hostname, marker, hosts = done.stdout.splitlines()
    assert (greeting, hostname, marker) == (GREETING, "sleeper", "started here")
    assert hosts.split()[:2] == ["127.0.0.1", "sleeper"]  # the node's hosts file


def _on_terminal(kubectl: Kubectl, *args: str, rows: int, columns: int) -> tuple[int, str]:
    """kubectl ARGS with a terminal of `rows` x `columns` as its standard streams: its exit
    code and what it wrote there."""
    assert KUBECTL is not None
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    process = subprocess.Popen([KUBECTL, *args], stdin=secondary, stdout=secondary,
                               stderr=secondary, env=kubectl.env, start_new_session=True)
    os.close(secondary)
    output = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if not select.select([main], [], [], 1.0)[0]:
                continue
            try:
                chunk = os.read(main, 4096)
            except OSError:  # kubectl has exited and closed the terminal
                break
            if not chunk:
                break
            output += chunk
        return process.wait(timeout=30), output.decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)


def test_with_a_terminal_the_command_has_one_of_the_clients_size(
        node_kubectl: Kubectl, sleeper: str) -> None:
    code, output = _on_terminal(node_kubectl, "exec", "-it", sleeper, "--", "sh", "-c",
                                "tty; stty size; test -t 0 && echo stdin is a terminal",
                                rows=33, columns=101)
    assert code == 0, output
    lines = output.replace("\r", "").splitlines()
    assert lines[0].startswith("/dev/pts/")
    assert lines[1:] == ["33 101", "stdin is a terminal"]


def test_without_a_terminal_the_command_has_none(node_kubectl: Kubectl, sleeper: str) -> None:
    done = node_kubectl.run("exec", "-i", sleeper, "--", "sh", "-c", "test -t 0", stdin="")
    assert done.returncode == 1


def test_kubectl_cp_copies_into_the_working_directory_and_back(
        node_kubectl: Kubectl, sleeper: str, tmp_path: Path) -> None:
    sent = tmp_path / "sent.txt"
    sent.write_bytes(b"line one\n" + os.urandom(100_000).hex().encode())
    node_kubectl("cp", str(sent), f"{sleeper}:copied.txt")
    listed = node_kubectl("exec", sleeper, "--", "sh", "-c", "ls; wc -c < copied.txt").stdout
    assert listed.split() == ["copied.txt", "marker", str(sent.stat().st_size)]
    back = tmp_path / "back.txt"
    node_kubectl("cp", f"{sleeper}:copied.txt", str(back))
    assert back.read_bytes() == sent.read_bytes()


def test_a_container_that_is_not_running_cannot_be_entered(node_kubectl: Kubectl) -> None:
    """The container waits for a ConfigMap that does not exist: the kubelet finds no such
    container, and kube-apiserver reports it on the error channel."""
    missing = [{"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "absent",
                                                                    "key": "level"}}}]
    node_kubectl.apply(_pod("waiting", env=missing))
    eventually(lambda: "CreateContainerConfigError" in node_kubectl(
        "get", "pod", "waiting", "--no-headers").stdout, timeout=60, interval=0.2)
    done = node_kubectl.run("exec", "waiting", "--", "true")
    assert done.returncode == 1
    assert done.stderr == ('error: Internal error occurred: unable to upgrade connection: '
                           'container not found ("main")\n')


def test_a_container_that_is_not_in_the_pod_is_refused(
        node_kubectl: Kubectl, sleeper: str) -> None:
    raw = node_kubectl.run("get", "--raw",
                           f"/api/v1/namespaces/default/pods/{sleeper}/exec?command=true"
                           "&stdout=true&container=other")
    assert raw.returncode == 1
    assert "container other is not valid for pod sleeper" in raw.stderr


def test_exec_is_authorized_on_pods_exec(node_kubectl: Kubectl, sleeper: str) -> None:
    """kubectl's WebSocket is a GET (authorized as `get pods/exec`, as by kube-apiserver 1.32);
    refused, kubectl falls back to SPDY, a POST (`create pods/exec`), and reports that."""
    robot = f"robot-{uuid.uuid4().hex[:6]}"
    node_kubectl("create", "serviceaccount", robot)
    for role, verbs, resource in ((f"{robot}-pods", "get", "pods"),
                                  (f"{robot}-exec", "get,create", "pods/exec")):
        node_kubectl("create", "role", role, f"--verb={verbs}", f"--resource={resource}")
    node_kubectl("create", "rolebinding", f"{robot}-pods", f"--role={robot}-pods",
                 f"--serviceaccount=default:{robot}")
    token = node_kubectl("create", "token", robot).stdout.strip()
    denied = node_kubectl.run(f"--token={token}", "exec", sleeper, "--", "echo", "in")
    assert (denied.returncode, denied.stdout) == (1, "")
    assert denied.stderr == (
        f'Error from server (Forbidden): pods "{sleeper}" is forbidden: User '
        f'"system:serviceaccount:default:{robot}" cannot create resource "pods/exec" in API '
        'group "" in the namespace "default"\n')
    node_kubectl("create", "rolebinding", f"{robot}-exec", f"--role={robot}-exec",
                 f"--serviceaccount=default:{robot}")
    assert node_kubectl(f"--token={token}", "exec", sleeper, "--", "echo", "in").stdout == "in\n"


def test_simulated_containers_have_no_process_to_exec_in(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    directory = tmp_path_factory.mktemp("exec-simulated")
    name = f"simulated-{uuid.uuid4().hex[:6]}"
    with running_apiserver(tls=True) as server, running_node(
            server, mode="simulate", state_dir=directory / "node"):
        kubectl = _kubectl_for(server, directory / "cache", directory, "default")
        kubectl.apply(_pod(name, annotations={"sim.jobmachine.dev/run-seconds": "600"}))
        _running(kubectl, name)
        done = kubectl.run("exec", name, "--", "true")
    assert done.returncode == 1
    assert done.stderr == (f'error: cannot exec in container "main" of pod "{name}": the '
                           "local node runs in simulate mode, where containers have no "
                           "processes\n")
