"""A child object's forced fields (spec.child.fields) kept in step (actions._keep_child_fields):
JobSet suspends and resumes its Jobs by them. Each running child of this attempt whose
fields' hash differs from what they render to now gets a merge patch of the fields, with its
uid as precondition and the new hash, and a log line naming them; one in step, ended, going,
of an older attempt or not observed is left alone. A change the child's API server refuses
is said in a ChildUpdateRefused Warning, a child gone meanwhile is not, and either way the
next child is still kept in step."""

from __future__ import annotations

from typing import Any

import pytest

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Planned
from engine.controller.reconcile.manifests import FIELDS_HASH_ANNOTATION
from engine.controller.reconcile.observe import observe_child
from engine.definition import CompiledDefinition, compile_definition, load_text
from engine.kube.errors import ApiError, Invalid, NotFound, error_from_status
from engine.kube.resources import Resource
from engine.shipped import shipped_dir
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    logged,
    world_of,
)
from tests.unit.definition.test_language_for_jobset import jobset

JOBS = Resource("batch", "v1", "jobs", "Job")
LEADER, WORKER = ReplicaId("leader", 0), ReplicaId("workers", 0)


def child(replica: ReplicaId, *, fields_hash: str | None = None, **metadata: Any
          ) -> dict[str, Any]:
    """The running Job of `replica`, its forced fields last written with `fields_hash`."""
    name = f"js-{replica.type}-{replica.index}"
    found: dict[str, Any] = {"name": name, "namespace": "team", "uid": f"uid-{name}",
                             "labels": {"jobmachine.dev/replica-type": replica.type},
                             **metadata}
    if fields_hash is not None:
        found["annotations"] = {FIELDS_HASH_ANNOTATION: fields_hash}
    return {"metadata": found, "status": {"active": 1}}


def kept_in_step(children: dict[ReplicaId, dict[str, Any]], api: Api | None = None, *,
                 actions: tuple[Planned, ...] = (),
                 definition: CompiledDefinition | None = None, **fields: Any
                 ) -> tuple[Api, Recorder, list[tuple[str, str, dict[str, Any]]]]:
    """One pass over the JobSet `js` whose Jobs are `children`, that plans `actions`
    (governed by `definition`, else the shipped machine)."""
    job = jobset()
    job["metadata"]["namespace"] = "team"
    world = world_of(job, definition)
    decision, _ = judged(world, actions=actions)
    facts = {replica: observe_child(obj, job=world.job, definition=world.definition)
             for replica, obj in children.items()}
    api, recorder = api or Api(), Recorder()
    run = action_run(world, decision, api, recorder, resource=JOBS, pods=children,
                     facts=facts, **fields)
    with logged("team/js") as lines:
        execute(run)
    return api, recorder, lines


def patches(api: Api) -> dict[str, tuple[str, Any, str]]:
    return {name: details for verb, _, name, details in api.sent if verb == "patch"}


