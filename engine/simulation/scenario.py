"""What a simulation scenario says: a job, the machine that runs it, and the outside facts.

The models are the scenario file's shape only; `engine/simulation/loading.py` reads a
file into them with the machine loader's positions, so every problem is reported as
FILE:LINE:COL, and `engine/simulation/run.py` plays them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from engine.definition.durations import parse_duration

POD_FACTS = ("exits", "deleted", "evicted", "lost", "starts")
"""Facts about one replica's pod: they need `replica`."""
JOB_FACTS = ("nodeLost", "suspend", "patch")
"""Facts about the job or the whole node."""
PATCHABLE = ("metadata", "spec")


def _seconds(value: Any) -> float:
    seconds = None
    if isinstance(value, float) and value >= 0:
        seconds = value
    elif isinstance(value, str | int):
        seconds = parse_duration(value)
    if seconds is None:
        raise ValueError(f"{value!r} is not a duration: write 500ms, 5s, 10m, 1h30m or whole "
                         "seconds")
    return seconds


def _seconds_or_never(value: Any) -> float | None:
    return None if value == "never" else _seconds(value)


Duration = Annotated[float, BeforeValidator(_seconds)]
"""Seconds, written as a duration (`5s`, `10m`, `1h30m`) or whole seconds."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class PodTiming(_Strict):
    """How long the cluster takes with the pods the engine creates and deletes."""

    start_after: Annotated[float | None, BeforeValidator(_seconds_or_never)] = Field(
        default=1.0, alias="startAfter")
    """From creation to the main container running; None (`never`): it stays Pending
    (an image that never pulls, a node that never fits), unless a fact starts it."""
    gone_after: Duration = Field(default=1.0, alias="goneAfter")
    """From the start of a deletion to the pod being gone (its grace period)."""
    succeed_after: Annotated[float | None, BeforeValidator(_seconds_or_never)] = Field(
        default=None, alias="succeedAfter")
    """From the main container running to it exiting 0 by itself; None (`never`, the
    default): it runs until a fact ends it. A pool's many members need no fact each."""


class Fact(_Strict):
    """One outside fact at `at` (time from the job's creation); none at all: time passes."""

    at: Duration
    replica: str | None = None
    """Whose pod a pod fact is about: `Worker-1`; a pod of a child's own machine by the path
    of replicas down to it: `workers-0/Job-1` (the Job of the JobSet's replica workers-0,
    its replica Job-1)."""
    exits: Annotated[int, Field(ge=0, le=255)] | None = None
    """The pod's main container ends with this exit code."""
    reason: str | None = None
    """With `exits`: the container's termination reason (`OOMKilled`; default Error or
    Completed), which failure rules `onReasons` match."""
    deleted: Literal[True] | None = None
    """Someone (a user, a controller) deletes the pod."""
    evicted: Literal[True] | None = None
    """The Eviction API deletes the pod (a drain): it gets the condition DisruptionTarget
    (reason EvictionByEvictionAPI), which failure rules `onPodConditions` match."""
    lost: Literal[True] | None = None
    """The pod's node is lost: the pod still says Running on a node that is not Ready."""
    starts: Literal[True] | None = None
    """A Pending pod's main container starts (with `pods: {startAfter: never}`)."""
    node_lost: Literal[True] | None = Field(default=None, alias="nodeLost")
    """The node is lost with every pod on it."""
    suspend: bool | None = None
    """The job's runPolicy.suspend is set to this."""
    patch: dict[str, Any] | None = None
    """A JSON merge patch of the job's metadata and spec (RFC 7386: null deletes)."""

    @property
    def kind(self) -> str | None:
        """Which fact this is (a name of POD_FACTS or JOB_FACTS), None: time passes."""
        given = self._given()
        return given[0] if given else None

    def _given(self) -> list[str]:
        values = self.model_dump(by_alias=True)
        return [name for name in (*POD_FACTS, *JOB_FACTS) if values[name] is not None]

    @model_validator(mode="after")
    def _one_fact(self) -> Fact:
        given = self._given()
        if len(given) > 1:
            raise ValueError(f"one fact per timeline entry, not {' and '.join(given)}: write "
                             "one entry for each, at the same time")
        kind = given[0] if given else None
        if kind in POD_FACTS and self.replica is None:
            raise ValueError(f"'{kind}' needs the replica whose pod it is about "
                             "(replica: Worker-0)")
        if self.replica is not None and kind not in POD_FACTS:
            raise ValueError("'replica' names a pod: give with it one of exits, deleted, "
                             "evicted, lost or starts")
        if self.reason is not None and kind != "exits":
            raise ValueError("'reason' is the termination reason of an exit: give it with "
                             "'exits'")
        if self.patch is not None and not set(self.patch) <= set(PATCHABLE):
            raise ValueError("a patch may change the job's metadata and spec only")
        return self


class Expectation(_Strict):
    """What the job must look like when the simulation ends; only what is given is checked."""

    phase: str | None = None
    state: str | None = None
    restarts: int | None = None
    reason: str | None = None
    """The reason of the job's condition named like its phase (Failed: BackoffLimitExceeded)."""
    conditions: dict[str, bool | None] | None = None
    """Condition type -> its status; null: the job has no such condition."""
    replicas: dict[str, str] | None = None
    """Replica (`Worker-0`) -> its state."""
    pods_created: int | None = Field(default=None, alias="podsCreated")
    pods_at_once: int | None = Field(default=None, alias="podsAtOnce")
    """The most pods that had not ended (nor were being deleted) at any one time: a pool
    keeps it at or below its parallelism."""


class Scenario(_Strict):
    """A scenario file."""

    job: str | dict[str, Any]
    """The job: inline, or the path of a manifest relative to the scenario file."""
    machine: str | None = None
    """The path of a machine definition file relative to the scenario file (default: the
    shipped machine governing the job's kind)."""
    objects: list[str | dict[str, Any]] | None = None
    """The objects of the cluster a job may name (governs.references: a TrainJob's
    runtime): manifest files relative to the scenario file, or inline objects; default:
    what `jobmachine up` installs beside the machines (manifests/)."""
    pods: PodTiming = Field(default_factory=PodTiming)
    timeline: list[Fact] = Field(default_factory=list)
    expect: Expectation = Field(default_factory=Expectation)

    @property
    def expects(self) -> bool:
        """Whether the file has an `expect` (an empty one is met by any end)."""
        return "expect" in self.model_fields_set
