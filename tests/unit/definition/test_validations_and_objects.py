"""A kind's rules (`spec.validations`), its child objects (`spec.objects`), and the volumes
and mounts its pods get (`spec.pod.volumes`), with the `hosts` template variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.controller.reconcile.objects import build_object
from engine.definition import (
    CompiledDefinition,
    RenderedObject,
    broken_rules,
    compile_definition,
    load_definitions,
    load_text,
    render_objects,
    render_pod_decorations,
)
from engine.definition.cel import CelEvaluationError
from engine.definition.validate import validate_text
from tests.unit.definition.texts import JOB, document

MACHINES = Path(__file__).resolve().parents[3] / "machines"

# `extra` sections start at line 25 of a `document`.
JOB_VARIABLES = (
    "job, runPolicy, replicas, restarts, error, lastFailure, lastFailureCause, gangScheduler, "
    "objects, children, references"
)
HOSTS = {"Master": ["j-master-0"], "Worker": ["j-worker-0", "j-worker-1"]}


def lines(extra: str, job: str = JOB) -> list[str]:
    return [str(d) for d in validate_text(document(job=job, extra=extra), "demo.yaml")]


def compiled(extra: str) -> CompiledDefinition:
    (loaded,) = load_text(document(extra=extra), "demo.yaml")
    return compile_definition(loaded)


# --- spec.validations -------------------------------------------------------------------

RULES = """\
  validations:
    - {rule: "job.spec.size <= 3", message: at most 3 replicas, fieldPath: spec.size}
    - {rule: "has(job.spec.image)", message: an image is needed}
"""


def test_a_rule_sees_the_job_and_nothing_else() -> None:
    assert lines('  validations:\n    - {rule: "restarts == 0", message: m}\n') == [
        "demo.yaml:26:15: error: unknown variable 'restarts'; visible here: job"
    ]
    assert lines('  validations:\n    - {rule: "hosts.size() > 0", message: m}\n') == [
        "demo.yaml:26:15: error: unknown variable 'hosts'; visible here: job"
    ]


def test_a_rule_must_give_bool() -> None:
    assert lines('  validations:\n    - {rule: "size(job.spec)", message: m}\n') == [
        "demo.yaml:26:14: error: this expression must give bool, but it gives int"
    ]


def test_broken_rules_say_which_field_and_why() -> None:
    rules = compiled(RULES)
    assert broken_rules(rules, {"spec": {"size": 3, "image": "x"}}) == []
    assert broken_rules(rules, {"spec": {"size": 4, "image": "x"}}) == [
        "spec.size: at most 3 replicas"
    ]
    assert broken_rules(rules, {"spec": {"size": 1}}) == ["an image is needed"]


def test_a_rule_that_cannot_be_evaluated_counts_as_broken_with_the_reason() -> None:
    (broken,) = broken_rules(compiled(RULES), {"spec": {"image": "x"}})
    assert broken.startswith("spec.size: at most 3 replicas (the rule cannot be evaluated: ")
    assert "size" in broken.removeprefix("spec.size: at most 3 replicas")


def test_a_rule_giving_anything_but_true_is_broken() -> None:
    rules = compiled('  validations:\n    - {rule: "job.spec.ok", message: not ok}\n')
    assert broken_rules(rules, {"spec": {"ok": True}}) == []
    assert broken_rules(rules, {"spec": {"ok": "yes"}}) == ["not ok"]


def test_a_rule_does_not_see_managed_fields_and_the_job_is_left_as_it_was() -> None:
    """managedFields is the server's bookkeeping, left out of `job` (it is costly to convert)."""
    rules = compiled('  validations:\n    - {rule: "!has(job.metadata.managedFields) && '
                     'job.metadata.name == \'a\'", message: sees managedFields}\n')
    job = {"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}]}, "spec": {}}
    assert broken_rules(rules, job) == []
    assert job["metadata"]["managedFields"] == [{"manager": "kubectl"}]


@pytest.fixture(scope="module")
def shipped() -> dict[str, CompiledDefinition]:
    return {c.name: c for c in load_definitions([MACHINES])}


def pytorch(**replicas: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"pytorchReplicaSpecs": replicas}}


def tf(**replicas: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"tfReplicaSpecs": replicas}}


MASTER = "spec.pytorchReplicaSpecs.Master.replicas: Master must have exactly 1 replica"
CHIEF = "spec.tfReplicaSpecs: at most one Chief or Master replica (they are the same role)"


@pytest.mark.parametrize(("job", "broken"), [
    (pytorch(Master={"replicas": 1}, Worker={"replicas": 4}), []),
    (pytorch(Worker={"replicas": 2}), []),
    (pytorch(Master={}), []),  # Kubeflow defaults replicas to 1
    (pytorch(Master={"replicas": 2}, Worker={"replicas": 1}), [MASTER]),
    (pytorch(Master={"replicas": 0}), [MASTER]),
], ids=["one-master", "workers-only", "master-default", "two-masters", "no-master-replica"])
def test_pytorchjob_needs_exactly_one_master(
    shipped: dict[str, CompiledDefinition], job: dict[str, Any], broken: list[str]
) -> None:
    assert broken_rules(shipped["pytorchjob"], job) == broken