def test_each_childs_fields_are_patched_in_with_its_uid_and_their_hash() -> None:
    api, recorder, lines = kept_in_step({WORKER: child(WORKER), LEADER: child(LEADER)})
    assert api.verbs("patch") == ["js-leader-0", "js-workers-0"]  # in replica order
    namespace, body, patch_type = patches(api)["js-leader-0"]
    assert (namespace, patch_type) == ("team", "merge")
    assert body["metadata"]["uid"] == "uid-js-leader-0"
    assert body["metadata"]["annotations"][FIELDS_HASH_ANNOTATION]
    assert body["spec"]["suspend"] is False
    assert body["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert recorder.said == []
    fields = ("spec.completionMode, spec.suspend, spec.template.metadata.annotations, "
              "spec.template.metadata.labels, spec.template.spec.restartPolicy, "
              "spec.template.spec.subdomain")
    assert [(level, message, extra) for level, message, extra in lines] == [
        ("INFO", f"updated Job js-{replica}: {fields}",
         {"job": "team/js", "kind": "JobSet", "replica": replica})
        for replica in ("leader-0", "workers-0")]


def test_a_child_whose_fields_are_in_step_is_left_alone() -> None:
    api, _, _ = kept_in_step({LEADER: child(LEADER)})
    written = patches(api)["js-leader-0"][1]["metadata"]["annotations"][FIELDS_HASH_ANNOTATION]
    api, _, _ = kept_in_step({LEADER: child(LEADER, fields_hash=written),
                              WORKER: child(WORKER, fields_hash=written)})
    # The worker's fields render otherwise (its index, its replicated job): only it changes.
    assert api.verbs("patch") == ["js-workers-0"]


def test_an_ended_going_or_older_child_is_left_alone() -> None:
    ended = child(LEADER)
    ended["status"] = {"conditions": [{"type": "Complete", "status": "True"}],
                       "succeeded": 1}
    going = child(WORKER, deletionTimestamp="2027-01-15T07:59:00Z")
    older = ReplicaId("workers", 1)
    api, _, _ = kept_in_step({LEADER: ended, WORKER: going, older: child(older)},
                             old_attempt=frozenset({older}))
    assert api.verbs("patch") == []


def test_a_refused_change_is_said_and_the_next_child_still_kept_in_step() -> None:
    refused = Invalid(422, "Invalid", "spec.completionMode: field is immutable", {})
    api, recorder, _ = kept_in_step({LEADER: child(LEADER), WORKER: child(WORKER)},
                                    Api(refuse={("patch", "js-leader-0"): refused}))
    assert api.verbs("patch") == ["js-leader-0", "js-workers-0"]
    assert recorder.said == [Said(
        "js", "Warning", "ChildUpdateRefused",
        "leader-0: Job js-leader-0: spec.completionMode: field is immutable", "leader-0")]


# kube-apiserver's answer to a patch whose uid names a Job since replaced under its name.
MADE_AGAIN = error_from_status(422, {
    "reason": "Invalid", "message": 'Job.batch "js-leader-0" is invalid: metadata.uid: ...',
    "details": {"causes": [{"field": "metadata.uid", "reason": "FieldValueInvalid",
                            "message": 'Invalid value: "uid-js-leader-0": field is immutable'}]}})


@pytest.mark.parametrize("gone", [NotFound(404, "NotFound", "gone", {}), MADE_AGAIN],
                         ids=["deleted", "made-again"])
def test_a_child_gone_meanwhile_is_not_said_and_the_next_still_kept_in_step(
        gone: ApiError) -> None:
    api, recorder, lines = kept_in_step({LEADER: child(LEADER), WORKER: child(WORKER)},
                                        Api(refuse={("patch", "js-leader-0"): gone}))
    assert api.verbs("patch") == ["js-leader-0", "js-workers-0"]
    assert recorder.said == []
    assert [message.split(":")[0] for _, message, _ in lines] == ["updated Job js-workers-0"]


def test_a_child_left_alone_does_not_stop_the_next_from_being_kept_in_step() -> None:
    # Sorted first: a Job of a replicated job gone from the spec (no values to render), then
    # an ended Job; the running Job after them is still patched.
    gone, ended = ReplicaId("alpha", 0), child(LEADER)
    ended["status"] = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}
    api, _, _ = kept_in_step({gone: child(gone), LEADER: ended, WORKER: child(WORKER)})
    assert api.verbs("patch") == ["js-workers-0"]


def jobset_forcing(field: str, expression: str) -> CompiledDefinition:
    """The shipped JobSet machine with one more forced field of its Jobs."""
    text = (shipped_dir("machines") / "jobset.yaml").read_text()
    forced = f"    fields:\n      {field}: >-\n        {expression}\n"
    text = text.replace("    fields:\n", forced, 1)
    (loaded,) = load_text(text, "jobset.yaml")
    return compile_definition(loaded)


def test_a_forced_field_reads_its_child_as_last_seen() -> None:
    # `child` is the replica's own Job as observed: its active pods set the deadline here.
    definition = jobset_forcing(
        "spec.activeDeadlineSeconds",
        "has(child.status) && has(child.status.active)"
        " ? dyn(100 + int(child.status.active)) : null")
    busy = child(WORKER)
    busy["status"] = {"active": 3}
    api, _, _ = kept_in_step({LEADER: child(LEADER), WORKER: busy}, definition=definition)
    assert {name: body["spec"]["activeDeadlineSeconds"]
            for name, (_, body, _) in patches(api).items()} == {
        "js-leader-0": 101, "js-workers-0": 103}
