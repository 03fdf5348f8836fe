"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules and timings.

With several engines on one cluster only the holder of the Lease may act (field notes, story 9).
A candidate takes a lease over only after seeing it unrenewed for its whole duration, every write
carries the resourceVersion it read (a Conflict means someone else won), and a leader that could
not renew within its renew deadline stops all work before anyone can take its place.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from loguru import logger

from engine.kube.errors import ApiError, NotFound
from engine.kube.outage import unreachable
from engine.kube.resources import LEASES, Resource

_JITTER = 1.2
"""Candidates wait retry_period * (1 + up to this) between attempts (client-go's JitterFactor)."""


class LeaseClient(Protocol):
    """The part of `KubeClient` the elector uses."""

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...

    def replace(
        self, res: Resource, name: str, body: dict[str, Any], *, namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


def micro_time(at: float) -> str:
    """metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaigns for one Lease and keeps it while this process leads.

    `clock` gives seconds since the epoch; lease times are written from it and expiry is judged
    by it, always against when this process last saw the lease change (never against the
    holder's clock), as client-go does.
    """

    def __init__(
        self,
        client: LeaseClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration_s: float = 15,
        renew_deadline_s: float = 10,
        retry_period_s: float = 2,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not lease_duration_s > renew_deadline_s > retry_period_s > 0:
            raise ValueError(
                "leader election needs lease_duration > renew_deadline > retry_period > 0"
            )
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        self._client = client
        self._namespace = namespace
        self._name = name
        self._identity = identity
        self._lease_duration_s = lease_duration_s
        self._renew_deadline_s = renew_deadline_s
        self._retry_period_s = retry_period_s
        self._clock = clock
        self._lease: dict[str, Any] | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._leading = False
        self._log = logger.bind(lease=f"{namespace}/{name}", identity=identity)

    @property
    def is_leader(self) -> bool:
        """Whether this process holds the lease (and has not decided to give it up)."""
        return self._leading

    def run(
        self,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        """Campaign, lead until the lease is lost or `stop` is set, then return.

        `on_started_leading` runs on its own thread so a slow start never delays renewals.
        When leadership ends, `on_stopped_leading` is called once `on_started_leading` has
        returned, and before this returns; on `stop` it is called before the lease is released,
        so no work of ours overlaps the next leader's.
        """
        if not self._acquire(stop):
            return
        starter = threading.Thread(
            target=_guarded(on_started_leading, "on_started_leading"),
            name="leader-started", daemon=True,
        )
        starter.start()
        lost = not self._keep_renewing(stop)
        self._leading = False
        if lost:
            self._log.error("lost the lease: stopping all work")
        starter.join()
        _guarded(on_stopped_leading, "on_stopped_leading")()
        if not lost:
            self._release()

    def _acquire(self, stop: threading.Event) -> bool:
        """Try until this process holds the lease (True) or `stop` is set (False)."""
        self._log.info("campaigning for the lease")
        while not stop.is_set():
            if self._try_acquire_or_renew():
                self._leading = True
                self._log.info("became the leader")
                return True
            if stop.wait(self._retry_period_s * (1 + random.uniform(0, _JITTER))):
                break
        return False

    def _keep_renewing(self, stop: threading.Event) -> bool:
        """Renew every retry period; False once renewal failed for the renew deadline."""
        while not stop.is_set():
            deadline = self._clock() + self._renew_deadline_s
            while not self._try_acquire_or_renew():
                if self._observed_holder() != self._identity:
                    return False
                if self._clock() >= deadline:
                    return False
                if stop.wait(self._retry_period_s):
                    return True
            if stop.wait(self._retry_period_s):
                return True
        return True

    def _try_acquire_or_renew(self) -> bool:
        """One attempt to create, take over or renew the lease; True if we hold it now."""
        now = self._clock()
        try:
            lease = self._client.get(LEASES, self._name, self._namespace)
        except NotFound:
            return self._create(now)
        except ApiError as exc:
            self._log.log("DEBUG" if unreachable(exc) else "WARNING",
                          "could not read the lease: {}", exc)
            return False
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec, self._observed_at = spec, now
        holder = spec.get("holderIdentity") or ""
        ours = holder == self._identity
        if holder and not ours and not self._expired(spec, now):
            return False
        renewed = {
            **self._spec(now),
            "acquireTime": spec.get("acquireTime") if ours else micro_time(now),
            "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (0 if ours else 1),
        }
        if not ours:
            self._log.info("taking over the lease from {!r}", holder)
        return self._write({**lease, "spec": renewed}, now)

    def _create(self, now: float) -> bool:
        body = {
            "apiVersion": LEASES.api_version, "kind": LEASES.kind,
            "metadata": {"name": self._name, "namespace": self._namespace},
            "spec": {**self._spec(now), "acquireTime": micro_time(now), "leaseTransitions": 0},
        }
        try:
            created = self._client.create(LEASES, body, self._namespace)
        except ApiError as exc:
            self._log.debug("could not create the lease: {}", exc)
            return False
        self._remember(created, now)
        return True

    def _write(self, lease: dict[str, Any], now: float) -> bool:
        """Replace the lease as read (its resourceVersion is the precondition)."""
        try:
            written = self._client.replace(LEASES, self._name, lease, namespace=self._namespace)
        except ApiError as exc:
            self._log.debug("could not write the lease: {}", exc)
            return False
        self._remember(written, now)
        return True

    def _release(self) -> None:
        """Give the lease up at once, so a standby need not wait for it to expire."""
        if self._lease is None or self._observed_holder() != self._identity:
            return
        now = self._clock()
        spec = self._lease.get("spec") or {}
        released = {
            "holderIdentity": "", "leaseDurationSeconds": 1,
            "acquireTime": micro_time(now), "renewTime": micro_time(now),
            "leaseTransitions": int(spec.get("leaseTransitions") or 0),
        }
        try:
            self._client.replace(
                LEASES, self._name, {**self._lease, "spec": released}, namespace=self._namespace
            )
        except ApiError as exc:
            self._log.warning("could not release the lease: {}", exc)
            return
        self._log.info("released the lease")

    def _spec(self, now: float) -> dict[str, Any]:
        return {
            "holderIdentity": self._identity,
            "leaseDurationSeconds": max(1, math.ceil(self._lease_duration_s)),
            "renewTime": micro_time(now),
        }

    def _expired(self, spec: dict[str, Any], now: float) -> bool:
        duration = spec.get("leaseDurationSeconds") or self._lease_duration_s
        return now >= self._observed_at + float(duration)

    def _remember(self, lease: dict[str, Any], now: float) -> None:
        self._lease = lease
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = now

    def _observed_holder(self) -> str:
        return str((self._observed_spec or {}).get("holderIdentity") or "")


def _guarded(callback: Callable[[], None], what: str) -> Callable[[], None]:
    """`callback`, logging instead of raising: a failing callback must not end the election."""

    def call() -> None:
        try:
            callback()
        except Exception:
            logger.exception(f"leader election callback {what} failed")

    return call
