"""Simulated pods: the node registers, binds and runs pods from their annotations alone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.node import LocalNode, RestartBackoff, running_node
from tests.integration.node.conftest import NS, Cluster, pod, story
from tests.polling import eventually

FAST = {"sim.jobmachine.dev/run-seconds": "0.05"}


def sim(name: str, codes: str | None = None, restart_policy: str = "Never",
        **annotations: str) -> dict[str, Any]:
    notes = {**FAST, **annotations}
    if codes is not None:
        notes["sim.jobmachine.dev/exit-codes"] = codes
    return pod(name, annotations=notes, restart_policy=restart_policy)


def test_the_node_registers_ready(simulated: Cluster) -> None:
    node = simulated.api.sanitize_for_serialization(simulated.core.read_node("jobmachine-local"))
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]
    assert set(node["status"]["allocatable"]) >= {"cpu", "memory", "pods"}
    assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.")


def test_a_pod_that_succeeds(simulated: Cluster) -> None:
    simulated.create(sim("ok"))
    done = simulated.wait_phase("ok", "Succeeded", "Failed")
    assert done["spec"]["nodeName"] == "jobmachine-local"
    status = done["status"]
    assert (status["phase"], status["podIP"], status["hostIP"]) == (
        "Succeeded", "127.0.0.1", "127.0.0.1")
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodScheduled": "True", "Initialized": "True",
                          "ContainersReady": "False", "Ready": "False"}
    assert simulated.log("ok") == "simulated attempt 1: exit code 0 after 0.05s\n"
    image_events = [e for e in simulated.events("ok") if e.reason == "ImageIgnored"]
    assert len(image_events) == 1
    assert image_events[0].source.component == "jobmachine-node"
    assert "busybox" in image_events[0].message


def test_a_pod_that_fails_under_never(simulated: Cluster) -> None:
    simulated.create(sim("bad", "1"))
    status = simulated.wait_phase("bad", "Succeeded", "Failed")["status"]
    assert status["phase"] == "Failed"
    container = status["containerStatuses"][0]
    assert container["state"]["terminated"]["exitCode"] == 1
    assert container["state"]["terminated"]["reason"] == "Error"
    assert container["restartCount"] == 0


def done(version: dict[str, Any]) -> bool:
    return (version.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def test_on_failure_restarts_in_place_through_the_annotated_sequence(simulated: Cluster) -> None:
    """exits 1, 1, 1, then 0 -> restarted at once, then after 0.5 s and 1 s of CrashLoopBackOff
    (the kubelet's rules on FAST_BACKOFF); the pod is Running throughout, then Succeeded."""
    created = simulated.create(sim("flaky", "1,1,1,0", restart_policy="OnFailure"))
    uid = created["metadata"]["uid"]
    versions = simulated.history("flaky", created["metadata"]["resourceVersion"], done)
    assert story(versions) == [
        ("Running", "running", 0), ("Running", "running", 1),
        ("Running", "CrashLoopBackOff", 1), ("Running", "running", 2),
        ("Running", "CrashLoopBackOff", 2), ("Running", "running", 3),
        ("Succeeded", "Completed", 3)]
    waits = [c["state"]["waiting"]["message"] for v in versions
             for c in v["status"].get("containerStatuses") or () if "waiting" in c["state"]]
    assert sorted(set(waits)) == [
        f"back-off 1s restarting failed container=main pod=flaky_default({uid})",
        f"back-off 500ms restarting failed container=main pod=flaky_default({uid})"]
    container = versions[-1]["status"]["containerStatuses"][0]
    assert container["lastState"]["terminated"]["exitCode"] == 1
    assert simulated.log("flaky", previous=True).startswith("simulated attempt 3: exit code 1")
    assert simulated.log("flaky").startswith("simulated attempt 4: exit code 0")
    counted = {(e.reason, e.type): e.count for e in simulated.events("flaky")}
    assert counted == {("Scheduled", "Normal"): 1, ("ImageIgnored", "Normal"): 1,
                       ("Created", "Normal"): 4,
                       ("Started", "Normal"): 4, ("BackOff", "Warning"): 2}


def test_logs_while_backing_off_are_the_failed_attempts_as_for_the_kubelet(
        server: Any, api: client.ApiClient, tmp_path: Any) -> None:
    """While a container waits to restart, both `logs` and `logs --previous` show the attempt
    that just failed; once it runs again, `--previous` does. A container never restarted has
    no previous attempt: the kubelet's error."""
    core = client.CoreV1Api(api)
    slow = RestartBackoff(initial_s=3.0, max_s=3.0)
    with running_node(server, mode="simulate", state_dir=tmp_path / "node",
                      restart_backoff=slow) as node:
        cluster = Cluster(server, core, api, node, tmp_path / "node")
        cluster.create(sim("once", "0"))
        cluster.create(sim("crashy", "1,1,0", restart_policy="OnFailure"))
        cluster.wait_phase("once", "Succeeded")
        with pytest.raises(client.ApiException) as error:
            cluster.log("once", previous=True)
        assert error.value.status == 400
        assert json.loads(error.value.body)["message"] == (
            'previous terminated container "main" in pod "once" not found')
        eventually(lambda: "waiting" in cluster.container("crashy").get("state", {}))
        second = "simulated attempt 2: exit code 1 after 0.05s\n"
        assert (cluster.log("crashy"), cluster.log("crashy", previous=True)) == (second, second)
        cluster.wait_phase("crashy", "Succeeded")
        assert cluster.log("crashy", previous=True) == second
        assert cluster.log("crashy").startswith("simulated attempt 3: exit code 0")


def test_termination_messages_from_the_annotation_or_the_log(simulated: Cluster) -> None:
    said = sim("said", "1", **{"sim.jobmachine.dev/termination-message": "simulated bye"})
    fallback = pod("fallback", {"name": "main", "image": "x",
                                "terminationMessagePolicy": "FallbackToLogsOnError"},
                   annotations={**FAST, "sim.jobmachine.dev/exit-codes": "1"})
    for body in (said, fallback):
        simulated.create(body)
    messages = {}
    for name in ("said", "fallback"):
        status = simulated.wait_phase(name, "Failed")["status"]
        messages[name] = status["containerStatuses"][0]["state"]["terminated"]["message"]
    assert messages == {"said": "simulated bye",
                        "fallback": "simulated attempt 1: exit code 1 after 0.05s\n"}


def test_named_container_codes(simulated: Cluster) -> None:
    body = pod("two", {"name": "main", "image": "x"}, {"name": "side", "image": "x"},
               annotations={**FAST, "sim.jobmachine.dev/exit-codes.side": "3"})
    simulated.create(body)
    status = simulated.wait_phase("two", "Succeeded", "Failed")["status"]
    codes = {c["name"]: c["state"]["terminated"]["exitCode"] for c in status["containerStatuses"]}
    assert (status["phase"], codes) == ("Failed", {"main": 0, "side": 3})


def test_a_bad_annotation_fails_the_container_with_a_message(simulated: Cluster) -> None:
    simulated.create(sim("typo", "zero"))
    status = simulated.wait_phase("typo", "Succeeded", "Failed")["status"]
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert status["phase"] == "Failed"
    assert terminated["reason"] == "InvalidSimulation"
    assert '"zero" is not an exit code' in terminated["message"]
    warnings = [e for e in simulated.events("typo") if e.type == "Warning"]
    assert [e.reason for e in warnings] == ["InvalidSimulation"]


def test_attempts_count_across_recreations_with_the_same_owner(simulated: Cluster) -> None:
    owner = simulated.core.create_namespaced_config_map(
        NS, {"metadata": {"name": "owner"}}).metadata
    body = sim("replica-0", "137,0")
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "name": "owner", "uid": owner.uid,
                                            "controller": True}]
    simulated.create(body)
    first = simulated.wait_phase("replica-0", "Succeeded", "Failed")
    assert first["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    simulated.core.delete_namespaced_pod("replica-0", NS)
    eventually(lambda: simulated.read("replica-0") is None)
    simulated.create(body)
    second = simulated.wait_phase("replica-0", "Succeeded", "Failed")
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert second["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert simulated.log("replica-0") == "simulated attempt 2: exit code 0 after 0.05s\n"


def test_a_pod_without_owner_starts_over_when_recreated(simulated: Cluster) -> None:
    simulated.create(sim("bare", "5,0"))
    simulated.wait_phase("bare", "Failed")
    simulated.core.delete_namespaced_pod("bare", NS)
    eventually(lambda: simulated.read("bare") is None)
    simulated.create(sim("bare", "5,0"))
    assert simulated.wait_phase("bare", "Succeeded", "Failed")["status"]["phase"] == "Failed"


def test_deleting_a_running_pod_stops_it_and_confirms(simulated: Cluster) -> None:
    body = sim("long", **{"sim.jobmachine.dev/run-seconds": "600"})
    body["metadata"]["finalizers"] = ["example.com/hold"]
    simulated.create(body)
    eventually(lambda: "running" in simulated.container("long").get("state", {}))
    simulated.core.delete_namespaced_pod("long", NS)
    confirmed = eventually(lambda: (simulated.read("long") or {}).get("metadata", {}).get(
        "deletionGracePeriodSeconds") == 0 and simulated.read("long"))
    ended = confirmed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (confirmed["status"]["phase"], ended["exitCode"]) == ("Failed", 143)
    assert simulated.log("long").endswith("stopped by SIGTERM, exit code 143\n")
    simulated.core.patch_namespaced_pod("long", NS, {"metadata": {"finalizers": None}})
    eventually(lambda: simulated.read("long") is None)


def test_a_server_that_says_nothing_runs_until_it_is_deleted(simulated: Cluster) -> None:
    # restartPolicy Always and no simulation annotation: nginx of a Deployment, not a pod
    # that exits after 0.2 s into CrashLoopBackOff.
    simulated.create(pod("web", restart_policy="Always"))
    eventually(lambda: "running" in simulated.container("web").get("state", {}))
    assert simulated.log("web") == "simulated attempt 1: runs until stopped\n"
    assert simulated.container("web")["restartCount"] == 0
    simulated.core.delete_namespaced_pod("web", NS)
    eventually(lambda: simulated.read("web") is None)


def test_a_pod_another_writer_ended_stays_ended_and_its_container_stops(
    simulated: Cluster,
) -> None:
    """As the kubelet's status manager: a terminal phase is never moved back (here one the
    eviction API or a test wrote), and a later change to the pod writes nothing."""
    simulated.create(sim("evicted", restart_policy="OnFailure",
                         **{"sim.jobmachine.dev/run-seconds": "600"}))
    running = eventually(lambda: "running" in simulated.container("evicted").get("state", {})
                         and simulated.read("evicted"))
    [main] = running["status"]["containerStatuses"]
    ended = {"terminated": {"exitCode": 137, "reason": "Error",
                            "startedAt": main["state"]["running"]["startedAt"]}}
    simulated.core.patch_namespaced_pod_status("evicted", NS, {"status": {
        "phase": "Failed",
        "conditions": [{"type": "DisruptionTarget", "status": "True",
                        "reason": "EvictionByEvictionAPI"}],
        "containerStatuses": [{**main, "ready": False, "state": ended}],
    }})
    eventually(lambda: "stopped by" in simulated.log("evicted"))
    simulated.core.patch_namespaced_pod("evicted", NS, {"metadata": {"labels": {"seen": "yes"}}})
    assert simulated.wait_phase("evicted", "Failed")["status"]["containerStatuses"][0]["state"] \
        == ended


def test_a_restarted_node_continues_the_sequence_and_restarts_running_timers(
        simulated: Cluster) -> None:
    simulated.create(sim("resumed", "2,0", restart_policy="OnFailure",
                         **{"sim.jobmachine.dev/run-seconds": "1"}))
    eventually(lambda: simulated.container("resumed").get("restartCount") == 1
               and "running" in simulated.container("resumed")["state"])
    simulated.node.stop()
    with running_node(simulated.server, mode="simulate", state_dir=simulated.state_dir):
        status = simulated.wait_phase("resumed", "Succeeded", "Failed")["status"]
    container = status["containerStatuses"][0]
    assert (status["phase"], container["restartCount"]) == ("Succeeded", 1)
    assert "timer restarted by a node restart" in simulated.log("resumed")


def test_unbound_pods_are_bound_even_when_created_before_the_node(
        server: Any, api: client.ApiClient, tmp_path: Any) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(NS, sim("early"))
    with running_node(server, mode="simulate", state_dir=tmp_path / "node"):
        eventually(lambda: core.read_namespaced_pod("early", NS).status.phase == "Succeeded")


def test_heartbeats_refresh_the_ready_condition_and_the_node_lease(
        server: Any, api: client.ApiClient, tmp_path: Any) -> None:
    core = client.CoreV1Api(api)
    node = LocalNode(url=server.url, token=server.token, ca_file=server.ca_file,
                     logs_dir=server.logs_dir, state_dir=tmp_path / "node", mode="simulate",
                     name="beating", heartbeat_s=0.3)

    def heartbeat() -> str:
        conditions = core.read_node("beating").status.conditions
        return str(next(c for c in conditions if c.type == "Ready").last_heartbeat_time)

    def renewed() -> str:
        return str(leases.read_namespaced_lease("beating", "kube-node-lease").spec.renew_time)

    leases = client.CoordinationV1Api(api)
    node.start()
    try:
        first, first_renewal = heartbeat(), renewed()
        eventually(lambda: heartbeat() != first, timeout=10)
        eventually(lambda: renewed() != first_renewal, timeout=10)
        lease = leases.read_namespaced_lease("beating", "kube-node-lease")
        assert (lease.spec.holder_identity, lease.spec.lease_duration_seconds) == ("beating", 40)
        (owner,) = lease.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid) == (
            "Node", "beating", core.read_node("beating").metadata.uid)
    finally:
        node.stop()
