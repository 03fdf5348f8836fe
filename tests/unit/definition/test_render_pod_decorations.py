"""What `spec.pod` gives one replica's pod (rendering.render_pod_decorations): env (a null
leaves its variable out, a map that is only `valueFrom` stays a source for the kubelet,
anything else is text), volumes, mounts and init containers (a list of objects, else the
words of a PodTemplateError), the restartPolicy and the spec fields (a null leaves one
unset)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition import CompiledDefinition, compile_definition, load_text
from engine.definition.cel import CelEvaluationError
from engine.definition.rendering import PodDecorations, render_pod_decorations
from engine.definition.vocabulary import job_value
from tests.unit.definition.texts import document

POD = """\
  pod:
    restartPolicy: OnFailure
    env:
      GONE: "null"
      RANK: "string(replica.index)"
      IP: "dyn({'valueFrom': {'fieldRef': {'fieldPath': 'status.podIP'}}})"
      BOTH: "dyn({'valueFrom': {'fieldRef': {'fieldPath': 'status.podIP'}}, 'value': 'x'})"
    volumes: "[{'name': 'data', 'emptyDir': {}}]"
    volumeMounts: "job.spec.mounts"
    initContainers: "job.spec.inits"
    specFields:
      schedulerName: "'volcano'"
      hostname: "null"
"""
MOUNTS = [{"name": "data", "mountPath": "/data"}]
INITS = [{"name": "wait", "image": "busybox"}]
IP = {"valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def machine() -> CompiledDefinition:
    (loaded,) = load_text(document(extra=POD), "demo.yaml")
    return compile_definition(loaded)


def decorations(mounts: Any = MOUNTS, inits: Any = INITS) -> PodDecorations:
    job = {"apiVersion": "example.dev/v1", "kind": "Demo",
           "metadata": {"name": "demo", "namespace": "team"},
           "spec": {"mounts": mounts, "inits": inits}}
    replica = {"type": "Worker", "index": 1, "restarts": 0, "desired": 2}
    return render_pod_decorations(machine(), {"job": job_value(job), "replica": replica})


def test_every_value_of_spec_pod_reaches_the_pod() -> None:
    assert decorations() == PodDecorations(
        # GONE (null) is left out, and the variables after it are still there.
        env={"RANK": "1", "IP": IP,
             "BOTH": '{"value":"x","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}}'},
        labels={}, annotations={},
        volumes=({"name": "data", "emptyDir": {}},),
        volume_mounts=tuple(MOUNTS),
        init_containers=tuple(INITS),
        command=None,
        restart_policy="OnFailure",
        spec_fields={"schedulerName": "volcano"},
    )


def test_an_env_value_that_is_only_a_value_from_stays_a_source() -> None:
    env = decorations().env
    assert env["IP"] == IP  # the kubelet fills in the pod's IP
    assert isinstance(env["BOTH"], str)  # not a source: its text


@pytest.mark.parametrize(("mounts", "inits", "words"), [
    ("/data", INITS, "pod.volumeMounts gave '/data', not a list of objects"),
    (MOUNTS, ["wait"], "pod.initContainers gave ['wait'], not a list of objects"),
], ids=["mounts", "init-containers"])
def test_a_list_that_is_not_of_objects_is_named(mounts: Any, inits: Any, words: str) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        decorations(mounts, inits)
    assert str(raised.value) == words


def test_null_lists_give_none() -> None:
    made = decorations(None, None)
    assert (made.volume_mounts, made.init_containers) == ((), ())
