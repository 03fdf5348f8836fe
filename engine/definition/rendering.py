"""What a job's children are made of: pod decorations, child objects, and the kind's rules.

Pure: the same variables give the same values, so a child built from them can be
created again after a crash and compared with the one that exists. A value that
cannot be computed raises `CelEvaluationError`: nothing is created with a value
missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.definition.cel import Activation, CelEvaluationError, CompiledExpression
from engine.definition.compiled import (
    CompiledDefinition,
    CompiledObject,
    CompiledRollout,
    CompiledSchedule,
)
from engine.definition.expressions import POD_REPLACEMENT_POLICIES, POD_RESTART_POLICIES
from engine.definition.strategic_patch import without_nulls
from engine.definition.templates import render_value
from engine.definition.vocabulary import job_value

EnvValue = str | Mapping[str, Any]
"""An env value: text, or `{valueFrom: {...}}` (a core/v1 EnvVarSource, e.g. the pod's IP)."""


@dataclass(frozen=True)
class PodDecorations:
    """What the machine adds to one replica's pod."""

    env: Mapping[str, EnvValue]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    volumes: tuple[Mapping[str, Any], ...] = ()
    volume_mounts: tuple[Mapping[str, Any], ...] = ()
    init_containers: tuple[Mapping[str, Any], ...] = ()
    """Appended to the pod's initContainers (Kubeflow's MPI launcher gets kubectl this way)."""
    command: tuple[str, ...] | None = None
    """The main container's command when its template has none (nor args)."""
    restart_policy: str = "Never"
    """The pod's restartPolicy: OnFailure or Always let the kubelet restart it in place."""
    spec_fields: Mapping[str, Any] = field(default_factory=dict)
    """Pod spec fields set where the template leaves them unset (schedulerName...)."""


def _texts(values: Mapping[str, CompiledExpression], activation: Activation) -> dict[str, str]:
    """Each value as text; a null leaves the key out (a label only some replicas carry)."""
    found = {key: expr.evaluate(activation) for key, expr in values.items()}
    return {key: render_value(value) for key, value in found.items() if value is not None}


def _values(values: Mapping[str, CompiledExpression], activation: Activation
            ) -> dict[str, Any]:
    """Each value as CEL gives it; a null leaves the key out."""
    found = {key: expr.evaluate(activation) for key, expr in values.items()}
    return {key: value for key, value in found.items() if value is not None}


def _env(values: Mapping[str, CompiledExpression], activation: Activation) -> dict[str, EnvValue]:
    """Like `_texts`, but a map whose only key is `valueFrom` stays a source for the kubelet."""
    found: dict[str, EnvValue] = {}
    for key, expression in values.items():
        value = expression.evaluate(activation)
        if value is None:
            continue
        is_source = isinstance(value, dict) and set(value) == {"valueFrom"}
        found[key] = value if is_source else render_value(value)
    return found


def _command(expression: CompiledExpression | None, activation: Activation
             ) -> tuple[str, ...] | None:
    if expression is None:
        return None
    value = expression.evaluate(activation)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        raise CelEvaluationError(f"pod.command gave {value!r}, not a list of strings")
    return tuple(value)


def _objects(expression: CompiledExpression | None, activation: Activation, what: str
             ) -> tuple[Mapping[str, Any], ...]:
    """A list of API objects (volumes, mounts, containers) from CEL; null gives none."""
    if expression is None:
        return ()
    value = expression.evaluate(activation)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise CelEvaluationError(f"{what} gave {value!r}, not a list of objects")
    return tuple(value)


def render_pod_decorations(
    compiled: CompiledDefinition, variables: Mapping[str, Any]
) -> PodDecorations:
    """The env, labels, annotations, volumes, mounts, init containers, default command and
    restartPolicy the definition gives one pod."""
    activation = Activation(variables)
    return PodDecorations(
        env=_env(compiled.pod_env, activation),
        labels=_texts(compiled.pod_labels, activation),
        annotations=_texts(compiled.pod_annotations, activation),
        volumes=_objects(compiled.pod_volumes, activation, "pod.volumes"),
        volume_mounts=_objects(compiled.pod_volume_mounts, activation, "pod.volumeMounts"),
        init_containers=_objects(compiled.pod_init_containers, activation,
                                 "pod.initContainers"),
        command=_command(compiled.pod_command, activation),
        restart_policy=render_restart_policy(compiled, activation),
        spec_fields=_values(compiled.pod_spec_fields, activation),
    )


@dataclass(frozen=True)
class ChildDecorations:
    """What the machine gives one replica's child object: its name and its labels and
    annotations (the replica spec's template gives the rest)."""

    name: str | None
    """None: the engine's default name."""
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Dotted path in the child -> the value forced there (a null leaves the path alone)."""


def render_child_decorations(
    compiled: CompiledDefinition, variables: Mapping[str, Any]
) -> ChildDecorations:
    """The name, labels, annotations and forced fields spec.child gives one replica's
    child."""
    child = compiled.child
    if child is None:
        raise ValueError(f"machine {compiled.name} has no spec.child")
    activation = Activation(variables)
    name = None
    if child.name is not None:
        value = child.name.evaluate(activation)
        if not isinstance(value, str) or not value:
            raise CelEvaluationError(f"child.name gave {value!r}, not a non-empty string")
        name = value
    given = _metadata(child.metadata, activation)
    return ChildDecorations(name, {**given["labels"], **_texts(child.labels, activation)},
                            {**given["annotations"], **_texts(child.annotations, activation)},
                            _values(child.fields, activation))


def _metadata(expression: CompiledExpression | None, activation: Activation
              ) -> dict[str, dict[str, str]]:
    """spec.child.metadata's labels and annotations, each value as text (a null leaves its
    key out); raises CelEvaluationError when it gives anything but such maps."""
    value = {} if expression is None else expression.evaluate(activation)
    if not isinstance(value, Mapping):
        raise CelEvaluationError(f"child.metadata gave {value!r}, not a map")
    found: dict[str, dict[str, str]] = {}
    for key in ("labels", "annotations"):
        entries = value.get(key) or {}
        if not isinstance(entries, Mapping):
            raise CelEvaluationError(f"child.metadata.{key} gave {entries!r}, not a map")
        found[key] = {str(k): render_value(v) for k, v in entries.items() if v is not None}
    return found


@dataclass(frozen=True)
class ChildReading:
    """A child object as its status expressions read it."""

    ready: bool
    succeeded: bool
    failed: bool
    failure_reason: str = ""
    failure_message: str = ""


def read_child(
    compiled: CompiledDefinition, job: Mapping[str, Any], child: Mapping[str, Any]
) -> ChildReading:
    """What spec.child's status expressions say of `child`; raises CelEvaluationError when
    one cannot be computed or does not give a bool (a string, for the failure's words)."""
    expressions = compiled.child.status if compiled.child is not None else {}
    activation = Activation({"job": job_value(job), "child": child})

    def flag(key: str) -> bool:
        value = expressions[key].evaluate(activation)
        if not isinstance(value, bool):
            raise CelEvaluationError(f"child.status.{key} gave {value!r}, not a bool")
        return value

    succeeded, failed = flag("succeeded"), flag("failed")
    if not failed:
        return ChildReading(flag("ready") and not succeeded, succeeded, False)
    words = [expressions[k].evaluate(activation) for k in ("failureReason", "failureMessage")]
    reason, message = (render_value(w) if w is not None else "" for w in words)
    return ChildReading(False, succeeded, True, reason, message)


def render_status_fields(
    compiled: CompiledDefinition, variables: Mapping[str, Any] | Activation
) -> dict[str, Any]:
    """The status fields a Native-layout machine computes (`spec.status`); null leaves one
    out."""
    activation = variables if isinstance(variables, Activation) else Activation(variables)
    return _values(compiled.status_fields, activation)


def render_restart_policy(
    compiled: CompiledDefinition, variables: Mapping[str, Any] | Activation
) -> str:
    """The pod's restartPolicy: the machine's literal, or its CEL over the replica's variables."""
    expression = compiled.pod_restart_policy_expression
    if expression is None:
        return compiled.pod_restart_policy
    value = expression.evaluate(variables)
    if value not in POD_RESTART_POLICIES:
        raise CelEvaluationError(
            f"pod.restartPolicy gave {value!r}, not one of {', '.join(POD_RESTART_POLICIES)}"
        )
    return str(value)


def render_replacement_policy(compiled: CompiledDefinition, job: Mapping[str, Any]) -> str:
    """When the job's deleted pods are judged (`TerminatingOrFailed` or `Failed`): the
    machine's literal, or its CEL over `job`."""
    expression = compiled.pod_replacement_policy_expression
    if expression is None:
        return compiled.pod_replacement_policy
    value = expression.evaluate({"job": job_value(job)})
    if value not in POD_REPLACEMENT_POLICIES:
        raise CelEvaluationError(
            f"pod.replacementPolicy gave {value!r}, not one of "
            f"{', '.join(POD_REPLACEMENT_POLICIES)}")
    return str(value)


@dataclass(frozen=True)
class RenderedObject:
    """One child object of a job as the machine wants it now (without name and owner)."""

    name: str
    """The object's name in the machine; the API object is `<job>-<suffix>` (or, with
    naming JobName, the job's name)."""
    api_version: str
    kind: str
    suffix: str
    """The API object is `<job>-<suffix>` (the machine's `suffix`, else its name)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)
    naming: str = "JobNameSuffixed"


def render_objects(
    compiled: CompiledDefinition, variables: Mapping[str, Any],
    kept: frozenset[str] = frozenset(),
) -> tuple[list[RenderedObject], list[CompiledObject]]:
    """The job's child objects whose `when` holds, and the machine's objects whose does not.
    The objects named in `kept` (made once, `update: Never`, and there) are not rendered: a
    value made at random each time (`sshKeyPair()`) is computed only for the one creation."""
    activation = Activation(variables)
    wanted: list[RenderedObject] = []
    absent: list[CompiledObject] = []
    for child in compiled.objects:
        if not _wanted(child, activation):
            absent.append(child)
            continue
        if child.name in kept:
            continue
        wanted.append(RenderedObject(
            child.name, child.api_version, child.kind, child.suffix,
            labels=_texts(child.labels, activation),
            annotations=_texts(child.annotations, activation),
            fields=without_nulls(_values(child.fields, activation)), naming=child.naming,
        ))
    return wanted, absent


def _wanted(child: CompiledObject, activation: Activation) -> bool:
    if child.when is None:
        return True
    value = child.when.evaluate(activation)
    if not isinstance(value, bool):
        raise CelEvaluationError(f"object {child.name}: when gave {value!r}, not a bool")
    return value


def _said(expression: CompiledExpression, activation: Activation) -> str | None:
    """A validation's messageExpression for this job, or None when it cannot say one."""
    try:
        said = expression.evaluate(activation)
    except CelEvaluationError:
        return None
    return said if isinstance(said, str) and said else None


def broken_rules(compiled: CompiledDefinition, job: Mapping[str, Any]) -> Sequence[str]:
    """What the job breaks of its kind's validation rules, each as `fieldPath: message`.

    A rule that cannot be evaluated for this job (it reads a field the job lacks)
    counts as broken, with the evaluator's reason: a job is run only if it is known
    to keep every rule.
    """
    activation = Activation({"job": job_value(job)})
    found: list[str] = []
    for validation in compiled.validations:
        try:
            kept = validation.rule.evaluate(activation) is True
            message = validation.message
        except CelEvaluationError as exc:
            kept, message = False, f"{validation.message} (the rule cannot be evaluated: {exc})"
        if not kept and validation.message_expression is not None:
            message = _said(validation.message_expression, activation) or message
        if not kept:
            found.append(f"{validation.field_path}: {message}" if validation.field_path
                         else message)
    return found


CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
"""What a schedule does with a due child while earlier ones run: both run, skip, replace."""


@dataclass(frozen=True)
class RenderedSchedule:
    """A job's schedule as its machine gives it now."""

    cron: str
    time_zone: str | None
    starting_deadline_seconds: int | None
    concurrency_policy: str
    successful_history_limit: int
    failed_history_limit: int
    child_api_version: str
    child_kind: str
    child_labels: Mapping[str, str]
    child_annotations: Mapping[str, str]
    child_spec: Mapping[str, Any]


def render_schedule(schedule: CompiledSchedule, variables: Mapping[str, Any]) -> RenderedSchedule:
    """The schedule's values over the job-level variables; a value of the wrong kind (a
    policy that is none of Allow, Forbid, Replace; a negative limit) raises
    CelEvaluationError naming it."""
    activation = Activation(variables)
    found = {key: expression.evaluate(activation) for key, expression in schedule.values.items()}
    policy = found["concurrencyPolicy"]
    if policy not in CONCURRENCY_POLICIES:
        raise CelEvaluationError(f"schedule.concurrencyPolicy gave {policy!r}, not one of "
                                 f"{', '.join(CONCURRENCY_POLICIES)}")
    for key in ("startingDeadlineSeconds", "successfulHistoryLimit", "failedHistoryLimit"):
        value = found[key]
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 0):
            raise CelEvaluationError(f"schedule.{key} gave {value!r}, not a count (0 or more)")
    for key in ("cron", "timeZone"):
        if found[key] is not None and not isinstance(found[key], str):
            raise CelEvaluationError(f"schedule.{key} gave {found[key]!r}, not a string")
    if found["cron"] is None:
        raise CelEvaluationError("schedule.cron gave null: a schedule is required")
    for key in ("labels", "annotations", "spec"):
        if not isinstance(found[key], dict):
            raise CelEvaluationError(f"schedule.child.{key} gave {found[key]!r}, not a map")
    return RenderedSchedule(
        cron=found["cron"], time_zone=found["timeZone"],
        starting_deadline_seconds=found["startingDeadlineSeconds"],
        concurrency_policy=policy,
        successful_history_limit=int(found["successfulHistoryLimit"]),
        failed_history_limit=int(found["failedHistoryLimit"]),
        child_api_version=schedule.api_version, child_kind=schedule.kind,
        child_labels={str(k): render_value(v) for k, v in found["labels"].items()
                      if v is not None},
        child_annotations={str(k): render_value(v) for k, v in found["annotations"].items()
                           if v is not None},
        child_spec=without_nulls(found["spec"]),
    )


