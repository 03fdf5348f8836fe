"""A status write whose answer is lost (the connection broke after the server made it) still
gets the Events of its state changes.

The engine posts a state change's Event after the status write that records it. When the
answer to that write is lost, the engine cannot tell whether it landed; if it did, the
state change is never made again, so its Event would never be posted. Here every status
write's answer is dropped after the server made the write.
"""

from __future__ import annotations

from engine.cluster.apiserver.endpoints.faults import FaultInjector, FaultPlan, FaultRule
from engine.cluster.apiserver.endpoints.serve import ServerOptions
from engine.kube.client import KubeClient
from engine.kube.resources import EVENTS
from tests.integration.engine.helpers import (
    FAST,
    PYTORCHJOBS,
    Replica,
    new_namespace,
    pytorchjob,
    running_engineless,
    start_engine,
    wait_for_phase,
    wait_until,
)


def test_every_state_change_gets_its_event_though_every_status_answer_is_lost() -> None:
    lost = FaultInjector(FaultPlan((FaultRule("drop", stage="after", verbs=("update",),
                                              resources=("pytorchjobs/status",)),), seed=1))
    with running_engineless(ServerOptions(faults=lost)) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig)
        run = start_engine(KubeClient.from_kubeconfig(server.kubeconfig), FAST)
        try:
            ns = new_namespace(client)
            job = client.create(PYTORCHJOBS, pytorchjob("lost", ns, workers=Replica(codes="0")),
                                ns)
            wait_for_phase(client, ns, "lost", "Succeeded", timeout=30)
            # As Kubeflow, the job's creation and start post no Event (its conditions say them).
            expected = ["Started", "ExitedWithCode", "PyTorchJobSucceeded"]

            def reasons() -> list[str]:
                events, _ = client.list(EVENTS, ns)
                return sorted(e["reason"] for e in events
                              if e["involvedObject"].get("uid") == job["metadata"]["uid"])

            wait_until(lambda: reasons() == sorted(expected),
                       what=f"one event per state change (got {reasons()})")
            assert sum(lost.injected.values()) >= 3
        finally:
            run.stop()
            client.close()
