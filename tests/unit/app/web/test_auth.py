"""Auth decisions: tokens from headers, sessions, and what a user may see, as the API server
answers (a fake here), remembered only briefly."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from engine.app.web.auth import Ask, Gate, Sessions, bearer_token, safe_next
from tests.unit.app.web.support import PYTORCHJOBS, TFJOBS


@dataclass
class FakeReviews:
    """The API server's answers: users by token, and what each may do."""

    users: dict[str, str]
    allowed: set[tuple[str, Ask]] = field(default_factory=set)
    asked: list[object] = field(default_factory=list)

    def who(self, token: str) -> str | None:
        self.asked.append(("who", token))
        return self.users.get(token)

    def may(self, token: str, ask: Ask) -> bool:
        self.asked.append(ask)
        return (token, ask) in self.allowed


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", None), ("Bearer", None),
    ("", None), ("Bearer ", None),
])
def test_a_bearer_header_gives_its_token(header: str, token: str | None) -> None:
    assert bearer_token({"Authorization": header} if header else {}) == token


@pytest.mark.parametrize(("asked", "went"), [
    ("/jobs/a/b/c?x=1", "/jobs/a/b/c?x=1"), (None, "/"), ("", "/"),
    ("https://evil.example/", "/"), ("//evil.example/", "/"), ("/\\evil.example", "/"),
    ("jobs", "/"), ("/\t/evil.example", "/"), ("/\n/evil.example", "/"),
    ("/\r\n/evil.example", "/"), ("/\x00/evil.example", "/"), (" //evil.example", "/"),
    ("/%09/evil.example", "/%09/evil.example"), ("javascript:alert(1)", "/"),
    ("/jobs/\u00e9", "/"),
])
def test_after_logging_in_only_this_servers_paths_are_followed(asked: str | None,
                                                               went: str) -> None:
    assert safe_next(asked) == went


def test_who_a_token_is_is_asked_once_per_ttl() -> None:
    reviews, clock = FakeReviews({"t": "alice"}), Clock()
    gate = Gate(reviews, ttl_s=10, clock=clock)

    assert gate.who("t") == "alice"
    assert gate.who("t") == "alice"
    assert gate.who("wrong") is None
    assert reviews.asked == [("who", "t"), ("who", "wrong")]

    clock.now += 10  # the answer is trusted for exactly ttl_s
    reviews.users.pop("t")  # revoked meanwhile
    assert gate.who("t") is None


def test_a_kind_listable_everywhere_shows_every_namespace() -> None:
    reviews = FakeReviews({"t": "alice"}, {("t", Ask.listing(PYTORCHJOBS))})
    gate = Gate(reviews, clock=Clock())

    assert gate.visible("t", [(PYTORCHJOBS, "a"), (PYTORCHJOBS, "b"), (TFJOBS, "a")]) == {
        (PYTORCHJOBS, "a"), (PYTORCHJOBS, "b")}


def test_a_kind_listable_in_one_namespace_shows_that_namespace_only() -> None:
    reviews = FakeReviews({"t": "bob"}, {("t", Ask.listing(TFJOBS, "team"))})
    gate = Gate(reviews, clock=Clock())

    assert gate.visible("t", [(TFJOBS, "team"), (TFJOBS, "other"), (PYTORCHJOBS, "team")]) == {
        (TFJOBS, "team")}
    assert not gate.may_list("t", TFJOBS, "")


def test_one_users_permission_is_never_anothers() -> None:
    reviews = FakeReviews({"a": "alice", "b": "bob"}, {("a", Ask.listing(TFJOBS))})
    gate = Gate(reviews, clock=Clock())

    assert gate.may_list("a", TFJOBS, "ns")
    assert not gate.may_list("b", TFJOBS, "ns")


def test_a_session_names_its_token_until_it_ends_or_expires() -> None:
    clock = Clock()
    sessions = Sessions(ttl_s=60, clock=clock)
    first, second = sessions.start("t1"), sessions.start("t2")

    assert first != second
    assert len(first) >= 40  # unguessable: 32 random bytes
    assert (sessions.token(first), sessions.token(second)) == ("t1", "t2")
    assert sessions.token("made-up") is None

    sessions.end(first)
    assert sessions.token(first) is None
    clock.now += 59.9
    assert sessions.token(second) == "t2"
    clock.now += 0.1
    assert sessions.token(second) is None
