"""`Cache.reproject`: the projection applied again to a view held, its indexes kept, and no
projection decided before it (an event or a relist under way) overriding it; and a relist
handed views made as its pages arrived."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engine.kube.cache import Cache

Obj = dict[str, Any]


def pod(rv: str, owner: str = "job-1", **extra: Any) -> Obj:
    return {"metadata": {"namespace": "ns", "name": "p", "resourceVersion": rv,
                         "ownerReferences": [{"uid": owner}]}, **extra}


def test_reproject_applies_the_projection_to_the_view_held_and_keeps_the_indexes() -> None:
    slim = False

    def keep(obj: Obj) -> Obj:
        return {"metadata": obj["metadata"]} if slim else obj

    cache = Cache(keep)
    cache.apply("ADDED", pod("1", spec={"big": True}))
    slim = True
    view = cache.reproject("ns", "p")
    assert view == {"metadata": pod("1")["metadata"]}
    assert cache.get("ns", "p") is view
    assert cache.by_owner("job-1") == [view]
    assert cache.reproject("ns", "other") is None


@pytest.mark.parametrize("write", ["apply", "replace"])
def test_a_projection_decided_before_a_reproject_does_not_override_it(write: str) -> None:
    """The projection of an event is made outside the cache's lock; one made while what to
    keep changed (and `reproject` ran) is made again, so the cache keeps the new decision."""
    decision = {"slim": False}
    entered, release = threading.Event(), threading.Event()

    def keep(obj: Obj) -> Obj:
        slim = decision["slim"]
        if obj.get("spec") and not entered.is_set():
            entered.set()
            release.wait(10)
        return {"metadata": obj["metadata"]} if slim else obj

    cache = Cache(keep)
    cache.apply("ADDED", pod("1"))
    newer = pod("2", spec={"big": True})
    if write == "apply":
        writer = threading.Thread(target=cache.apply, args=("MODIFIED", newer))
    else:
        writer = threading.Thread(target=cache.replace, args=([newer],))
    writer.start()
    assert entered.wait(10)
    decision["slim"] = True
    cache.reproject("ns", "p")
    release.set()
    writer.join(10)
    assert cache.get("ns", "p") == {"metadata": newer["metadata"]}


def test_views_made_as_a_list_arrived_are_kept_as_they_are() -> None:
    """An informer projects each page of a list as it arrives (`view`), and hands the cache
    the views: they are not projected again, and the relist's changes are said as usual."""
    projected: list[str] = []

    def keep(obj: Obj) -> Obj:
        projected.append(obj["metadata"]["resourceVersion"])
        return {"metadata": obj["metadata"]}

    cache = Cache(keep)
    cache.apply("ADDED", pod("1"))
    epoch = cache.epoch
    views = [cache.view(pod("2", spec={"big": True}))]
    changes = cache.replace(views, views_since=epoch)
    assert projected == ["1", "2"]
    assert cache.get("ns", "p") is views[0]
    assert [(kind, new["metadata"]["resourceVersion"] if new else None)
            for kind, _old, new in changes] == [("MODIFIED", "2")]


def test_views_made_before_a_reproject_are_made_again_from_themselves() -> None:
    decision = {"slim": False}

    def keep(obj: Obj) -> Obj:
        return {"metadata": obj["metadata"]} if decision["slim"] else obj

    cache = Cache(keep)
    cache.apply("ADDED", pod("1"))
    epoch = cache.epoch
    views = [cache.view(pod("2", spec={"big": True}))]
    decision["slim"] = True
    cache.reproject("ns", "p")
    cache.replace(views, views_since=epoch)
    assert cache.get("ns", "p") == {"metadata": pod("2")["metadata"]}
