"""Faults on demand, for tests and the harness: off unless a plan is given.

A `FaultPlan` is a list of rules and a seed. Each rule picks requests by verb
and resource (plural, `plural/subresource`, or `*`) and answers a share of
them with a fault: `conflict` (409 Conflict), `throttle` (429 TooManyRequests
with a Retry-After header and `details.retryAfterSeconds`), `error` (500
InternalError), `unavailable` (503 ServiceUnavailable), `delay` (the request
is served late), `drop` (the connection closes without an answer, after the
request was served, or in the middle of the answer's body) or `cut-watch` (a
watch stream ends after some events or seconds, and the client resumes).
A rule's `spare_users` are never faulted by it (a harness's own observer, which
must see the truth to judge the run). `FaultInjector.compact_watch_history()`
forgets the stored watch history, so a watch resumed from an earlier
resourceVersion is answered 410 Expired.

Decisions come from a `random.Random(seed)`: the same seed and the same order
of requests give the same faults, so a failing run can be replayed. Only
resource requests are faulted (discovery, OpenAPI, health and metrics never
are). Injected faults are logged at DEBUG level and counted per rule. Without
an injector `build_app` installs nothing: no cost at all.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from loguru import logger

from engine.cluster.apiserver.auth.authorization import INFO_KEY
from engine.cluster.apiserver.auth.identity import USER_KEY
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.endpoints.responses import error_response
from engine.cluster.apiserver.errors import ApiError, conflict, internal
from engine.cluster.apiserver.storage.watch import Watcher, WatchHub

_log = logger.bind(component="apiserver.faults")

ACTIONS = ("conflict", "throttle", "error", "unavailable", "delay", "drop", "cut-watch")
DROP_STAGES = ("before", "after", "mid-body")
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")

_RULE_FIELDS = frozenset({
    "name", "verbs", "resources", "share", "action", "retry_after", "seconds", "stage",
    "after_events", "after_seconds", "spare_users",
})


class FaultPlanError(ValueError):
    """A fault plan that cannot be used; the message names the field."""


@dataclass(frozen=True)
class FaultRule:
    """Which requests (verbs and resources, `*` for any) get which fault, and how often."""

    action: str
    share: float = 1.0
    verbs: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ("*",)
    name: str = ""
    # throttle: the Retry-After seconds.
    retry_after: int = 1
    # delay: how long the request waits before it is served.
    seconds: float = 0.0
    # drop: "before" the request is served, "after" it (the change is made, the answer
    # lost), or "mid-body" (served, the answer's headers and half its body sent).
    stage: str = "before"
    # cut-watch: end the stream after this many events and/or seconds.
    after_events: int | None = None
    after_seconds: float | None = None
    # Requests of these users (by name) never get this rule's fault.
    spare_users: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_rule(self)

    def matches(self, info: RequestInfo, user: str = "") -> bool:
        if not info.resource_request or (user and user in self.spare_users):
            return False
        if "*" not in self.verbs and info.verb not in self.verbs:
            return False
        if self.action == "cut-watch" and info.verb != "watch":
            return False
        return "*" in self.resources or info.resource in self.resources or (
            bool(info.subresource) and info.resource_and_subresource in self.resources)


@dataclass(frozen=True)
class FaultPlan:
    """The rules, tried in order (the first whose share comes up applies), and the seed."""

    rules: tuple[FaultRule, ...] = ()
    seed: int = 0

    @classmethod
    def from_dict(cls, spec: Any) -> FaultPlan:
        """A plan from `{"seed": 1, "rules": [{"action": ..., "share": ..., ...}]}`."""
        if not isinstance(spec, Mapping):
            raise FaultPlanError("fault plan: must be a mapping with 'rules' (and 'seed')")
        unknown = sorted(set(spec) - {"rules", "seed"})
        if unknown:
            raise FaultPlanError(f"fault plan: unknown field {unknown[0]!r}")
        seed = spec.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise FaultPlanError(f"seed: must be an integer, got {seed!r}")
        rules = spec.get("rules", [])
        if not isinstance(rules, list):
            raise FaultPlanError("rules: must be a list")
        return cls(tuple(_rule(item, f"rules[{i}]") for i, item in enumerate(rules)), seed)

    @classmethod
    def load(cls, path: Path | str) -> FaultPlan:
        """A plan from a JSON or YAML file."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise FaultPlanError(f"fault plan {path}: {exc.strerror or exc}") from exc
        try:
            spec = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise FaultPlanError(f"fault plan {path}: not JSON or YAML: {exc}") from exc
        try:
            return cls.from_dict(spec)
        except FaultPlanError as exc:
            raise FaultPlanError(f"fault plan {path}: {exc}") from exc


