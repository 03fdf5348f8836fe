"""The gang book on its own: which PodGroup a pod joins, how many of a gang bind at once,
why a gang waits, and the PodGroup statuses Volcano's and scheduler-plugins' controllers
would write. The integration tests drive the same through a server; these pin the
arithmetic (minMember against bound, failed and pending pods) in milliseconds."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from engine.cluster.node.scheduling.gangs import (
    NEVER_FITS,
    PLUGINS,
    PLUGINS_LABEL,
    VOLCANO,
    VOLCANO_ANNOTATION,
    Flavour,
    GangBook,
    GangRef,
    age_key,
    gang_of,
    min_member,
)

NS = "ml"
AT, LATER = "2026-11-30T10:00:00Z", "2026-11-30T10:05:00Z"
CAPACITY = {"cpu": Decimal(4), "pods": Decimal(110)}


def pod(name: str, *, gang: str = "g", flavour: Flavour = VOLCANO, cpu: str = "1",
        node: str = "", phase: str = "Pending", created: str = AT) -> dict[str, Any]:
    """A pod of gang `gang` asking for `cpu` CPUs; bound when `node` is given."""
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}",
                                "creationTimestamp": created}
    if flavour == VOLCANO:
        metadata["annotations"] = {VOLCANO_ANNOTATION: gang}
    else:
        metadata["labels"] = {PLUGINS_LABEL: gang}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def group(name: str = "g", min_member: Any = 2) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS}, "spec": {"minMember": min_member}}


def book_with(min_members: Any = 2, *members: dict[str, Any],
              flavour: Flavour = VOLCANO) -> tuple[GangBook, GangRef]:
    book = GangBook()
    book.observe_group(flavour, "ADDED", group(min_member=min_members))
    for member in members:
        book.observe("ADDED", member)
    return book, GangRef(flavour, NS, "g")


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# --- membership -------------------------------------------------------------------------------


def test_a_pod_joins_volcanos_group_by_annotation_before_scheduler_plugins_label() -> None:
    both = pod("a")
    both["metadata"]["labels"] = {PLUGINS_LABEL: "other"}
    assert gang_of(both) == GangRef(VOLCANO, NS, "g")
    assert gang_of(pod("b", flavour=PLUGINS)) == GangRef(PLUGINS, NS, "g")
    assert gang_of({"metadata": {"name": "alone", "namespace": NS}}) is None
    assert gang_of({"metadata": {"annotations": {VOLCANO_ANNOTATION: ""},
                                 "labels": {PLUGINS_LABEL: "p"}}}) == GangRef(PLUGINS, "", "p")
    assert str(GangRef(VOLCANO, NS, "g")) == "ml/g"
    assert VOLCANO.resource.plural == "podgroups" and VOLCANO.resource.group == VOLCANO.group


@pytest.mark.parametrize(("written", "meant"), [
    (None, 1), (0, 1), (-2, 1), (1, 1), (3, 3), ("5", 5), ("many", 1), ([2], 1),
])
def test_min_member_is_at_least_one_and_an_unreadable_value_means_one(
    written: Any, meant: int,
) -> None:
    assert min_member(group(min_member=written)) == meant
    assert min_member({"metadata": {}}) == 1


def test_the_oldest_pod_comes_first_then_namespace_and_name() -> None:
    pods = [pod("b", created=LATER), pod("c"), pod("a")]
    assert names(sorted(pods, key=age_key)) == ["a", "c", "b"]


def test_observing_says_when_a_gangs_counts_may_have_changed() -> None:
    book = GangBook()
    first = pod("a")
    assert book.observe("ADDED", first)
    assert not book.observe("MODIFIED", first)  # nothing the counts read changed
    assert book.observe("MODIFIED", pod("a", node="n"))  # bound
    assert book.observe("MODIFIED", pod("a", node="n", phase="Running"))
    assert book.observe("DELETED", pod("a", node="n", phase="Running"))
    assert not book.observe("ADDED", {"metadata": {"name": "x", "namespace": NS, "uid": "x"}})


# --- planning ---------------------------------------------------------------------------------


def test_pods_of_a_group_that_does_not_exist_wait_for_it() -> None:
    book = GangBook()
    plan = book.plan(GangRef(VOLCANO, NS, "g"), [pod("a")], CAPACITY, {})
    assert names(plan.refused) == ["a"] and not plan.chosen and not plan.alone
    assert plan.message == 'pod group "g" does not exist: its pods wait until it is created'


def test_fewer_pods_than_min_member_bind_none_and_say_how_many_exist() -> None:
    bound = pod("a", node="n", phase="Running")
    book, ref = book_with(3, bound)
    plan = book.plan(ref, [pod("b")], CAPACITY, {})
    assert names(plan.refused) == ["b"] and not plan.chosen
    assert plan.message == ("pod group g is not ready: 2 of its 3 pods (minMember) exist; "
                            "waiting for the rest")
    [(_, status)] = book.statuses_to_write(AT)
    assert status["conditions"][0]["reason"] == "NotEnoughTasks"
    assert status["conditions"][0]["message"] == plan.message


def test_exactly_enough_pending_pods_bind_together_oldest_first() -> None:
    book, ref = book_with(2)
    pending = [pod("late", created=LATER), pod("early")]
    plan = book.plan(ref, pending, CAPACITY, {})
    assert names(plan.chosen) == ["early", "late"] and not plan.refused and not plan.alone


def test_pods_beyond_min_member_join_while_they_fit_and_wait_alone_when_not() -> None:
    book, ref = book_with(2)
    pending = [pod("p0", cpu="1"), pod("p1", cpu="1"), pod("p2", cpu="3"), pod("p3", cpu="2")]
    plan = book.plan(ref, pending, CAPACITY, {})
    assert names(plan.chosen) == ["p0", "p1", "p3"]  # 1 + 1 + 2 = 4 CPUs
    assert names(plan.alone) == ["p2"]  # 3 more would not fit: placed as a pod on its own


def test_a_gang_short_of_room_binds_none_and_says_what_is_short() -> None:
    book, ref = book_with(2)
    plan = book.plan(ref, [pod("a", cpu="2"), pod("b", cpu="2")], CAPACITY, {"cpu": Decimal(1)})
    assert not plan.chosen and names(plan.refused) == ["a", "b"]
    assert plan.message == (
        "pod group g: 2 pods must be bound together to reach minMember 2; 0/1 nodes are "
        "available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption "
        "victims found for incoming pod.")
    [(_, status)] = book.statuses_to_write(AT)
    assert status["conditions"][0]["reason"] == "NotEnoughResources"


def test_a_gang_larger_than_the_whole_node_never_fits_and_says_so() -> None:
    bound = pod("a", cpu="2", node="n", phase="Running")
    book, ref = book_with(3, bound)
    plan = book.plan(ref, [pod("b", cpu="1"), pod("c", cpu="2")], CAPACITY, {"cpu": Decimal(2)})
    assert not plan.chosen
    assert ", more than the node can ever hold;" in plan.message
    [(_, status)] = book.statuses_to_write(AT)
    assert status["conditions"][0]["reason"] == NEVER_FITS


def test_a_gang_that_fits_with_what_it_holds_is_only_short_for_now() -> None:
    """The bound members' requests count once: 2 held + 2 wanted = 4 = the node."""
    bound = pod("a", cpu="2", node="n", phase="Running")
    book, ref = book_with(2, bound)
    plan = book.plan(ref, [pod("b", cpu="2"), pod("c", cpu="1")], CAPACITY, {"cpu": Decimal(3)})
    assert not plan.chosen
    [(_, status)] = book.statuses_to_write(AT)
    assert status["conditions"][0]["reason"] == "NotEnoughResources"