@pytest.mark.parametrize(("job", "broken"), [
    (tf(Chief={"replicas": 1}, PS={"replicas": 2}, Worker={"replicas": 4}), []),
    (tf(Master={}), []),
    (tf(Worker={"replicas": 2}), []),
    (tf(Chief={"replicas": 0}, Master={"replicas": 1}), []),
    (tf(Chief={}, Master={}), [CHIEF]),
    (tf(Chief={"replicas": 1}, Master={"replicas": 1}), [CHIEF]),
    (tf(Chief={"replicas": 2}), [CHIEF]),
], ids=["chief", "master-default", "workers-only", "empty-chief", "chief-and-master-defaults",
        "chief-and-master", "two-chiefs"])
def test_tfjob_allows_at_most_one_chief_or_master(
    shipped: dict[str, CompiledDefinition], job: dict[str, Any], broken: list[str]
) -> None:
    assert broken_rules(shipped["tfjob"], job) == broken


def test_a_job_without_its_replica_specs_breaks_the_shipped_rule(
    shipped: dict[str, CompiledDefinition],
) -> None:
    (broken,) = broken_rules(shipped["pytorchjob"], {"spec": {}})
    assert broken.startswith(f"{MASTER} (the rule cannot be evaluated: ")


# --- spec.objects -----------------------------------------------------------------------

OBJECTS = """\
  objects:
    - name: hostfile
      apiVersion: v1
      kind: ConfigMap
      when: "job.spec.size > 1"
      labels: {job: "job.metadata.name", gone: "null"}
      annotations: {size: "job.spec.size"}
      fields:
        data: "{'hosts': hosts.Worker.join('\\\\n'), 'tf': clusterSpec.worker.join(',')}"
        immutable: "null"
    - name: token
      apiVersion: v1
      kind: Secret
      when: "job.spec.size > 5"
      fields: {type: "'Opaque'"}
"""

OBJECT_VARIABLES = {
    "job": {"metadata": {"name": "j"}, "spec": {"size": 2}},
    "hosts": HOSTS,
    "clusterSpec": {"worker": ["j-worker-0.ns.svc:2222", "j-worker-1.ns.svc:2222"]},
}


def test_objects_are_rendered_while_their_when_holds_and_nulls_are_left_out() -> None:
    assert lines(OBJECTS) == []
    wanted, absent = render_objects(compiled(OBJECTS), OBJECT_VARIABLES)
    assert wanted == [RenderedObject(
        "hostfile", "v1", "ConfigMap", labels={"job": "j"}, annotations={"size": "2"},
        fields={"data": {"hosts": "j-worker-0\nj-worker-1",
                         "tf": "j-worker-0.ns.svc:2222,j-worker-1.ns.svc:2222"}},
        suffix="hostfile",
    )]
    assert [o.name for o in absent] == ["token"]
    job = {"metadata": {"name": "j"}, "spec": {"size": 6}}
    wanted, absent = render_objects(compiled(OBJECTS), {**OBJECT_VARIABLES, "job": job})
    assert [(o.name, o.fields) for o in wanted][1] == ("token", {"type": "Opaque"})
    assert absent == []


def test_an_object_without_when_is_always_wanted() -> None:
    extra = "  objects:\n    - {name: cm, apiVersion: v1, kind: ConfigMap}\n"
    assert render_objects(compiled(extra), {}) == (
        [RenderedObject("cm", "v1", "ConfigMap", suffix="cm")], [])


def test_object_values_see_the_job_level_and_template_variables() -> None:
    extra = ("  objects:\n    - {name: cm, apiVersion: v1, kind: ConfigMap, "
             'fields: {data: "replica.index"}}\n')
    assert lines(extra) == [
        f"demo.yaml:26:67: error: unknown variable 'replica'; visible here: {JOB_VARIABLES}, "
        "clusterSpec, hosts"
    ]


def test_a_value_that_cannot_be_computed_raises() -> None:
    with pytest.raises(CelEvaluationError, match="hosts"):
        render_objects(compiled(OBJECTS), {**OBJECT_VARIABLES, "hosts": {}})


def test_when_must_give_bool() -> None:
    extra = "  objects:\n    - {name: cm, apiVersion: v1, kind: ConfigMap, when: \"'yes'\"}\n"
    assert lines(extra) == [
        "demo.yaml:26:57: error: this expression must give bool, but it gives string"
    ]
    extra = '  objects:\n    - {name: cm, apiVersion: v1, kind: ConfigMap, when: "job.spec.on"}\n'
    with pytest.raises(CelEvaluationError, match="not a bool"):
        render_objects(compiled(extra), {"job": {"spec": {"on": "yes"}}})