ROLLOUT_STRATEGIES = ("RollingUpdate", "Recreate")
"""How a rollout moves pods to a new revision: a few at a time, or all old ones first."""


@dataclass(frozen=True)
class RenderedRollout:
    """A job's rollout as its machine gives it now. `max_surge` and `max_unavailable` are
    as written (an int or a percentage such as '25%'): they are resolved against
    `replicas` where they are used, as upstream's intstr values are."""

    replicas: int
    selector: Mapping[str, Any]
    template: Mapping[str, Any]
    strategy: str
    max_surge: int | str
    max_unavailable: int | str
    paused: bool
    min_ready_seconds: int
    revision_history_limit: int | None
    progress_deadline_seconds: int | None
    child_api_version: str
    child_kind: str


def _count(found: Mapping[str, Any], key: str, *, nullable: bool = False) -> int | None:
    value = found[key]
    if value is None and nullable:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CelEvaluationError(f"rollout.{key} gave {value!r}, not a count (0 or more)")
    return value


def render_rollout(rollout: CompiledRollout, variables: Mapping[str, Any]) -> RenderedRollout:
    """The rollout's values over the job-level variables; a value of the wrong kind (a
    strategy that is neither RollingUpdate nor Recreate, a negative count, a template that
    is not a map) raises CelEvaluationError naming it."""
    activation = Activation(variables)
    found = {key: expression.evaluate(activation) for key, expression in rollout.values.items()}
    if found["strategy"] not in ROLLOUT_STRATEGIES:
        raise CelEvaluationError(f"rollout.strategy gave {found['strategy']!r}, not one of "
                                 f"{', '.join(ROLLOUT_STRATEGIES)}")
    for key in ("selector", "template"):
        if not isinstance(found[key], dict):
            raise CelEvaluationError(f"rollout.{key} gave {found[key]!r}, not a map")
    for key in ("maxSurge", "maxUnavailable"):
        value = found[key]
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise CelEvaluationError(f"rollout.{key} gave {value!r}, not an int or a "
                                     "percentage")
    if not isinstance(found["paused"], bool):
        raise CelEvaluationError(f"rollout.paused gave {found['paused']!r}, not a bool")
    return RenderedRollout(
        replicas=int(_count(found, "replicas") or 0),
        selector=without_nulls(found["selector"]),
        template=without_nulls(found["template"]),
        strategy=found["strategy"], max_surge=found["maxSurge"],
        max_unavailable=found["maxUnavailable"], paused=found["paused"],
        min_ready_seconds=int(_count(found, "minReadySeconds") or 0),
        revision_history_limit=_count(found, "revisionHistoryLimit", nullable=True),
        progress_deadline_seconds=_count(found, "progressDeadlineSeconds", nullable=True),
        child_api_version=rollout.api_version, child_kind=rollout.kind,
    )
