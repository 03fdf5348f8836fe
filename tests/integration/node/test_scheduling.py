"""The local node as kube-scheduler: pods are bound only as they fit the node's capacity.

A pod that does not fit stays Pending with PodScheduled=False (Unschedulable, kube-scheduler's
message) and one FailedScheduling event, and is bound when a bound pod ends; gangs (Volcano's
and scheduler-plugins' PodGroups) are bound all together or not at all.

Pods that must hold their place until the test says so read a ConfigMap (a "gate") that does
not exist yet: the node binds them and their container waits for it, as the kubelet's does;
creating the ConfigMap lets them run and end. So every wait below is a wait for a state, never
for time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from loguru import logger

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import Capacity, running_node
from engine.cluster.node.scheduling.scheduler import LocalScheduler
from engine.controller.machines.install import crd_resources, install_crds, wait_until_served
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from tests.integration.node.conftest import FAST_BACKOFF, NS, Cluster
from tests.polling import eventually

PODGROUP_CRDS = Path(__file__).resolve().parents[3] / "crds" / "podgroups"
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
PLUGINS = ("scheduling.x-k8s.io", "v1alpha1")
NODE = "jobmachine-local"
NO_VICTIMS = "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
WAIT = 60.0


def unschedulable(*reasons: str) -> str:
    """kube-scheduler's message for a pod the only node cannot take."""
    return f"0/1 nodes are available: {', '.join(reasons)}. {NO_VICTIMS}"


# -- the cluster ---------------------------------------------------------------------------


@contextmanager
def node_offering(server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
                  capacity: str) -> Iterator[Cluster]:
    """A simulate-mode node with `capacity` (as `up --node-capacity` takes it)."""
    state_dir = tmp_path / "node"
    with running_node(server, mode="simulate", state_dir=state_dir,
                      restart_backoff=FAST_BACKOFF, capacity=Capacity.parse(capacity)) as node:
        yield Cluster(server, client.CoreV1Api(api), api, node, state_dir)


@pytest.fixture
def podgroup_crds(server: RunningApiServer) -> None:
    """Both PodGroup CRDs, served before the node starts (it looks for them when it starts)."""
    kube = KubeClient.from_kubeconfig(server.kubeconfig)
    try:
        install_crds(kube, PODGROUP_CRDS)
        wait_until_served(kube, crd_resources(PODGROUP_CRDS))
    finally:
        kube.close()


# -- pods, gates, PodGroups ------------------------------------------------------------------


def sim_pod(name: str, *, requests: dict[str, str] | None = None,
            limits: dict[str, str] | None = None, gate: str | None = None,
            run_seconds: str = "0.05", annotations: dict[str, str] | None = None,
            labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A simulated pod of one container asking `requests`/`limits`; with `gate`, its container
    waits for the ConfigMap of that name."""
    container: dict[str, Any] = {"name": "main", "image": "busybox"}
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    if resources:
        container["resources"] = resources
    if gate:
        container["envFrom"] = [{"configMapRef": {"name": gate}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels or {},
            "annotations": {"sim.jobmachine.dev/run-seconds": run_seconds,
                            **(annotations or {})},
        },
        "spec": {"restartPolicy": "Never", "containers": [container], **spec},
    }


def open_gate(cluster: Cluster, gate: str) -> None:
    cluster.core.create_namespaced_config_map(
        NS, {"metadata": {"name": gate}, "data": {"GO": "1"}})


def node_of(cluster: Cluster, name: str) -> str | None:
    found = cluster.read(name) or {}
    node: str | None = (found.get("spec") or {}).get("nodeName")
    return node


def wait_bound(cluster: Cluster, name: str) -> dict[str, Any]:
    def bound() -> dict[str, Any] | None:
        found = cluster.read(name)
        return found if found and found["spec"].get("nodeName") else None

    result: dict[str, Any] = eventually(bound, timeout=WAIT)
    return result


def pod_scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's PodScheduled condition, without its transition time."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition["type"] == "PodScheduled":
            return {k: v for k, v in condition.items() if k != "lastTransitionTime"}
    return None


def wait_refused(cluster: Cluster, name: str, message: str | None = None) -> dict[str, Any]:
    """The pod once its PodScheduled condition says it waits (with `message`, if given)."""
    def refused() -> dict[str, Any] | None:
        found = cluster.read(name)
        condition = pod_scheduled(found) if found else None
        if condition is None or condition["status"] != "False":
            return None
        return found if message is None or condition["message"] == message else None

    result: dict[str, Any] = eventually(refused, timeout=WAIT)
    return result


def waiting_condition(message: str) -> dict[str, Any]:
    """(lastProbeTime is null, which the client leaves out.)"""
    return {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message}


def scheduler_events(cluster: Cluster, name: str) -> list[tuple[str, str, str, int]]:
    """(type, reason, message, count) of the pod's events from default-scheduler, sorted (a
    list of events comes in the order of their names)."""
    return sorted((e.type, e.reason, e.message, e.count) for e in cluster.events(name)
                  if e.source.component == "default-scheduler")


def assigned(name: str) -> tuple[str, str, str, int]:
    return ("Normal", "Scheduled", f"Successfully assigned {NS}/{name} to {NODE}", 1)


def create_group(cluster: Cluster, api_version: tuple[str, str], name: str, min_member: int
                 ) -> None:
    group, version = api_version
    body = {"apiVersion": f"{group}/{version}", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": {"minMember": min_member}}
    client.CustomObjectsApi(cluster.api).create_namespaced_custom_object(
        group, version, NS, "podgroups", body)


def group_status(cluster: Cluster, api_version: tuple[str, str], name: str) -> dict[str, Any]:
    """The PodGroup's status; {} while it has none, or does not exist yet."""
    group, version = api_version
    try:
        found = client.CustomObjectsApi(cluster.api).get_namespaced_custom_object(
            group, version, NS, "podgroups", name)
    except client.ApiException as exc:
        if exc.status == 404:
            return {}
        raise
    status: dict[str, Any] = found.get("status") or {}
    return status


