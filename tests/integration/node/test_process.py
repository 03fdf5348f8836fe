"""Process pods: commands run as local processes with the pod's env, logs, restarts in place,
termination messages, deletion and name resolution of Services."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.node import running_node
from tests.integration.node.conftest import NS, Cluster, pod, story
from tests.polling import eventually

PY = sys.executable


def container(script: str, name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3.11", "command": [PY, "-c", script], **fields}


def terminated(cluster: Cluster, name: str, which: str = "main") -> dict[str, Any]:
    state: dict[str, Any] = cluster.container(name, which)["state"]["terminated"]
    return state


def test_env_field_refs_logs_and_exit_code(processes: Cluster) -> None:
    script = ("import os, sys; print(os.environ['POD'], os.environ['NS'], os.environ['IP'], "
              "os.environ['INDEX'], os.environ['GREETING']); sys.stderr.write('to stderr\\n'); "
              "sys.exit(3)")
    env = [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['replica-index']"}}},
        {"name": "GREETING", "value": "hello-$(POD)"},
    ]
    body = pod("envy", container(script, env=env))
    body["metadata"]["labels"] = {"replica-index": "7"}
    processes.create(body)
    status = processes.wait_phase("envy", "Succeeded", "Failed")["status"]
    assert status["phase"] == "Failed"
    ended = terminated(processes, "envy")
    assert (ended["exitCode"], ended["reason"]) == (3, "Error")
    assert processes.log("envy") == "envy default 127.0.0.1 7 hello-envy\nto stderr\n"


# Numbers its attempts with files in the pod's working directory, which restarts keep.
ATTEMPT = "import os, sys\nn = len(os.listdir('.')) + 1\nopen(f'attempt-{n}', 'w').close()\n"


def backing_off(version: dict[str, Any]) -> bool:
    statuses = (version.get("status") or {}).get("containerStatuses") or ()
    return any("waiting" in status["state"] for status in statuses)


def done(version: dict[str, Any]) -> bool:
    return (version.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def test_on_failure_restarts_in_place_as_the_kubelet_does(processes: Cluster) -> None:
    """exits 2, 2, then 0 -> the same pod runs three times: restarted at once, then after
    CrashLoopBackOff's first window; Running until Succeeded; restartCount 2."""
    script = ATTEMPT + "print(f'attempt {n}')\nsys.exit(2 if n < 3 else 0)"
    created = processes.create(pod("retry", container(script), restart_policy="OnFailure"))
    uid = created["metadata"]["uid"]
    versions = processes.history("retry", created["metadata"]["resourceVersion"], done)
    assert {v["metadata"]["uid"] for v in versions} == {uid}
    assert story(versions) == [
        ("Running", "running", 0), ("Running", "running", 1),
        ("Running", "CrashLoopBackOff", 1), ("Running", "running", 2),
        ("Succeeded", "Completed", 2)]
    waiting = next(v["status"] for v in versions if backing_off(v))
    assert waiting["containerStatuses"][0]["state"]["waiting"]["message"] == (
        f"back-off 500ms restarting failed container=main pod=retry_default({uid})")
    ready = {c["type"]: c for c in waiting["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "ContainersNotReady", "containers with unready status: [main]")
    main = versions[-1]["status"]["containerStatuses"][0]
    last = main["lastState"]["terminated"]
    assert (main["restartCount"], last["exitCode"], last["reason"]) == (2, 2, "Error")
    assert last["containerID"].startswith("jobmachine-process://")
    assert last["startedAt"] <= last["finishedAt"] <= main["state"]["terminated"]["startedAt"]
    assert (processes.log("retry"), processes.log("retry", previous=True)) == (
        "attempt 3\n", "attempt 2\n")
    counted = {(e.reason, e.type, e.involved_object.field_path, e.message): e.count
               for e in processes.events("retry") if e.reason != "ImageIgnored"}
    assert counted == {
        ("Scheduled", "Normal", None, "Successfully assigned default/retry to jobmachine-local"): 1,
        ("Created", "Normal", "spec.containers{main}", "Created container main"): 3,
        ("Started", "Normal", "spec.containers{main}", "Started container main"): 3,
        ("BackOff", "Warning", "spec.containers{main}",
         f"Back-off restarting failed container main in pod retry_default({uid})"): 1,
    }


def test_a_previous_attempt_that_does_not_exist_is_the_kubelets_error(
        processes: Cluster) -> None:
    processes.create(pod("once", container("print('only')")))
    processes.wait_phase("once", "Succeeded")
    with pytest.raises(client.ApiException) as error:
        processes.log("once", previous=True)
    assert error.value.status == 400
    assert json.loads(error.value.body)["message"] == (
        'previous terminated container "main" in pod "once" not found')


def test_the_termination_message_file_reads_in_state_and_last_state(processes: Cluster) -> None:
    script = ATTEMPT + ("open('/dev/termination-log', 'w').write(f'attempt {n} says bye')\n"
                        "sys.exit(3 if n == 1 else 0)")
    processes.create(pod("said", container(script), restart_policy="OnFailure"))
    assert processes.wait_phase("said", "Succeeded", "Failed")["status"]["phase"] == "Succeeded"
    main = processes.container("said")
    assert main["state"]["terminated"]["message"] == "attempt 2 says bye"
    assert main["lastState"]["terminated"]["message"] == "attempt 1 says bye"
    assert not Path("/dev/termination-log").exists()


def test_fallback_to_logs_on_error_takes_the_end_of_a_failed_containers_log(
        processes: Cluster) -> None:
    noisy = "import sys\nfor n in range(100):\n    print(f'line {n}')\nsys.exit(1)"
    wrote = ("import sys\nprint('noise')\n"
             "open('/dev/termination-log', 'w').write('from the file')\nsys.exit(1)")
    cases = {"fallback": (noisy, "FallbackToLogsOnError"), "by-file": (noisy, "File"),
             "succeeded": ("print('fine')", "FallbackToLogsOnError"),
             "file-first": (wrote, "FallbackToLogsOnError")}
    for name, (script, policy) in cases.items():
        processes.create(pod(name, container(script, terminationMessagePolicy=policy)))
    for name in cases:
        processes.wait_phase(name, "Succeeded", "Failed")
    messages = {name: terminated(processes, name).get("message") for name in cases}
    assert messages == {"fallback": "".join(f"line {n}\n" for n in range(20, 100)),
                        "by-file": None, "succeeded": None, "file-first": "from the file"}


def test_never_fails_the_pod_and_a_missing_command_is_a_clear_failure(processes: Cluster) -> None:
    processes.create(pod("nothing", {"name": "main", "image": "busybox"}))
    processes.create(pod("missing", {"name": "main", "image": "x",
                                     "command": ["no-such-program-here"]}))
    for name, reason, words in (("nothing", "NoCommand", "neither command nor args"),
                                ("missing", "StartError", "executable file not found")):
        assert processes.wait_phase(name, "Succeeded", "Failed")["status"]["phase"] == "Failed"
        ended = terminated(processes, name)
        assert ended["reason"] == reason
        assert words in ended["message"]
        assert reason in [e.reason for e in processes.events(name) if e.type == "Warning"]


def test_unsupported_value_from_fails_the_container(processes: Cluster) -> None:
    env = [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]
    processes.create(pod("resourceful", container("print(1)", env=env)))
    processes.wait_phase("resourceful", "Failed")
    ended = terminated(processes, "resourceful")
    assert ended["reason"] == "CreateContainerConfigError"
    assert "env CPU: valueFrom.resourceFieldRef is not supported" in ended["message"]


def test_init_containers_run_first_in_order(processes: Cluster, tmp_path: Path) -> None:
    def step(label: str) -> str:
        return f"open('order.txt', 'a').write('{label}\\n')"

    body = pod(
        "staged",
        container(step("main"), workingDir=str(tmp_path)),
        initContainers=[container(step("init-1"), "one", workingDir=str(tmp_path)),
                        container(step("init-2"), "two", workingDir=str(tmp_path))],
    )
    processes.create(body)
    status = processes.wait_phase("staged", "Succeeded", "Failed")["status"]
    assert status["phase"] == "Succeeded"
    assert (tmp_path / "order.txt").read_text() == "init-1\ninit-2\nmain\n"
    assert [s["state"]["terminated"]["exitCode"] for s in status["initContainerStatuses"]] == [0, 0]


def test_a_failed_init_container_fails_the_pod_under_never(processes: Cluster) -> None:
    body = pod("broken-init", container("print('never runs')"),
               initContainers=[container("raise SystemExit(4)", "setup")])
    processes.create(body)
    status = processes.wait_phase("broken-init", "Succeeded", "Failed")["status"]
    assert status["phase"] == "Failed"
    assert status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 4
    assert "waiting" in status["containerStatuses"][0]["state"]


def test_graceful_deletion_sends_sigterm_and_confirms(processes: Cluster) -> None:
    script = ("import signal, sys, time\n"
              "def stop(*_):\n    print('got SIGTERM', flush=True); sys.exit(0)\n"
              "signal.signal(signal.SIGTERM, stop)\nprint('ready', flush=True)\n"
              "while True:\n    time.sleep(0.1)")
    body = pod("graceful", container(script), terminationGracePeriodSeconds=20)
    body["metadata"]["finalizers"] = ["example.com/hold"]
    processes.create(body)
    eventually(lambda: processes.started_log("graceful") == "ready\n")
    processes.core.delete_namespaced_pod("graceful", NS)

    def confirmed() -> dict[str, Any] | None:
        found = processes.read("graceful")
        return found if found and found["metadata"]["deletionGracePeriodSeconds"] == 0 else None

    found = eventually(confirmed, timeout=15)
    ended = found["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (found["status"]["phase"], ended["exitCode"]) == ("Succeeded", 0)
    assert processes.log("graceful") == "ready\ngot SIGTERM\n"
    killing = [(e.type, e.involved_object.field_path, e.message)
               for e in processes.events("graceful") if e.reason == "Killing"]
    assert killing == [("Normal", "spec.containers{main}", "Stopping container main")]
    processes.core.patch_namespaced_pod("graceful", NS, {"metadata": {"finalizers": None}})
    eventually(lambda: processes.read("graceful") is None)


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(processes: Cluster) -> None:
    script = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "print('ready', flush=True)\ntime.sleep(600)")
    body = pod("stubborn", container(script), terminationGracePeriodSeconds=1)
    body["metadata"]["finalizers"] = ["example.com/hold"]
    processes.create(body)
    eventually(lambda: processes.started_log("stubborn") == "ready\n")
    processes.core.delete_namespaced_pod("stubborn", NS)
    eventually(lambda: "terminated" in processes.container("stubborn").get("state", {}))
    assert terminated(processes, "stubborn")["exitCode"] == 137
    assert processes.read("stubborn")["status"]["phase"] == "Failed"  # type: ignore[index]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_processes_reach_each_other_by_service_name(processes: Cluster) -> None:
    processes.core.create_namespaced_service(NS, {
        "metadata": {"name": "svc-a"},
        "spec": {"clusterIP": "None", "selector": {"app": "a"}, "ports": [{"port": 80}]},
    })
    port = _free_port()
    listener = (f"import socket\ns = socket.create_server(('127.0.0.1', {port}))\n"
                "print('listening', flush=True)\nconn, _ = s.accept()\n"
                "conn.sendall(b'hello from a')\nconn.close()")
    caller = ("import socket, time\nprint(socket.gethostbyname('svc-a'), flush=True)\n"
              "for _ in range(100):\n"
              "    try:\n"
              f"        c = socket.create_connection(('svc-a.default.svc.cluster.local', {port}))\n"
              "        break\n"
              "    except OSError:\n"
              "        time.sleep(0.1)\n"
              "print(c.recv(100).decode(), flush=True)")
    processes.create(pod("a", container(listener)))
    eventually(lambda: processes.started_log("a") == "listening\n")
    processes.create(pod("b", container(caller)))
    status = processes.wait_phase("b", "Succeeded", "Failed")["status"]
    assert (status["phase"], processes.log("b")) == ("Succeeded", "127.0.0.1\nhello from a\n")
    assert processes.wait_phase("a", "Succeeded", "Failed")["status"]["phase"] == "Succeeded"


def test_a_process_resolves_a_pod_of_its_headless_service_made_after_it_started(
        processes: Cluster) -> None:
    """Cluster DNS answers HOST.SUBDOMAIN for a pod a headless Service selects, whenever it
    is made: a JobSet's worker that starts before its leader's pod exists (here `early`)
    finds the leader (`late`) once the leader's process starts."""
    processes.core.create_namespaced_service(NS, {
        "metadata": {"name": "peers"},
        "spec": {"clusterIP": "None", "selector": {"group": "peers"}},
    })
    seeker = ("import socket, time\nprint('seeking', flush=True)\n"
              "for _ in range(600):\n"
              "    try:\n"
              "        print(socket.gethostbyname('late.peers.default.svc'), flush=True)\n"
              "        break\n"
              "    except OSError:\n"
              "        time.sleep(0.1)\n")
    early = pod("early", container(seeker), hostname="early", subdomain="peers")
    early["metadata"]["labels"] = {"group": "peers"}
    processes.create(early)
    eventually(lambda: processes.started_log("early") == "seeking\n")
    late = pod("late", container("print('here')"), hostname="late", subdomain="peers")
    late["metadata"]["labels"] = {"group": "peers"}
    processes.create(late)
    status = processes.wait_phase("early", "Succeeded", "Failed")["status"]
    assert (status["phase"], processes.log("early")) == ("Succeeded", "seeking\n127.0.0.1\n")


def test_a_restarted_node_reports_lost_processes_and_applies_the_restart_policy(
        processes: Cluster) -> None:
    long_running = "import time; print('up', flush=True); time.sleep(600)"
    processes.create(pod("lost", container(long_running)))
    processes.create(pod("again", container(long_running), restart_policy="Always"))
    eventually(lambda: processes.started_log("lost") == "up\n"
               and processes.started_log("again") == "up\n")
    processes.node.stop()
    with running_node(processes.server, mode="process", state_dir=processes.state_dir):
        status = processes.wait_phase("lost", "Failed")["status"]
        ended = status["containerStatuses"][0]["state"]["terminated"]
        assert (ended["exitCode"], ended["reason"]) == (137, "NodeRestarted")
        restarted = eventually(lambda: processes.container("again").get("restartCount") == 1
                               and "running" in processes.container("again")["state"]
                               and processes.container("again"))
        assert restarted["lastState"]["terminated"]["reason"] == "NodeRestarted"
        eventually(lambda: processes.started_log("again") == "up\n")
