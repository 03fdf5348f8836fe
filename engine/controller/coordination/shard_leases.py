"""Shard leases: replicas of the engine share the shards out among themselves.

Each shard is a coordination.k8s.io/v1 Lease (`PREFIX-shard-I`), and each replica keeps a
membership Lease (`PREFIX-member-HASH`) renewed while it lives, so every replica knows how many
there are without talking to the others. Every retry period a replica renews what it holds,
gives back what is over its fair share (the number of shards divided by the live replicas,
rounded up) and takes free shards while under it. The lease rules are client-go's leader
election's, per shard: a lease is taken over only after it was seen unrenewed for its whole
duration (judged by this replica's clock since it last saw the lease change, never the holder's),
every write carries the resourceVersion read, and a holder that could not renew within the
renew deadline stops work on that shard before anyone may take it. A shard given back is first
revoked locally (the reconciles in it finish), then released, so the next holder can take it
at once; a replica killed with -9 loses its shards when their leases expire.

Every lease records the number of shards its writer splits jobs into. Replicas started with a
different number (a changed `--shards` rolling out) take nothing while a live replica or an
unexpired shard lease says otherwise: two different splits at once could give one job to two
replicas.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from loguru import logger

from engine.controller.coordination.leader import micro_time
from engine.controller.coordination.shards import ShardGate
from engine.kube.errors import ApiError, NotFound
from engine.kube.outage import unreachable
from engine.kube.resources import LEASES, Resource
from engine.kube.timestamps import parse_time

GROUP_LABEL = "jobmachine.dev/shard-group"
"""Label on every lease of one sharded engine: they are listed by it."""
ROLE_LABEL = "jobmachine.dev/shard-lease"
"""`member` on a replica's membership lease, `shard` on a shard's."""
SHARD_LABEL = "jobmachine.dev/shard"
"""The shard a shard lease stands for."""
COUNT_ANNOTATION = "jobmachine.dev/shard-count"
"""How many shards the lease's writer splits jobs into."""

_JITTER = 0.2
"""Rounds start retry_period * (1 + up to this) apart, so replicas do not move in lockstep."""