def wait_group(cluster: Cluster, api_version: tuple[str, str], name: str,
               holds: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        status = group_status(cluster, api_version, name)
        return status if holds(status) else None

    result: dict[str, Any] = eventually(reached, timeout=WAIT)
    return result


def condition_of(status: dict[str, Any]) -> tuple[str, str, str] | None:
    """(type, reason, message) of a Volcano PodGroup's only condition."""
    conditions = status.get("conditions") or []
    if not conditions:
        return None
    (only,) = conditions
    return only["type"], only["reason"], only["message"]


def list_version(lister: Callable[..., Any], *args: str) -> str:
    listed = lister(*args)
    metadata = listed["metadata"] if isinstance(listed, dict) else listed.metadata
    version: str = metadata["resourceVersion"] if isinstance(metadata, dict) \
        else metadata.resource_version
    return version


def replay(cluster: Cluster, lister: Callable[..., Any], *args: str, since: str
           ) -> list[dict[str, Any]]:
    """Every version of the listed objects written after `since`, in the server's order, up
    to the versions a list shows now (the server keeps the watch history this needs)."""
    now = cluster.api.sanitize_for_serialization(lister(*args))
    final = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in now["items"]}
    latest: dict[str, str] = {}
    seen: list[dict[str, Any]] = []
    stream = watch.Watch()
    for event in stream.stream(lister, *args, resource_version=since, timeout_seconds=30):
        version = cluster.api.sanitize_for_serialization(event["object"])
        seen.append(version)
        latest[version["metadata"]["name"]] = version["metadata"]["resourceVersion"]
        if latest.items() >= final.items():
            stream.stop()
            return seen
    raise AssertionError(f"the watch did not replay up to {final}; saw up to {latest}")