def test_once_min_member_pods_hold_a_place_the_rest_go_alone() -> None:
    held = [pod("a", node="n", phase="Running"), pod("b", node="n", phase="Succeeded")]
    book, ref = book_with(2, *held)
    plan = book.plan(ref, [pod("c")], CAPACITY, {})
    assert names(plan.alone) == ["c"] and not plan.chosen and not plan.refused


def test_a_failed_member_no_longer_holds_a_place_in_the_gang() -> None:
    held = [pod("a", node="n", phase="Running"), pod("b", node="n", phase="Failed")]
    book, ref = book_with(2, *held)
    plan = book.plan(ref, [pod("c")], CAPACITY, {})
    assert names(plan.chosen) == ["c"]  # one more is needed, and it is bound with the gang


def test_an_unbound_member_holds_no_place() -> None:
    book, ref = book_with(2, pod("a"), pod("b"))
    plan = book.plan(ref, [pod("c")], CAPACITY, {})
    assert names(plan.refused) == ["c"]  # needs 2 bound together, only one pending pod here


def test_requests_come_from_the_schedulers_own_count_when_given() -> None:
    book, ref = book_with(1)
    plan = book.plan(ref, [pod("a", cpu="1")], CAPACITY, {},
                     requests_of=lambda _: {"cpu": Decimal(5)})
    assert names(plan.refused) == ["a"]


# --- PodGroup statuses --------------------------------------------------------------------------


def statuses(book: GangBook, at: str = AT) -> dict[GangRef, dict[str, Any]]:
    return dict(book.statuses_to_write(at))


