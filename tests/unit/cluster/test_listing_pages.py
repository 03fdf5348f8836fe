"""A list, page by page, against a store driven by hand: `limit` and `continue` give one
consistent snapshot (a later page shows the objects as they were when the first was
served, rebuilt from the watch history), `remainingItemCount` only for an unselective
list, a token older than the history 410 Expired, a bad one 400, and the resourceVersion
rules (not older than, 504 beyond the current one, `Exact`)."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.listing import (
    ListQuery,
    Page,
    encode_continue,
    list_page,
)
from engine.cluster.apiserver.registry.selectors import FieldSelector, LabelSelector
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

NAMES = ["a", "b", "c", "d", "e"]


@pytest.fixture
def core() -> Core:
    made = make_core(ManualReactor())
    namespace(made, "team")
    for name in NAMES:
        made.store.create(CONFIGMAPS, "team", {"metadata": {"name": name,
                                                            "labels": {"tier": name}},
                                               "data": {"v": "1"}})
    made.store.create(CONFIGMAPS, "default", {"metadata": {"name": "other"}})
    return made


def names(page: Page) -> list[str]:
    return [entry.obj["metadata"]["name"] for entry in page.entries]


def listing(core: Core, **query: object) -> Page:
    return list_page(core.store, CONFIGMAPS, ListQuery(namespace="team", **query))  # type: ignore[arg-type]


def refused(call: Callable[[], object]) -> ApiError:
    with pytest.raises(ApiError) as error:
        call()
    return error.value


def test_pages_follow_each_other_with_the_count_of_what_remains(core: Core) -> None:
    first = listing(core, limit=2)
    assert (names(first), first.remaining) == (["a", "b"], 3)
    second = listing(core, limit=2, continue_token=first.continue_token)
    assert (names(second), second.remaining) == (["c", "d"], 1)
    last = listing(core, limit=2, continue_token=second.continue_token)
    assert (names(last), last.continue_token, last.remaining) == (["e"], None, None)
    assert first.rv == second.rv == last.rv


def test_a_limit_that_takes_everything_leaves_no_token(core: Core) -> None:
    page = listing(core, limit=5)
    assert (names(page), page.continue_token) == (NAMES, None)
    assert names(listing(core, limit=0)) == NAMES


def test_a_later_page_shows_the_snapshot_of_the_first(core: Core) -> None:
    first = listing(core, limit=2)
    core.store.create(CONFIGMAPS, "team", {"metadata": {"name": "cc"}})
    delete(core.store, CONFIGMAPS, "team", "d", DeleteOptions())
    for version in ("2", "3"):
        changed = dict(core.store.get(CONFIGMAPS, "team", "e").obj)
        core.store.update(CONFIGMAPS, "team", "e", {**changed, "data": {"v": version}})
    rest = listing(core, continue_token=first.continue_token)
    assert names(rest) == ["c", "d", "e"]
    assert rest.entries[-1].obj["data"] == {"v": "1"}
    assert names(listing(core)) == ["a", "b", "c", "cc", "e"]


def test_a_selective_list_does_not_count_what_remains(core: Core) -> None:
    page = listing(core, limit=1, labels=LabelSelector.parse("tier in (a,c,e)"))
    assert (names(page), page.remaining) == (["a"], None)
    assert page.continue_token is not None
    fields = FieldSelector.parse("metadata.name=d", {"metadata.name", "metadata.namespace"})
    assert names(listing(core, fields=fields)) == ["d"]


def test_without_a_namespace_every_namespace_is_listed_in_key_order(core: Core) -> None:
    page = list_page(core.store, CONFIGMAPS, ListQuery())
    keys = [(e.obj["metadata"]["namespace"], e.obj["metadata"]["name"]) for e in page.entries]
    ours = [key for key in keys if key[0] in ("default", "team") and key[1] in (*NAMES, "other")]
    assert ours == [
        ("default", "other"), *(("team", name) for name in NAMES)]


def test_a_token_that_is_not_ours_is_a_bad_request(core: Core) -> None:
    error = refused(lambda: listing(core, continue_token="not-base64!"))
    assert error.code == 400 and error.message.startswith("continue key is not valid: ")
    foreign = base64.urlsafe_b64encode(
        b'{"v":"meta.k8s.io/v0","rv":1,"start":["team","a"]}').decode()
    assert refused(lambda: listing(core, continue_token=foreign)).message == (
        "continue key is not valid: unknown token version")


def test_a_token_older_than_the_history_is_expired() -> None:
    small = make_core(ManualReactor(), history=1)
    namespace(small, "team")
    for index in range(150):
        small.store.create(CONFIGMAPS, "team", {"metadata": {"name": f"cm-{index:03}"}})
    token = encode_continue(1, ("team", "cm-000"))
    error = refused(lambda: list_page(small.store, CONFIGMAPS,
                                      ListQuery(namespace="team", continue_token=token)))
    assert (error.code, error.reason) == (410, "Expired")
    assert error.message.startswith("The provided continue parameter is too old")


def test_a_negative_limit_is_refused(core: Core) -> None:
    error = refused(lambda: listing(core, limit=-1))
    assert (error.code, error.message) == (400, "limit must not be negative")


def test_a_resource_version_this_server_has_not_reached_is_a_timeout(core: Core) -> None:
    current = core.store.table.rv
    assert names(listing(core, resource_version=str(current))) == NAMES
    assert names(listing(core, resource_version="0")) == NAMES
    error = refused(lambda: listing(core, resource_version=str(current + 1)))
    assert (error.code, error.message) == (
        504, f"Timeout: Too large resource version: {current + 1}, current: {current}")


def test_an_exact_resource_version_lists_the_objects_as_they_were(core: Core) -> None:
    before = core.store.table.rv
    delete(core.store, CONFIGMAPS, "team", "a", DeleteOptions())
    exact = listing(core, resource_version=str(before), resource_version_match="Exact")
    assert (names(exact), exact.rv) == (NAMES, before)
    error = refused(lambda: listing(core, resource_version="x", resource_version_match="Exact"))
    assert (error.code, error.message) == (
        400, "resourceVersionMatch=Exact needs a resourceVersion, got 'x'")
    assert refused(lambda: listing(core, resource_version=str(before + 5),
                                   resource_version_match="Exact")).code == 504