def ended(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


# -- pods on their own -----------------------------------------------------------------------


def test_a_pod_that_does_not_fit_waits_with_kube_schedulers_words_until_room_frees(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path) -> None:
    """cpu=2: `first` (1500m) is bound; `second` (1 cpu) waits with PodScheduled=False and one
    FailedScheduling event; once `first` has succeeded, `second` is bound and runs."""
    with node_offering(server, api, tmp_path, "cpu=2,memory=1Gi") as cluster:
        cluster.create(sim_pod("first", requests={"cpu": "1500m"}, gate="first-may-end"))
        wait_bound(cluster, "first")
        cluster.create(sim_pod("second", requests={"cpu": "1"}))
        message = ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                   "available: 1 No preemption victims found for incoming pod.")
        waiting = wait_refused(cluster, "second")
        assert pod_scheduled(waiting) == waiting_condition(message)
        assert (waiting["status"]["phase"], waiting["spec"].get("nodeName")) == ("Pending", None)
        assert scheduler_events(cluster, "first") == [assigned("first")]

        open_gate(cluster, "first-may-end")
        wait_bound(cluster, "second")
        assert (cluster.read("first") or {})["status"]["phase"] == "Succeeded"
        done = cluster.wait_phase("second", "Succeeded", "Failed", timeout=WAIT)
        assert done["status"]["phase"] == "Succeeded"
        assert done["spec"]["nodeName"] == NODE
        assert (pod_scheduled(done) or {}).get("status") == "True"
        terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert scheduler_events(cluster, "second") == [
            assigned("second"), ("Warning", "FailedScheduling", message, 1)]


def test_limits_count_as_requests_where_requests_are_absent(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path) -> None:
    """cpu=2, memory=1Gi: limits of 1 cpu and 512Mi run; limits of 3 cpu and 2Gi wait."""
    with node_offering(server, api, tmp_path, "cpu=2,memory=1Gi") as cluster:
        cluster.create(sim_pod("greedy", limits={"cpu": "3", "memory": "2Gi"}))
        cluster.create(sim_pod("modest", limits={"cpu": "1", "memory": "512Mi"}))
        message = unschedulable("1 Insufficient cpu", "1 Insufficient memory")
        waiting = wait_refused(cluster, "greedy")
        assert pod_scheduled(waiting) == waiting_condition(message)
        assert cluster.wait_phase("modest", "Succeeded", "Failed")["status"]["phase"] == \
            "Succeeded"
        assert node_of(cluster, "greedy") is None
        assert scheduler_events(cluster, "greedy") == [
            ("Warning", "FailedScheduling", message, 1)]


def test_a_gpu_pod_waits_for_a_node_that_offers_gpus(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path) -> None:
    """Without nvidia.com/gpu the pod waits ("1 Insufficient nvidia.com/gpu"); the node
    started again with nvidia.com/gpu=1 binds and runs it."""
    gpu = {"nvidia.com/gpu": "1"}
    with node_offering(server, api, tmp_path, "cpu=2,memory=1Gi") as cluster:
        cluster.create(sim_pod("trainer", requests=gpu, limits=gpu))
        waiting = wait_refused(cluster, "trainer")
        assert pod_scheduled(waiting) == waiting_condition(
            unschedulable("1 Insufficient nvidia.com/gpu"))
    with node_offering(server, api, tmp_path, "cpu=2,memory=1Gi,nvidia.com/gpu=1") as cluster:
        node = cluster.core.read_node(NODE)
        assert (node.status.capacity["nvidia.com/gpu"],
                node.status.allocatable["nvidia.com/gpu"]) == ("1", "1")
        done = cluster.wait_phase("trainer", "Succeeded", "Failed", timeout=WAIT)
        assert (done["status"]["phase"], done["spec"]["nodeName"]) == ("Succeeded", NODE)


def test_too_many_pods_when_the_node_takes_one(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path) -> None:
    with node_offering(server, api, tmp_path, "pods=1") as cluster:
        cluster.create(sim_pod("holder", gate="holder-may-end"))
        wait_bound(cluster, "holder")
        cluster.create(sim_pod("extra"))
        waiting = wait_refused(cluster, "extra")
        assert pod_scheduled(waiting) == waiting_condition(unschedulable("1 Too many pods"))
        open_gate(cluster, "holder-may-end")
        done = cluster.wait_phase("extra", "Succeeded", "Failed", timeout=WAIT)
        assert done["status"]["phase"] == "Succeeded"