def test_volcano_pending_until_min_member_bound_then_scheduled_and_running() -> None:
    book, ref = book_with(2, pod("a", node="n", phase="Running"))
    assert statuses(book)[ref] == {"phase": "Pending", "running": 1, "succeeded": 0,
                                   "failed": 0, "conditions": []}
    book.observe("ADDED", pod("b", node="n"))
    assert statuses(book, LATER)[ref] == {
        "phase": "Running", "running": 1, "succeeded": 0, "failed": 0,
        "conditions": [{"type": "Scheduled", "status": "True",
                        "reason": "tasks in gang are ready to be scheduled", "message": "",
                        "lastTransitionTime": LATER}]}


def test_volcano_completed_once_every_bound_member_succeeded() -> None:
    done = [pod(n, node="n", phase="Succeeded") for n in ("a", "b")]
    book, ref = book_with(2, *done)
    assert statuses(book)[ref]["phase"] == "Completed"
    book.observe("ADDED", pod("c", node="n", phase="Running"))
    assert statuses(book)[ref]["phase"] == "Running"


def test_volcano_failed_members_do_not_count_as_placed() -> None:
    members = [pod("a", node="n", phase="Running"), pod("b", node="n", phase="Failed")]
    book, ref = book_with(2, *members)
    status = statuses(book)[ref]
    assert (status["phase"], status["failed"], status["conditions"]) == ("Pending", 1, [])


@pytest.mark.parametrize(("phases", "wanted"), [
    ([], "Pending"),
    (["Pending"], "Pending"),
    (["Pending", "Pending"], "Scheduling"),
    (["Running", "Pending"], "Scheduling"),
    (["Running", "Running"], "Running"),
    (["Running", "Succeeded"], "Running"),
    (["Succeeded", "Succeeded"], "Finished"),
    (["Failed", "Running"], "Failed"),
    (["Failed", "Pending"], "Scheduling"),
    (["Failed", "Succeeded", "Succeeded"], "Failed"),
])
def test_scheduler_plugins_phases_follow_its_controllers_rules(
    phases: list[str], wanted: str,
) -> None:
    members = [pod(f"p{i}", flavour=PLUGINS, phase=phase, node="n" if phase != "Pending" else "")
               for i, phase in enumerate(phases)]
    book, ref = book_with(2, *members, flavour=PLUGINS)
    status = statuses(book)[ref]
    assert status["phase"] == wanted
    assert "conditions" not in status
    assert (status["running"], status["succeeded"], status["failed"]) == (
        phases.count("Running"), phases.count("Succeeded"), phases.count("Failed"))


def test_a_status_is_written_once_until_something_but_the_clock_changes() -> None:
    book, ref = book_with(1, pod("a", node="n", phase="Running"))
    [(_, first)] = book.statuses_to_write(AT)
    book.written(ref, first)
    book.touch(ref)
    assert statuses(book, LATER) == {}  # the same status at a later time: nothing to write
    book.observe("MODIFIED", pod("a", node="n", phase="Succeeded"))
    [(_, second)] = book.statuses_to_write(LATER)
    assert second["phase"] == "Completed"
    # The Scheduled condition did not change: it keeps the time it first became true.
    assert second["conditions"][0]["lastTransitionTime"] == AT


def test_an_unwritten_status_is_computed_again_after_touch() -> None:
    book, ref = book_with(1, pod("a", node="n", phase="Running"))
    assert ref in statuses(book)
    assert statuses(book) == {}  # nothing dirty
    book.touch(ref)  # its write failed
    assert ref in statuses(book)


def test_the_groups_own_status_counts_as_written_before_the_first_write() -> None:
    book = GangBook()
    current = {"phase": "Pending", "running": 0, "succeeded": 0, "failed": 0,
               "conditions": []}
    book.observe_group(VOLCANO, "ADDED", {**group(), "status": current})
    assert statuses(book) == {}


def test_a_deleted_group_has_no_status_and_its_pods_wait_again() -> None:
    book, ref = book_with(1, pod("a", node="n", phase="Running"))
    book.observe_group(VOLCANO, "DELETED", group())
    assert statuses(book) == {}
    plan = book.plan(ref, [pod("b")], CAPACITY, {})
    assert names(plan.refused) == ["b"] and "does not exist" in plan.message


def test_a_verdict_is_dropped_once_the_gang_is_placed() -> None:
    book, ref = book_with(2)
    book.plan(ref, [pod("a")], CAPACITY, {})
    assert statuses(book)[ref]["conditions"][0]["type"] == "Unschedulable"
    book.plan(ref, [pod("a"), pod("b")], CAPACITY, {})
    book.observe("ADDED", pod("a", node="n"))
    book.observe("ADDED", pod("b", node="n"))
    assert statuses(book)[ref]["conditions"][0]["type"] == "Scheduled"


