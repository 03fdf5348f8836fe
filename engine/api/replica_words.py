"""What a replica is, in words: its machine's last state and, where its pod says otherwise,
what the pod says; after the job's end, that its machine stopped short of an end.

The replica machines stop where they are when the job ends, so a replica can stay
`Running` in the record while the clean-pod policy deleted its pod. Every reader says
that the same way, with this one function: the web view's replica rows, the job's status
(`replicaStatuses.<type>.unfinished`, which `kubectl describe` prints) and the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass

STOPPED = "Stopped"
"""The tone (badge colour) of a replica whose machine stopped short at the job's end, or
whose pod no longer runs."""

_POD_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed"})
_LIVE_PHASES = frozenset({"Pending", "Running"})


@dataclass(frozen=True)
class ReplicaWords:
    """A replica's state as it is true now, and the state whose colour it is shown in."""

    text: str
    tone: str


def pod_words(phase: str | None, noun: str = "pod") -> str:
    """`pod Running`, or `pod deleted` for a replica that has no pod now (`noun`: what a
    replica's own object is, a pod or the kind of a machine's spec.child)."""
    return f"{noun} deleted" if phase is None else f"{noun} {phase}"


def replica_words(state: str, phase: str | None, *, job_ended: bool, ended: bool,
                  noun: str = "pod") -> ReplicaWords:
    """The words for a replica in `state` whose pod is in `phase` (None: it has none).

    `ended`: whether `state` is an end of the replica machine; `job_ended`: whether the
    job's machine is at an end. A replica that did not reach an end before its job did says
    so, `Running, stopped at job end (pod deleted)`; while the job runs, a state named like
    a pod phase that its pod contradicts says what the pod says, `Running (pod Succeeded)`.
    """
    if not state or ended:
        return ReplicaWords(state, state)
    pod = pod_words(phase, noun)
    if job_ended:
        return ReplicaWords(f"{state}, stopped at job end ({pod})", STOPPED)
    if state in _POD_PHASES and phase != state:
        return ReplicaWords(f"{state} ({pod})", state if phase in _LIVE_PHASES else STOPPED)
    return ReplicaWords(state, state)