def test_object_names_are_unique() -> None:
    extra = """\
  objects:
    - {name: cm, apiVersion: v1, kind: ConfigMap}
    - {name: cm, apiVersion: v1, kind: Secret}
"""
    assert lines(extra) == [
        "demo.yaml:27:14: error: object name 'cm' is already used by objects[0]: each object "
        "of a job has its own name"
    ]


def test_objects_of_one_kind_may_not_share_a_suffix() -> None:
    extra = """\
  objects:
    - {name: account, suffix: launcher, apiVersion: v1, kind: ServiceAccount}
    - {name: role, suffix: launcher, apiVersion: rbac.authorization.k8s.io/v1, kind: Role}
    - {name: launcher, apiVersion: v1, kind: ServiceAccount}
"""
    assert lines(extra) == [
        "demo.yaml:28:14: error: objects[0] is already a ServiceAccount (v1) named "
        "<job>-launcher: two would have the same name"
    ]
    job = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "pi", "namespace": "ns",
                                                            "uid": "u"}}
    wanted, _ = render_objects(compiled(extra.rsplit("\n    -", 1)[0] + "\n"), {})
    assert [build_object(job, w)["metadata"]["name"] for w in wanted] == [
        "pi-launcher", "pi-launcher"]


@pytest.mark.parametrize("name", ["a", "host-file-2", "x" * 40])
def test_object_names_that_are_dns_labels(name: str) -> None:
    assert lines(f"  objects:\n    - {{name: {name}, apiVersion: v1, kind: ConfigMap}}\n") == []


@pytest.mark.parametrize("name", ["-a", "a-", "Host", "host_file", "1a", "a.b", "x" * 41, "''"])
def test_object_names_that_are_not_dns_labels(name: str) -> None:
    (line,) = lines(f"  objects:\n    - {{name: {name}, apiVersion: v1, kind: ConfigMap}}\n")
    assert line.startswith("demo.yaml:26:14: error: 'name' ")


def test_fields_leave_api_version_kind_and_metadata_to_the_engine() -> None:
    extra = ("  objects:\n    - {name: cm, apiVersion: v1, kind: ConfigMap, fields: "
             "{apiVersion: \"'v2'\", kind: \"'Secret'\", metadata: \"{}\", data: \"{}\"}}\n")
    assert lines(extra) == [
        f"demo.yaml:26:{column}: error: '{field}' is set by the engine (from apiVersion, kind "
        "and name, labels and annotations), not by 'fields'"
        for column, field in ((60, "apiVersion"), (80, "kind"), (98, "metadata"))
    ]


# --- spec.pod.volumes and volumeMounts, and hosts ------------------------------------------

VOLUMES = """\
  pod:
    env: {PEERS: "hosts.Worker.join(',')"}
    volumes: "job.spec.volumes"
    volumeMounts: "[{'name': 'data', 'mountPath': '/data/' + hosts[replica.type][replica.index]}]"
"""

WORKER_1 = {"replica": {"type": "Worker", "index": 1}, "hosts": HOSTS}


def test_volumes_and_mounts_are_rendered_into_the_pod() -> None:
    assert lines(VOLUMES) == []
    volumes = [{"name": "data", "emptyDir": {}}]
    decorations = render_pod_decorations(compiled(VOLUMES),
                                         {**WORKER_1, "job": {"spec": {"volumes": volumes}}})
    assert decorations.env == {"PEERS": "j-worker-0,j-worker-1"}
    assert decorations.volumes == ({"name": "data", "emptyDir": {}},)
    assert decorations.volume_mounts == ({"name": "data", "mountPath": "/data/j-worker-1"},)


def test_null_or_an_empty_list_adds_no_volumes() -> None:
    for volumes in (None, []):
        decorations = render_pod_decorations(
            compiled(VOLUMES), {**WORKER_1, "job": {"spec": {"volumes": volumes}}})
        assert decorations.volumes == ()
    assert render_pod_decorations(compiled(""), {}).volume_mounts == ()


@pytest.mark.parametrize("volumes", ["data", {"name": "data"}, [1], [["data"]]])
def test_anything_but_a_list_of_objects_raises(volumes: object) -> None:
    with pytest.raises(CelEvaluationError, match=r"pod\.volumes gave"):
        render_pod_decorations(compiled(VOLUMES),
                               {**WORKER_1, "job": {"spec": {"volumes": volumes}}})


def test_volumes_whose_type_is_not_a_list_are_refused() -> None:
    assert lines("  pod:\n    volumes: \"'data'\"\n    volumeMounts: \"{'a': 1}\"\n") == [
        "demo.yaml:26:14: error: this expression must give list, but it gives string",
        "demo.yaml:27:19: error: this expression must give list, but it gives map<string, int>",
    ]


def test_hosts_is_a_template_variable_only() -> None:
    guard = JOB.replace('when: "restarts == 0"', "when: \"size(hosts) > 0\"")
    assert lines("", job=guard) == [
        f"demo.yaml:12:47: error: unknown variable 'hosts'; visible here: {JOB_VARIABLES}"
    ]