def test_a_deleted_member_leaves_its_gang() -> None:
    held = pod("a", node="n", phase="Running")
    book, ref = book_with(1, held)
    book.observe("DELETED", held)
    plan = book.plan(ref, [pod("b")], CAPACITY, {})
    assert names(plan.chosen) == ["b"]  # the deleted pod no longer holds the place
    book.observe("DELETED", pod("never-seen"))  # forgetting an unknown pod is harmless
    status = statuses(book)[ref]
    assert (status["running"], status["phase"]) == (0, "Pending")


def test_pods_of_the_same_age_go_by_namespace_then_name() -> None:
    pods = [pod("b"), {**pod("a"), "metadata": {**pod("a")["metadata"], "namespace": "z"}},
            pod("a")]
    assert [(p["metadata"]["namespace"], p["metadata"]["name"])
            for p in sorted(pods, key=age_key)] == [(NS, "a"), (NS, "b"), ("z", "a")]
    assert age_key({"metadata": {}}) == ("", "", "")


def test_a_group_without_namespace_is_named_in_the_empty_namespace() -> None:
    book = GangBook()
    book.observe_group(VOLCANO, "ADDED", {"metadata": {"name": "g"}, "spec": {"minMember": 1}})
    plan = book.plan(GangRef(VOLCANO, "", "g"), [pod("a")], CAPACITY, {})
    assert names(plan.chosen) == ["a"]


def test_every_dirty_group_gets_its_status_in_one_pass() -> None:
    book = GangBook()
    for name in ("g1", "g2", "g3"):
        book.observe_group(VOLCANO, "ADDED", group(name, 1))
    book.observe_group(VOLCANO, "DELETED", group("g2", 1))
    assert sorted(ref.name for ref in statuses(book)) == ["g1", "g3"]


def test_an_unschedulable_gang_says_so_as_a_true_condition_with_its_message() -> None:
    book, ref = book_with(3)
    plan = book.plan(ref, [pod("a")], CAPACITY, {})
    [condition] = statuses(book)[ref]["conditions"]
    assert condition == {"type": "Unschedulable", "status": "True", "reason": "NotEnoughTasks",
                         "message": plan.message, "lastTransitionTime": AT}


def test_a_short_gangs_message_is_its_conditions_message() -> None:
    book, ref = book_with(2)
    plan = book.plan(ref, [pod("a", cpu="3"), pod("b", cpu="3")], CAPACITY, {})
    [condition] = statuses(book)[ref]["conditions"]
    assert condition["message"] == plan.message and "Insufficient cpu" in plan.message


def test_a_condition_without_a_recorded_time_takes_the_time_of_the_write() -> None:
    book = GangBook()
    old = {"phase": "Running", "running": 2, "succeeded": 0, "failed": 0,
           "conditions": [{"type": "Scheduled", "status": "True",
                           "reason": "tasks in gang are ready to be scheduled", "message": "",
                           "transitionID": "abc"}]}
    book.observe_group(VOLCANO, "ADDED", {**group(min_member=1), "status": old})
    book.observe("ADDED", pod("a", node="n", phase="Running"))
    [(_, status)] = book.statuses_to_write(LATER)  # running 2 -> 1: a new status
    assert status["conditions"][0]["lastTransitionTime"] == LATER


def test_a_status_that_differs_only_in_times_and_transition_ids_is_not_written() -> None:
    book = GangBook()
    old = {"phase": "Running", "running": 1, "succeeded": 0, "failed": 0,
           "conditions": [{"type": "Scheduled", "status": "True",
                           "reason": "tasks in gang are ready to be scheduled", "message": "",
                           "lastTransitionTime": AT, "transitionID": "abc"}]}
    book.observe_group(VOLCANO, "ADDED", {**group(min_member=1), "status": old})
    book.observe("ADDED", pod("a", node="n", phase="Running"))
    assert statuses(book, LATER) == {}


def test_extra_pods_are_counted_against_what_the_chosen_ones_take() -> None:
    """Each extra pod that joins takes its room: the third of 1 CPU fits, not a fourth."""
    book, ref = book_with(1)
    pending = [pod(f"p{i}", cpu="1", created=f"2026-11-30T10:0{i}:00Z") for i in range(6)]
    plan = book.plan(ref, pending, CAPACITY, {"cpu": Decimal(1)})
    assert names(plan.chosen) == ["p0", "p1", "p2"]
    assert names(plan.alone) == ["p3", "p4", "p5"]