def _rule(item: Any, where: str) -> FaultRule:
    if not isinstance(item, Mapping):
        raise FaultPlanError(f"{where}: must be a mapping")
    unknown = sorted(set(item) - _RULE_FIELDS)
    if unknown:
        raise FaultPlanError(f"{where}.{unknown[0]}: unknown field")
    if "action" not in item:
        raise FaultPlanError(f"{where}.action: required, one of {', '.join(ACTIONS)}")
    values = dict(item)
    for key in ("verbs", "resources", "spare_users"):
        if key in values:
            value = values[key]
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise FaultPlanError(f"{where}.{key}: must be a list of strings")
            values[key] = tuple(value)
    if values.get("action") == "cut-watch" and "verbs" not in values:
        values["verbs"] = ("watch",)
    try:
        return FaultRule(**values)
    except FaultPlanError as exc:
        raise FaultPlanError(f"{where}.{exc}") from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_rule(rule: FaultRule) -> None:
    if rule.action not in ACTIONS:
        raise FaultPlanError(f"action: {rule.action!r} is not one of {', '.join(ACTIONS)}")
    if not _number(rule.share) or not 0 <= rule.share <= 1:
        raise FaultPlanError(f"share: must be a number from 0 to 1, got {rule.share!r}")
    if not isinstance(rule.name, str):
        raise FaultPlanError("name: must be a string")
    for key in ("verbs", "resources"):
        value = getattr(rule, key)
        if not isinstance(value, tuple) or not value or not all(
                isinstance(v, str) and v for v in value):
            raise FaultPlanError(f"{key}: must be a non-empty list of names (or '*')")
    if not isinstance(rule.spare_users, tuple) or not all(
            isinstance(v, str) and v for v in rule.spare_users):
        raise FaultPlanError("spare_users: must be a list of user names")
    bad = [v for v in rule.verbs if v != "*" and v not in VERBS]
    if bad:
        raise FaultPlanError(f"verbs: unknown verb {bad[0]!r}")
    if rule.action == "throttle" and (isinstance(rule.retry_after, bool) or not isinstance(
            rule.retry_after, int) or rule.retry_after < 0):
        raise FaultPlanError("retry_after: must be a whole number of seconds >= 0")
    if rule.action == "delay" and (not _number(rule.seconds) or rule.seconds <= 0):
        raise FaultPlanError("seconds: a delay needs a number of seconds > 0")
    if rule.action == "drop" and rule.stage not in DROP_STAGES:
        raise FaultPlanError(f"stage: must be one of {', '.join(DROP_STAGES)}")
    if rule.action == "cut-watch":
        if rule.after_events is None and rule.after_seconds is None:
            raise FaultPlanError("after_events: a cut-watch needs after_events "
                                 "and/or after_seconds")
        if rule.after_events is not None and (isinstance(rule.after_events, bool) or
                                              not isinstance(rule.after_events, int) or
                                              rule.after_events < 1):
            raise FaultPlanError("after_events: must be a whole number >= 1")
        if rule.after_seconds is not None and (not _number(rule.after_seconds) or
                                               rule.after_seconds <= 0):
            raise FaultPlanError("after_seconds: must be a number of seconds > 0")


def rule_label(index: int, rule: FaultRule) -> str:
    """How reports name a rule: its name, or its position and action."""
    return rule.name or f"{index}:{rule.action}"


@dataclass(frozen=True)
class Decision:
    """The fault one request gets."""

    label: str
    rule: FaultRule


# The cut-watch rule of the request being served (read when its watcher subscribes).
_WATCH_CUT: contextvars.ContextVar[FaultRule | None] = contextvars.ContextVar(
    "jobmachine_watch_cut", default=None)