class ShardLeaseClient(Protocol):
    """The part of `KubeClient` the coordinator uses."""

    def list(
        self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]: ...

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...

    def replace(
        self, res: Resource, name: str, body: dict[str, Any], *, namespace: str | None = None,
    ) -> dict[str, Any]: ...

    def delete(
        self, res: Resource, name: str, namespace: str | None = None, *,
        resource_version: str | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class LeaseTimings:
    """client-go's three leader-election durations, applied to every shard lease."""

    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration_s > self.renew_deadline_s > self.retry_period_s > 0:
            raise ValueError("shard leases need lease_duration > renew_deadline > "
                             "retry_period > 0")


@dataclass
class _Seen:
    """A lease as last read, and when (by our clock) its spec last changed."""

    lease: dict[str, Any]
    since: float


class ShardCoordinator:
    """Holds this replica's fair share of the shards; see the module docstring."""

    def __init__(
        self,
        client: ShardLeaseClient,
        gate: ShardGate,
        *,
        namespace: str,
        prefix: str,
        identity: str,
        timings: LeaseTimings = LeaseTimings(),
        on_granted: Callable[[int], None] = lambda _shard: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not identity:
            raise ValueError("sharding needs a non-empty identity")
        self._client = client
        self._gate = gate
        self._namespace = namespace
        self._prefix = prefix
        self._identity = identity
        self._timings = timings
        self._on_granted = on_granted
        self._clock = clock
        self._member = f"{prefix}-member-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"
        self._seen: dict[str, _Seen] = {}
        self._renewed: dict[int, float] = {}
        """Held shard -> when its last successful renewal began."""
        self._waiting_for: set[str] = set()
        self._log = logger.bind(shards=f"{namespace}/{prefix}", identity=identity)

    def lease_name(self, shard: int) -> str:
        """The name of the Lease of `shard`."""
        return f"{self._prefix}-shard-{shard}"

    def run(self, stop: threading.Event) -> None:
        """Keep a fair share of the shards until `stop` is set; then give every one back."""
        self._log.info(f"sharing {self._gate.count} shards with the other replicas")
        try:
            while not stop.is_set():
                self.round()
                stop.wait(self._timings.retry_period_s * (1 + random.uniform(0, _JITTER)))
        finally:
            self.leave()

    def round(self) -> None:
        """One round: read the leases, keep membership, renew, release, give back, take."""
        started = self._clock()
        try:
            items, _ = self._client.list(LEASES, self._namespace,
                                         label_selector=f"{GROUP_LABEL}={self._prefix}")
        except ApiError as exc:
            self._log.log("DEBUG" if unreachable(exc) else "WARNING",
                          f"could not read the shard leases: {exc}")
            self._give_up_overdue(started)
            return
        leases = self._observe(items, started)
        self._keep_membership(leases.get(self._member), started)
        for shard in sorted(self._renewed):
            self._renew(shard, leases.get(self.lease_name(shard)), started)
        members = self._live_members(leases, started)
        self._forget_dead_members(leases, started)
        if self._agreed(leases, members, started):
            target = math.ceil(self._gate.count / max(len(members), 1))
            held = sorted(self._gate.held)
            for shard in held[target:]:
                self._log.info(f"giving back shard {shard}")
                self._gate.close(shard)
            if len(held) < target:
                self._take(leases, target - len(held), started)
        self._release_idle()

    def leave(self) -> None:
        """Give back every shard and end the membership.

        No new reconcile starts in any shard; each lease is released once the reconciles in
        its shard have finished, and renewed meanwhile. Whatever is still busy after the
        renew deadline is left to expire instead.
        """
        for shard in sorted(self._gate.held):
            self._gate.close(shard)
        deadline = self._clock() + self._timings.renew_deadline_s
        self._release_idle()
        while self._renewed and self._clock() < deadline:
            self._gate.wait_idle(list(self._renewed), self._timings.retry_period_s)
            now = self._clock()
            for shard in sorted(self._renewed):
                if self._gate.busy(shard):
                    seen = self._seen.get(self.lease_name(shard))
                    self._renew(shard, seen.lease if seen else None, now)
            self._release_idle()
        seen = self._seen.get(self._member)
        if seen is not None:
            try:
                self._client.delete(LEASES, self._member, self._namespace,
                                    resource_version=seen.lease["metadata"]["resourceVersion"])
            except ApiError as exc:
                self._log.debug(f"could not delete the membership lease: {exc}")

    def _observe(self, items: list[dict[str, Any]], now: float) -> dict[str, dict[str, Any]]:
        leases = {item["metadata"]["name"]: item for item in items}
        for name in [n for n in self._seen if n not in leases]:
            del self._seen[name]
        for name, lease in leases.items():
            seen = self._seen.get(name)
            if seen is None or (seen.lease.get("spec") or {}) != (lease.get("spec") or {}):
                self._seen[name] = _Seen(lease, now)
            else:
                seen.lease = lease
        return leases

    def _expired(self, name: str, now: float) -> bool:
        """Whether the lease has no holder, or was seen unchanged for its whole duration (a
        lease not seen yet, or gone since, is never judged expired)."""
        seen = self._seen.get(name)
        if seen is None:
            return False
        spec = seen.lease.get("spec") or {}
        if not spec.get("holderIdentity"):
            return True
        duration = float(spec.get("leaseDurationSeconds") or self._timings.lease_duration_s)
        return now >= seen.since + duration

    def _keep_membership(self, lease: dict[str, Any] | None, now: float) -> None:
        spec = self._spec(now)
        if lease is None:
            self._write_new(self._member, {ROLE_LABEL: "member"}, spec, now)
        else:
            self._write(lease, spec, now)

    def _renew(self, shard: int, lease: dict[str, Any] | None, now: float) -> None:
        """Renew a shard lease we hold; stop working on the shard when it was taken from us or
        could not be renewed within the renew deadline."""
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
        if lease is None or holder != self._identity:
            self._lose(shard, f"the lease was taken from us ({holder!r})")
        elif self._write(lease, {**lease["spec"], **self._spec(now)}, now):
            self._renewed[shard] = now
        elif now - self._renewed[shard] >= self._timings.renew_deadline_s:
            self._lose(shard, "could not renew within the renew deadline")

    def _give_up_overdue(self, now: float) -> None:
        for shard in sorted(self._renewed):
            if now - self._renewed[shard] >= self._timings.renew_deadline_s:
                self._lose(shard, "could not renew within the renew deadline")

    def _lose(self, shard: int, why: str) -> None:
        """Stop work on a shard whose lease is no longer ours to renew or release."""
        self._log.error(f"shard {shard}: {why}; stopping work on it")
        self._gate.close(shard)
        del self._renewed[shard]

    def _live_members(self, leases: Mapping[str, dict[str, Any]], now: float) -> list[str]:
        """The replicas alive, ourselves included. A membership lease counts until it expires
        as observed, and no longer than its renewTime says by our clock: a replica that just
        started has not watched a dead member's lease for a whole duration yet, and counting
        it would keep the shares too small (only the shares depend on this, never safety)."""
        members = [name for name, lease in leases.items()
                   if _labels(lease).get(ROLE_LABEL) == "member"
                   and not self._expired(name, now) and not _stale(lease, now)]
        if self._member not in members:
            members.append(self._member)
        return members

    def _forget_dead_members(self, leases: Mapping[str, dict[str, Any]], now: float) -> None:
        """Delete membership leases unrenewed for twice their duration (their replicas died
        without leaving), so killed replicas leave no objects behind."""
        for name, lease in leases.items():
            if _labels(lease).get(ROLE_LABEL) != "member" or name == self._member:
                continue
            duration = float((lease.get("spec") or {}).get("leaseDurationSeconds")
                             or self._timings.lease_duration_s)
            seen = self._seen.get(name)
            if seen is None or now < seen.since + 2 * duration:
                continue
            try:
                self._client.delete(LEASES, name, self._namespace,
                                    resource_version=lease["metadata"]["resourceVersion"])
            except ApiError as exc:
                self._log.debug(f"could not delete the dead member's lease {name}: {exc}")

    def _agreed(
        self, leases: Mapping[str, dict[str, Any]], members: list[str], now: float
    ) -> bool:
        """Whether every live lease of the group splits jobs into as many shards as we do."""
        live = set(members) | {name for name in leases
                               if name != self._member and not self._expired(name, now)}
        others = {name for name in live if name in leases
                  and _annotations(leases[name]).get(COUNT_ANNOTATION) != str(self._gate.count)}
        if others != self._waiting_for:
            self._waiting_for = others
            if others:
                self._log.warning(f"not taking shards: live leases {sorted(others)} split jobs "
                                  f"otherwise than into {self._gate.count} shards (a rollout "
                                  "of a new --shards?); waiting for them to end")
        return not others

    def _take(self, leases: Mapping[str, dict[str, Any]], wanted: int, now: float) -> None:
        start = random.randrange(self._gate.count)
        order = [(start + i) % self._gate.count for i in range(self._gate.count)]
        for shard in order:
            if wanted == 0:
                return
            if shard in self._renewed:
                continue
            name = self.lease_name(shard)
            lease = leases.get(name)
            spec = {**self._spec(now), "acquireTime": micro_time(now)}
            if lease is None:
                taken = self._write_new(name, {ROLE_LABEL: "shard", SHARD_LABEL: str(shard)},
                                        {**spec, "leaseTransitions": 0}, now)
            elif self._expired(name, now):
                transitions = int((lease.get("spec") or {}).get("leaseTransitions") or 0)
                taken = self._write(lease, {**spec, "leaseTransitions": transitions + 1}, now)
            else:
                continue
            if taken:
                self._renewed[shard] = now
                self._gate.grant(shard)
                wanted -= 1
                self._log.info(f"took shard {shard}")
                try:
                    self._on_granted(shard)
                except Exception:
                    self._log.exception(f"shard {shard}: queueing its jobs failed; the "
                                        "periodic resync queues them")

    def _release_idle(self) -> None:
        """Release the leases of shards given back whose reconciles have all finished, so the
        next holder can take them at once."""
        for shard in sorted(set(self._renewed) - self._gate.held):
            if self._gate.busy(shard):
                continue
            del self._renewed[shard]
            seen = self._seen.get(self.lease_name(shard))
            if seen is None or (seen.lease.get("spec") or {}).get("holderIdentity") != \
                    self._identity:
                continue
            now = self._clock()
            released = {**seen.lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1,
                        "renewTime": micro_time(now)}
            if self._write(seen.lease, released, now):
                self._log.info(f"gave back shard {shard}")

    def _spec(self, now: float) -> dict[str, Any]:
        return {
            "holderIdentity": self._identity,
            "leaseDurationSeconds": max(1, math.ceil(self._timings.lease_duration_s)),
            "renewTime": micro_time(now),
        }

    def _write_new(
        self, name: str, labels: Mapping[str, str], spec: dict[str, Any], now: float
    ) -> bool:
        body = {"apiVersion": LEASES.api_version, "kind": LEASES.kind,
                "metadata": {"name": name, "namespace": self._namespace,
                             "labels": {GROUP_LABEL: self._prefix, **labels},
                             "annotations": {COUNT_ANNOTATION: str(self._gate.count)}},
                "spec": spec}
        try:
            created = self._client.create(LEASES, body, self._namespace)
        except ApiError as exc:
            self._log.debug(f"could not create lease {name}: {exc}")
            return False
        self._seen[name] = _Seen(created, now)
        return True

    def _write(self, lease: dict[str, Any], spec: dict[str, Any], now: float) -> bool:
        """Replace `lease` as read (its resourceVersion is the precondition) with `spec`, and
        our shard count."""
        name = lease["metadata"]["name"]
        metadata = dict(lease["metadata"])
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   COUNT_ANNOTATION: str(self._gate.count)}
        try:
            written = self._client.replace(LEASES, name, {**lease, "metadata": metadata,
                                                          "spec": spec},
                                           namespace=self._namespace)
        except NotFound:
            self._seen.pop(name, None)
            return False
        except ApiError as exc:
            self._log.debug(f"could not write lease {name}: {exc}")
            return False
        self._seen[name] = _Seen(written, now)
        return True


def _stale(lease: Mapping[str, Any], now: float) -> bool:
    """Whether the lease's own renewTime is more than its duration ago."""
    spec = lease.get("spec") or {}
    renewed = spec.get("renewTime")
    if not renewed:
        return True
    return now > parse_time(str(renewed)).timestamp() + float(spec.get("leaseDurationSeconds") or 0)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj["metadata"].get("labels") or {}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj["metadata"].get("annotations") or {}
