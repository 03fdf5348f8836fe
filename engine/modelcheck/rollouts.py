"""`jobmachine check` of a machine's rollout (spec.rollout): every order of events, for
small shapes, against the Deployment controller's promises.

A shape is a job of the machine's kind (replicas 1-4; RollingUpdate with a few maxSurge
and maxUnavailable values, left out, numbers, percentages and 0/0, or Recreate), written
the way apps/v1 Deployment spells it. Its rollout is rendered through the machine's own
rollout CEL and planned by the engine's planner (engine/controller/rollouts/plan.py), but
the bounds are worked out here from what the job says, as the API documents them: a
machine whose rollout reads the wrong field breaks a bound.

The exploration starts from a fully available old revision and a changed template. A
situation is, per revision oldest first, (name, pods wanted, pods, available pods); its
ReplicaSets make a missing pod, see one become available, or delete a surplus one (the
not available first), one at a time in any order; after each event the plan runs until
it changes nothing, as the engine reconciles after each watch event. The rules:

- rollout-surge: the pods the revisions want never exceed replicas + maxSurge;
- rollout-unavailable: available pods never drop below replicas - maxUnavailable;
- rollout-dead-end: from every situation the rollout can still complete (the new
  revision wants, has and has available every replica; the old ones want and have none);
- recreate-overlap: under Recreate, pods of two revisions never exist at once;
- rollout-never-settles: the plan settles after every event;
- rollout-expression: the rollout's values can be rendered for the shape.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engine.controller.rollouts.plan import RolloutInput, plan_rollout
from engine.controller.rollouts.revisions import (
    REVISION_ANNOTATION,
    Create,
    Revision,
    Update,
)
from engine.definition import CompiledDefinition, RenderedRollout, render_rollout
from engine.definition.cel import CelEvaluationError

Situation = tuple[tuple[str, int, int, int], ...]
"""Per revision, oldest first: (name, pods wanted, pods, available pods)."""

OLD, NEW = "old", "new"
_NOW = datetime(2026, 1, 1, tzinfo=UTC)
_SETTLE_LIMIT = 20
_IntOrPercent = int | str | None


@dataclass(frozen=True)
class RolloutShape:
    """One job the rollout is explored for. None: the field left out of the job."""

    replicas: int
    strategy: str
    max_surge: _IntOrPercent = None
    max_unavailable: _IntOrPercent = None

    def __str__(self) -> str:
        if self.strategy != "RollingUpdate":
            return f"replicas {self.replicas}, {self.strategy}"
        surge = "default" if self.max_surge is None else self.max_surge
        unavailable = "default" if self.max_unavailable is None else self.max_unavailable
        return (f"replicas {self.replicas}, RollingUpdate maxSurge {surge} "
                f"maxUnavailable {unavailable}")

    def job(self, definition: CompiledDefinition) -> dict[str, Any]:
        """The job of the machine's kind in this shape, with a changed pod template."""
        strategy: dict[str, Any] = {"type": self.strategy}
        rolling = {key: value for key, value in (("maxSurge", self.max_surge),
                                                 ("maxUnavailable", self.max_unavailable))
                   if value is not None}
        if rolling:
            strategy["rollingUpdate"] = rolling
        return {
            "apiVersion": definition.governs.api_version, "kind": definition.governs.kind,
            "metadata": {"name": "checked", "namespace": "check", "uid": "uid-checked",
                         "generation": 2},
            "spec": {
                "replicas": self.replicas, "selector": {"matchLabels": {"app": "checked"}},
                "strategy": strategy,
                "template": {"metadata": {"labels": {"app": "checked"}}, "spec": {
                    "containers": [{"name": "main", "image": "example/check:2"}]}},
            },
        }

    def bounds(self) -> tuple[int, int]:
        """(most pods wanted, fewest available), as the API documents them: the values'
        defaults 25%, a percentage of replicas with the surge rounded up and the
        unavailable down, both 0 making the unavailable 1; Recreate wants no more than
        the replicas and may have none available."""
        if self.strategy != "RollingUpdate":
            return self.replicas, 0
        surge = _resolve("25%" if self.max_surge is None else self.max_surge,
                         self.replicas, up=True)
        unavailable = _resolve("25%" if self.max_unavailable is None else self.max_unavailable,
                               self.replicas, up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return self.replicas + surge, self.replicas - min(unavailable, self.replicas)


def _resolve(value: int | str, replicas: int, *, up: bool) -> int:
    if isinstance(value, int):
        return value
    scaled = int(value.rstrip("%")) * replicas
    return -(-scaled // 100) if up else scaled // 100


_PAIRS: tuple[tuple[_IntOrPercent, _IntOrPercent], ...] = (
    (None, None), (1, 0), (0, 1), (2, 1), ("50%", "50%"), (0, 0), (3, 0))


def rollout_shapes() -> Iterator[RolloutShape]:
    """Replicas 1-4: RollingUpdate with each pair of values, and Recreate."""
    for replicas in range(1, 5):
        for surge, unavailable in _PAIRS:
            yield RolloutShape(replicas, "RollingUpdate", surge, unavailable)
        yield RolloutShape(replicas, "Recreate")


@dataclass(frozen=True)
class RolloutViolation:
    """A broken rule: which, what, the shape, and the events from the start that break it."""

    rule: str
    message: str
    shape: RolloutShape
    trace: tuple[str, ...]


@dataclass
class RolloutReport:
    """What checking a machine's rollout found."""

    shapes: int = 0
    situations: int = 0
    violations: list[RolloutViolation] = field(default_factory=list)


def check_rollout(definition: CompiledDefinition) -> RolloutReport:
    """Every shape of the machine's rollout explored; per broken rule, the shortest trace
    of all shapes (the search is breadth first: each shape's first is its shortest)."""
    assert definition.rollout is not None
    report = RolloutReport()
    for shape in rollout_shapes():
        report.shapes += 1
        try:
            rollout = render_rollout(definition.rollout, {"job": shape.job(definition)})
        except CelEvaluationError as error:
            report.violations.append(RolloutViolation("rollout-expression", str(error),
                                                      shape, ()))
            continue
        situations, violations = explore_shape(shape, rollout)
        report.situations += situations
        report.violations += violations
    shortest: dict[str, RolloutViolation] = {}
    for violation in report.violations:
        known = shortest.get(violation.rule)
        if known is None or len(violation.trace) < len(known.trace):
            shortest[violation.rule] = violation
    report.violations = sorted(shortest.values(), key=lambda v: (len(v.trace), v.rule))
    return report


def explore_shape(shape: RolloutShape, rollout: RenderedRollout
                  ) -> tuple[int, list[RolloutViolation]]:
    """One shape's rollout, as `rollout` renders it, explored: the situations found, and
    the first break of each rule."""
    explorer = _Explorer(shape, rollout)
    situations = explorer.run()
    return situations, explorer.violations


def _revision(entry: tuple[str, int, int, int], order: int, template: Any) -> Revision:
    """A revision as the ReplicaSet machine writes its status: the pods it keeps (a
    surplus pod, deleted not-available first, is not counted once it has seen its spec)."""
    name, wanted, pods, available = entry
    return Revision.of({
        "metadata": {"name": name, "uid": name, "creationTimestamp": f"t{order}",
                     "resourceVersion": "1", "generation": 1,
                     "annotations": {REVISION_ANNOTATION: str(order + 1)}},
        "spec": {"replicas": wanted, "template": template},
        "status": {"replicas": min(pods, wanted), "availableReplicas": min(available, wanted),
                   "readyReplicas": min(available, wanted), "observedGeneration": 1},
    }, running_pods=pods)


class _NeverSettlesError(Exception):
    """The plan kept changing the revisions after an event."""


class _Explorer:
    """Breadth-first search of one shape's situations."""

    def __init__(self, shape: RolloutShape, rollout: RenderedRollout) -> None:
        self.shape = shape
        self.rollout = rollout
        old_template = copy.deepcopy(dict(rollout.template))
        metadata = dict(old_template.get("metadata") or {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   "check.jobmachine.dev/revision": OLD}
        old_template["metadata"] = metadata
        self.templates = {OLD: old_template, NEW: rollout.template}
        self.job = {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "checked", "namespace": "check", "uid": "uid-checked",
                                 "generation": 2}}
        self.most, self.least = shape.bounds()
        self.violations: list[RolloutViolation] = []
        self.broken: set[str] = set()
        self.parent: dict[Situation, tuple[Situation, str] | None] = {}

    def run(self) -> int:
        """Explore; the situations found."""
        replicas = self.shape.replicas
        first = ((OLD, replicas, replicas, replicas),)
        try:
            start = self.settle(first)
        except _NeverSettlesError as error:
            self.break_rule("rollout-never-settles", str(error), first)
            return 1
        self.parent[start] = None
        queue = deque([start])
        edges: dict[Situation, list[Situation]] = {}
        while queue:
            situation = queue.popleft()
            self.judge(situation)
            edges[situation] = []
            for after, words in self.events(situation):
                try:
                    settled = self.settle(after)
                except _NeverSettlesError as error:
                    self.break_rule("rollout-never-settles", str(error), situation, words)
                    continue
                edges[situation].append(settled)
                if settled not in self.parent:
                    self.parent[settled] = (situation, words)
                    queue.append(settled)
        self.judge_completion(edges)
        return len(self.parent)

    def settle(self, situation: Situation) -> Situation:
        """The plan run until it changes nothing: its creates and scalings applied."""
        for _ in range(_SETTLE_LIMIT):
            children = [_revision(entry, i, self.templates[entry[0]])
                        for i, entry in enumerate(situation)]
            plan = plan_rollout(RolloutInput(job=self.job, stored={}, children=children,
                                             rollout=self.rollout, now=_NOW))
            wanted = {n: w for n, w, _, _ in situation}
            for operation in plan.operations:
                if isinstance(operation, Create):
                    wanted[NEW] = operation.replicas
                elif isinstance(operation, Update):
                    wanted[operation.name] = operation.replicas
            after = tuple((n, wanted[n], p, a) for n, _, p, a in situation)
            if NEW in wanted and all(n != NEW for n, *_ in situation):
                after = (*after, (NEW, wanted[NEW], 0, 0))
            if after == situation:
                return situation
            situation = after
        raise _NeverSettlesError(f"the plan still changes the revisions after {_SETTLE_LIMIT} "
                            f"syncs ({_words(situation)})")

    @staticmethod
    def events(situation: Situation) -> Iterator[tuple[Situation, str]]:
        """What a ReplicaSet can do next, one pod at a time."""
        for i, (name, wanted, pods, available) in enumerate(situation):
            changed: list[tuple[int, int, str]] = []
            if pods < wanted:
                changed.append((pods + 1, available, f"ReplicaSet {name} makes a pod"))
            if available < pods:
                changed.append((pods, available + 1, f"a pod of {name} becomes available"))
            if pods > wanted:
                changed.append((pods - 1, available if available < pods else available - 1,
                                f"ReplicaSet {name} deletes a pod"))
            for pods_after, available_after, words in changed:
                yield ((*situation[:i], (name, wanted, pods_after, available_after),
                        *situation[i + 1:]), words)

    def judge(self, situation: Situation) -> None:
        wanted = sum(w for _, w, _, _ in situation)
        available = sum(a for *_, a in situation)
        if wanted > self.most:
            self.break_rule("rollout-surge", f"the revisions want {wanted} pods, more than "
                            f"replicas + maxSurge = {self.most}", situation)
        if available < self.least:
            self.break_rule("rollout-unavailable", f"{available} pods available, fewer than "
                            f"replicas - maxUnavailable = {self.least}", situation)
        if (self.shape.strategy == "Recreate"
                and sum(1 for _, _, pods, _ in situation if pods > 0) > 1):
            self.break_rule("recreate-overlap", "pods of two revisions exist at once",
                            situation)

    def judge_completion(self, edges: dict[Situation, list[Situation]]) -> None:
        """From every situation a complete rollout stays reachable."""
        replicas = self.shape.replicas
        reaching = {s for s in edges if s[-1] == (NEW, replicas, replicas, replicas)
                    and all(w == p == 0 for n, w, p, _ in s if n != NEW)}
        grown = True
        while grown:
            more = {s for s in edges.keys() - reaching if any(e in reaching for e in edges[s])}
            reaching |= more
            grown = bool(more)
        stuck = sorted(edges.keys() - reaching, key=lambda s: len(self.trace(s)))
        if stuck:
            self.break_rule("rollout-dead-end", "the rollout can no longer complete",
                            stuck[0])

    def break_rule(self, rule: str, message: str, situation: Situation,
                   last: str | None = None) -> None:
        if rule in self.broken:
            return
        self.broken.add(rule)
        trace = self.trace(situation)
        if last is not None:
            trace += (last,)
        self.violations.append(RolloutViolation(
            rule, f"{message} ({_words(situation)})", self.shape, trace))

    def trace(self, situation: Situation) -> tuple[str, ...]:
        """The events from the start to the situation, each with the revisions after it."""
        steps: list[str] = []
        found = self.parent.get(situation)
        at = situation
        while found is not None:
            before, words = found
            steps.append(f"{words}: {_words(at)}")
            at = before
            found = self.parent.get(before)
        steps.append(f"the template changes: {_words(at)}")
        return tuple(reversed(steps))


def _words(situation: Situation) -> str:
    return "; ".join(f"{name} wants {wanted}, has {pods}, {available} available"
                     for name, wanted, pods, available in situation)


PATH_SHAPE = RolloutShape(3, "RollingUpdate")
"""The rollout `jobmachine graph --rollout` draws: 3 replicas, upstream's 25% defaults."""


def rollout_path(definition: CompiledDefinition, shape: RolloutShape = PATH_SHAPE
                 ) -> list[tuple[str, Situation]]:
    """One order of a rollout from start to completion, as (event, situation after it)
    pairs, the first 'the template changes': each time the first thing a ReplicaSet can
    do, oldest revision first (make a pod, see one become available, delete a surplus
    one), the plan settled after each. Raises ValueError when that order does not
    complete (check reports which rule breaks)."""
    assert definition.rollout is not None
    rollout = render_rollout(definition.rollout, {"job": shape.job(definition)})
    explorer = _Explorer(shape, rollout)
    replicas = shape.replicas
    situation = explorer.settle(((OLD, replicas, replicas, replicas),))
    path = [("the template changes", situation)]
    done = (NEW, replicas, replicas, replicas)
    while not (situation[-1] == done and all(w == p == 0 for n, w, p, _ in situation
                                             if n != NEW)):
        following = next(explorer.events(situation), None)
        if following is None or len(path) > _PATH_LIMIT:
            raise ValueError(f"the rollout ({shape}) stops before it completes, at "
                             f"{_words(situation)}: `jobmachine check` says why")
        after, words = following
        situation = explorer.settle(after)
        path.append((words, situation))
    return path


_PATH_LIMIT = 200