def create_priority_class_high(api: client.ApiClient) -> None:
    """PriorityClass `high` (1000); skips the test where the server does not serve them."""
    try:
        client.SchedulingV1Api(api).create_priority_class(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": "high"}, "value": 1000})
    except client.ApiException as exc:
        if exc.status == 404:
            pytest.skip("the embedded API server does not serve scheduling.k8s.io/v1 "
                        "PriorityClass")
        raise


def low_and_high_wait_behind_a_holder(cluster: Cluster) -> dict[str, Any]:
    """Room for one pod, taken by `holder` (until its gate opens); `a-low` (priority 0)
    waits, then `b-high` (PriorityClass high) does, its gate closed. The holder."""
    holder = cluster.create(sim_pod("holder", requests={"cpu": "1"}, gate="holder-may-end"))
    wait_bound(cluster, "holder")
    cluster.create(sim_pod("a-low", requests={"cpu": "1"}))
    wait_refused(cluster, "a-low")
    high = cluster.create(sim_pod("b-high", requests={"cpu": "1"}, gate="high-may-end",
                                  priorityClassName="high"))
    assert high["spec"]["priority"] == 1000
    wait_refused(cluster, "b-high")
    return holder


def first_bound_of_low_and_high(cluster: Cluster) -> list[str]:
    return eventually(lambda: [n for n in ("a-low", "b-high") if node_of(cluster, n)],
                      timeout=WAIT)


def test_a_higher_priority_pod_is_bound_before_an_older_lower_priority_one(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path) -> None:
    """When `holder` ends, `b-high` is bound first although it is younger than `a-low` (and
    its name sorts later); `a-low` once `b-high` has ended."""
    create_priority_class_high(api)
    with node_offering(server, api, tmp_path, "cpu=1,memory=1Gi") as cluster:
        low_and_high_wait_behind_a_holder(cluster)
        open_gate(cluster, "holder-may-end")
        assert first_bound_of_low_and_high(cluster) == ["b-high"]
        open_gate(cluster, "high-may-end")
        for name in ("b-high", "a-low"):
            assert cluster.wait_phase(name, "Succeeded", "Failed", timeout=WAIT)["status"][
                "phase"] == "Succeeded"


def test_room_freed_during_a_pass_still_goes_to_the_higher_priority_pod(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The holder may end while a scheduling pass runs (the periodic one, every few seconds):
    after `b-high` was found not to fit and before `a-low` is looked at. Made certain here:
    the pass's refusal of `b-high` waits until the node has seen the holder end. The room
    must still go to `b-high` (highest priority first); kube-scheduler would at least preempt
    `a-low` for it (PreemptLowerPriority), which the local node does not do."""
    create_priority_class_high(api)
    armed, released = threading.Event(), threading.Event()
    holder_uid: list[str] = []
    plain_refuse, plain_release = LocalScheduler._refuse, LocalScheduler._release

    def release(self: LocalScheduler, uid: str) -> bool:
        freed = plain_release(self, uid)
        if freed and uid in holder_uid:
            released.set()
        return freed

    def refuse(self: LocalScheduler, pod: dict[str, Any], message: str) -> None:
        if pod["metadata"]["name"] == "b-high" and armed.is_set():
            armed.clear()
            open_gate(cluster, "holder-may-end")
            assert released.wait(WAIT), "the node never saw the holder end"
        plain_refuse(self, pod, message)

    monkeypatch.setattr(LocalScheduler, "_release", release)
    monkeypatch.setattr(LocalScheduler, "_refuse", refuse)
    with node_offering(server, api, tmp_path, "cpu=1,memory=1Gi") as cluster:
        holder = low_and_high_wait_behind_a_holder(cluster)
        holder_uid.append(holder["metadata"]["uid"])
        armed.set()
        assert first_bound_of_low_and_high(cluster) == ["b-high"]


# -- gangs ----------------------------------------------------------------------------------


def gang_pod(gang: str, index: int, gate: str, **extra: Any) -> dict[str, Any]:
    """A Volcano gang member asking 1 cpu."""
    return sim_pod(f"{gang}-{index}", requests={"cpu": "1"}, gate=gate,
                   annotations={"scheduling.k8s.io/group-name": gang},
                   schedulerName="volcano", **extra)


def check_gang_bindings(versions: list[dict[str, Any]], cpus: int) -> list[str]:
    """Walk the pods' versions in the server's order and check, at every step, that the pods
    bound and not ended need no more than `cpus` (1 each); the gangs in the order their pods
    were bound, one entry per binding.

    Binding is one call per pod, as for kube-scheduler, so a gang is partly bound for the
    moment between its members' bindings; that no gang is ever left so shows as each gang's
    bindings following one another with no other gang's in between."""
    bound: dict[str, str] = {}
    finished: set[str] = set()
    order: list[str] = []
    for version in versions:
        name = version["metadata"]["name"]
        gang = version["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        if version["spec"].get("nodeName") and name not in bound:
            bound[name] = gang
            order.append(gang)
        if ended(version):
            finished.add(name)
        live = {n: g for n, g in bound.items() if n not in finished}
        assert len(live) <= cpus, f"more pods bound than the node holds: {sorted(live)}"
    return order


@pytest.mark.slow
def test_two_gangs_that_each_fit_alone_run_one_after_the_other(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
        podgroup_crds: None) -> None:
    """cpu=4; gangs `ga` and `gb`, minMember 3, three 1-cpu pods each: one gang is bound whole,
    the other waits whole (PodGroup Unschedulable, NotEnoughResources) until the first has
    ended, then is bound whole; each PodGroup goes Pending, Running, Completed."""
    with node_offering(server, api, tmp_path, "cpu=4,memory=4Gi") as cluster:
        pods_since = list_version(cluster.core.list_namespaced_pod, NS)
        custom = client.CustomObjectsApi(api)
        group_args = (*VOLCANO, NS, "podgroups")
        groups_since = list_version(custom.list_namespaced_custom_object, *group_args)
        for gang in ("ga", "gb"):
            create_group(cluster, VOLCANO, gang, 3)
        for gang in ("ga", "gb"):
            for index in range(3):
                cluster.create(gang_pod(gang, index, gate=f"{gang}-may-end"))

        def bound_gangs() -> list[str]:
            return [g for g in ("ga", "gb")
                    if all(node_of(cluster, f"{g}-{i}") for i in range(3))]

        (first,) = eventually(bound_gangs, timeout=WAIT)
        (second,) = {"ga", "gb"} - {first}
        message = (f"pod group {second}: 3 pods must be bound together to reach minMember 3; "
                   + unschedulable("1 Insufficient cpu"))
        # (NotEnoughTasks first, while some of its pods were not created yet)
        waiting = wait_group(cluster, VOLCANO, second,
                             lambda s: (condition_of(s) or ("", ""))[1] == "NotEnoughResources")
        assert (waiting["phase"], condition_of(waiting)) == (
            "Pending", ("Unschedulable", "NotEnoughResources", message))
        for index in range(3):
            refused = wait_refused(cluster, f"{second}-{index}", message)
            assert pod_scheduled(refused) == waiting_condition(message)
        running = wait_group(cluster, VOLCANO, first, lambda s: s.get("phase") == "Running")
        assert condition_of(running) == (
            "Scheduled", "tasks in gang are ready to be scheduled", "")
        assert not any(node_of(cluster, f"{second}-{i}") for i in range(3))

        open_gate(cluster, f"{first}-may-end")
        wait_group(cluster, VOLCANO, first, lambda s: s.get("phase") == "Completed")
        running = wait_group(cluster, VOLCANO, second, lambda s: s.get("phase") == "Running")
        assert condition_of(running) == (
            "Scheduled", "tasks in gang are ready to be scheduled", "")
        open_gate(cluster, f"{second}-may-end")
        done = wait_group(cluster, VOLCANO, second, lambda s: s.get("phase") == "Completed")
        assert (done["running"], done["succeeded"], done["failed"]) == (0, 3, 0)

        pods = replay(cluster, cluster.core.list_namespaced_pod, NS, since=pods_since)
        assert check_gang_bindings(pods, cpus=4) == [first] * 3 + [second] * 3
        groups = replay(cluster, custom.list_namespaced_custom_object, *group_args,
                        since=groups_since)
        for gang in (first, second):
            phases = [g["status"]["phase"] for g in groups
                      if g["metadata"]["name"] == gang and "phase" in (g.get("status") or {})]
            assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == [
                "Pending", "Running", "Completed"], (gang, phases)


def test_a_gang_bigger_than_the_node_never_fits(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
        podgroup_crds: None) -> None:
    """cpu=2, minMember 3 of 1 cpu each: the PodGroup says NeverFits; no pod is bound."""
    with node_offering(server, api, tmp_path, "cpu=2,memory=1Gi") as cluster:
        create_group(cluster, VOLCANO, "big", 3)
        for index in range(3):
            cluster.create(gang_pod("big", index, gate="never-opened"))
        status = wait_group(cluster, VOLCANO, "big",
                            lambda s: (condition_of(s) or ("", ""))[1] == "NeverFits")
        message = ("pod group big: 3 pods must be bound together to reach minMember 3, more "
                   "than the node can ever hold; " + unschedulable("1 Insufficient cpu"))
        assert (status["phase"], condition_of(status)) == (
            "Pending", ("Unschedulable", "NeverFits", message))
        for index in range(3):
            refused = wait_refused(cluster, f"big-{index}", message)
            assert refused["spec"].get("nodeName") is None


def test_a_scheduler_plugins_gang_is_bound_together(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
        podgroup_crds: None) -> None:
    """minMember 2 (label scheduling.x-k8s.io/pod-group): the first pod alone waits for the
    second; both are then bound; the PodGroup goes Pending, Scheduling (bound, not yet
    running), Running, Finished."""
    label = {"scheduling.x-k8s.io/pod-group": "pair"}
    custom = client.CustomObjectsApi(api)
    group_args = (*PLUGINS, NS, "podgroups")
    with node_offering(server, api, tmp_path, "cpu=4,memory=4Gi") as cluster:
        since = list_version(custom.list_namespaced_custom_object, *group_args)
        create_group(cluster, PLUGINS, "pair", 2)
        cluster.create(sim_pod("pair-0", requests={"cpu": "1"}, gate="pair-may-end",
                               labels=label, run_seconds="2"))
        waiting = wait_refused(cluster, "pair-0")
        assert pod_scheduled(waiting) == waiting_condition(
            "pod group pair is not ready: 1 of its 2 pods (minMember) exist; waiting for the "
            "rest")
        cluster.create(sim_pod("pair-1", requests={"cpu": "1"}, gate="pair-may-end",
                               labels=label, run_seconds="2"))
        for name in ("pair-0", "pair-1"):
            wait_bound(cluster, name)
        scheduling = wait_group(cluster, PLUGINS, "pair", lambda s: s.get("phase") == "Scheduling")
        assert (scheduling["running"], scheduling["succeeded"], scheduling["failed"]) == (0, 0, 0)
        open_gate(cluster, "pair-may-end")
        done = wait_group(cluster, PLUGINS, "pair", lambda s: s.get("phase") == "Finished")
        assert (done["running"], done["succeeded"], done["failed"]) == (0, 2, 0)
        groups = replay(cluster, custom.list_namespaced_custom_object, *group_args, since=since)
        phases = [g["status"]["phase"] for g in groups if "phase" in (g.get("status") or {})]
        assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == [
            "Pending", "Scheduling", "Running", "Finished"], phases


def test_a_podgroup_created_while_the_scheduler_writes_statuses_breaks_no_pass(
        server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
        podgroup_crds: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The PodGroup watch may deliver a new group while a scheduling pass is writing another
    group's status (seen in the two-gangs test now and then). Made certain here: the write of
    `early`'s status waits until the watch has delivered `late`. Every PodGroup's status is
    still written, and no pass fails."""
    late_seen = threading.Event()
    created: list[str] = []
    plain_on_group = LocalScheduler._on_group
    plain_patch = KubeClient.patch

    def on_group(self: LocalScheduler, flavour: Any, kind: str, group: dict[str, Any]) -> None:
        plain_on_group(self, flavour, kind, group)
        if group["metadata"]["name"] == "late":
            late_seen.set()

    def patch(self: KubeClient, res: Resource, name: str, body: Any, **options: Any) -> Any:
        result = plain_patch(self, res, name, body, **options)
        path = res.path(options.get("namespace"), name, options.get("subresource"))
        if path.endswith("/podgroups/early/status") and not created:
            created.append("late")
            create_group(cluster, VOLCANO, "late", 1)
            assert late_seen.wait(WAIT), "the node's PodGroup watch never delivered `late`"
        return result

    monkeypatch.setattr(LocalScheduler, "_on_group", on_group)
    monkeypatch.setattr(KubeClient, "patch", patch)
    errors: list[str] = []
    sink = logger.add(lambda message: errors.append(str(message)), level="ERROR")
    try:
        with node_offering(server, api, tmp_path, "cpu=1,memory=1Gi") as cluster:
            create_group(cluster, VOLCANO, "early", 1)
            for name in ("early", "late"):
                wait_group(cluster, VOLCANO, name, lambda s: s.get("phase") == "Pending")
    finally:
        logger.remove(sink)
    assert errors == [], "".join(errors)