@dataclass
class FaultInjector:
    """Decides, per request and from the plan's seed, which fault (if any) a request gets.

    `enabled` and `set_plan` may be changed at any time, from any thread; `injected`
    counts the faults given, by rule label.
    """

    plan: FaultPlan = field(default_factory=FaultPlan)
    enabled: bool = True
    injected: dict[str, int] = field(default_factory=dict)
    decisions: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(self.plan.seed)
        self._hub: WatchHub | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_file(cls, path: Path | str) -> FaultInjector:
        return cls(FaultPlan.load(path))

    def set_plan(self, plan: FaultPlan) -> None:
        """Follow `plan` from now on, its random sequence started afresh from its seed."""
        with self._lock:
            self.plan = plan
            self._random = random.Random(plan.seed)

    def report(self) -> dict[str, Any]:
        """What was injected so far (for a harness report)."""
        with self._lock:
            return {"seed": self.plan.seed, "decisions": self.decisions,
                    "injected": dict(self.injected)}

    def decide(self, info: RequestInfo, user: str = "") -> Decision | None:
        """The fault for `user`'s request, or None. Every matching rule draws one number."""
        if not self.enabled:
            return None
        with self._lock:
            self.decisions += 1
            for index, rule in enumerate(self.plan.rules):
                if not rule.matches(info, user):
                    continue
                if self._random.random() < rule.share:
                    label = rule_label(index, rule)
                    self.injected[label] = self.injected.get(label, 0) + 1
                    return Decision(label, rule)
        return None

    # -- wiring --------------------------------------------------------------------------

    def install(self, app: web.Application, hub: WatchHub) -> Middleware:
        """Bind to the server's watch hub and loop; the middleware to add last (innermost)."""
        self._hub = hub
        hub.on_subscribe(self._on_subscribe)

        async def remember_loop(app: web.Application) -> None:
            self._loop = asyncio.get_running_loop()

        app.on_startup.append(remember_loop)
        return self.middleware()

    def compact_watch_history(self) -> None:
        """Forget the stored watch history: resumed watches get 410 Expired. Safe to call
        from any thread (the work is done on the server's loop)."""
        hub = self._hub
        if hub is None:
            raise RuntimeError("the fault injector is not installed in a server")
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        _log.debug("fault: watch history compacted")
        if loop is None or running is loop or loop.is_closed():
            hub.compact()
            return

        async def compact() -> None:
            hub.compact()

        asyncio.run_coroutine_threadsafe(compact(), loop).result(10)

    def _on_subscribe(self, watcher: Watcher) -> None:
        rule = _WATCH_CUT.get()
        if rule is None:
            return
        if rule.after_events is not None:
            watcher.events_left = rule.after_events
        if rule.after_seconds is not None:
            asyncio.get_running_loop().call_later(rule.after_seconds, watcher.close)

    def middleware(self) -> Middleware:
        @web.middleware
        async def inject_faults(request: web.Request, handler: Handler) -> web.StreamResponse:
            info: RequestInfo | None = request.get(INFO_KEY)
            requester = request.get(USER_KEY)
            user = requester.name if requester is not None else ""
            decision = self.decide(info, user) if info is not None else None
            if decision is None or info is None:
                return await handler(request)
            rule = decision.rule
            _log.debug("fault {} ({}) on {} {}", rule.action, decision.label, request.method,
                       request.path_qs)
            if rule.action == "delay":
                await asyncio.sleep(rule.seconds)
                return await handler(request)
            if rule.action == "cut-watch":
                token = _WATCH_CUT.set(rule)
                try:
                    return await handler(request)
                finally:
                    _WATCH_CUT.reset(token)
            if rule.action == "drop":
                return await _drop(request, handler, rule.stage)
            return _status_answer(rule, info)

        return inject_faults


def _status_answer(rule: FaultRule, info: RequestInfo) -> web.Response:
    if rule.action == "conflict":
        error = conflict(info.api_group, info.resource, info.name,
                         "the object has been modified; please apply your changes to the "
                         "latest version and try again (injected fault)")
    elif rule.action == "throttle":
        error = ApiError(429, "TooManyRequests",
                         "Too many requests, please try again later. (injected fault)",
                         {"retryAfterSeconds": rule.retry_after})
    elif rule.action == "unavailable":
        error = ApiError(503, "ServiceUnavailable",
                         "The server is currently unable to handle the request "
                         "(injected fault)")
    else:
        error = internal("Internal error occurred: injected fault")
    response = error_response(error)
    if rule.action == "throttle":
        response.headers["Retry-After"] = str(rule.retry_after)
    return response


def _close(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.close()  # what was written is still sent, then the connection ends


async def _drop(request: web.Request, handler: Handler, stage: str) -> web.StreamResponse:
    """Close the connection: before serving, after serving, or half-way through the body.
    The response returned is never written (aiohttp ignores the closed connection)."""
    if stage == "before":
        await request.read()  # closing with unread data would reset the connection instead
        _close(request)
        return web.Response(status=500)
    response = await handler(request)
    body = response.body if isinstance(response, web.Response) else None
    if stage == "mid-body" and isinstance(body, bytes) and not response.prepared:
        partial = web.StreamResponse(status=response.status, reason=response.reason,
                                     headers=response.headers)
        partial.content_length = len(body)
        try:
            await partial.prepare(request)
            await partial.write(body[: len(body) // 2])
        except ConnectionError:
            pass
        _close(request)
        return partial
    _close(request)
    return response


def plan_to_json(plan: FaultPlan) -> bytes:
    """The plan as JSON (what `FaultPlan.load` reads back), for a replay file."""
    rules: Sequence[dict[str, Any]] = [
        {k: v for k, v in rule.__dict__.items() if v is not None}
        for rule in plan.rules]
    return orjson.dumps({"seed": plan.seed, "rules": rules}, option=orjson.OPT_INDENT_2)
