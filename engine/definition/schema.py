"""The shape of a machine definition, as pydantic models.

A definition is a Kubernetes-style object (`kind: StateMachine`) so the same
file can be validated locally and applied to a cluster. These models check
shape only (types, required and unknown fields); meaning (state references,
reachability, the vocabulary, CEL) is checked by `checks.py`, which needs the
whole definition at once.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.definition.failure_rules import FailureRule

API_VERSION = "jobmachine.dev/v1alpha1"
KIND = "StateMachine"

EventType = Literal["Normal", "Warning"]
Terminal = Literal["success", "failure"]


class _Strict(BaseModel):
    """Base: unknown fields are errors, field names are the YAML names, models are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ActionSpec(_Strict):
    """One action: a name from the vocabulary and its arguments.

    Written in YAML either as a bare name (`createPod`) or as a one-key mapping
    (`cleanupPods: {policy: All}`).
    """

    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and len(value) == 1 and "name" not in value:
            ((name, args),) = value.items()
            return {"name": name, "args": {} if args is None else args}
        return value


class ConditionSpec(_Strict):
    """The condition a state sets on the job while it is in that state.

    `message` is a text template: `${ expression }` parts are CEL.
    """

    type: str
    status: Literal["True", "False", "Unknown"] = "True"
    reason: str | None = None
    message: str | None = None
    # Keep the condition True when the job leaves the state (Kubeflow's Created).
    sticky: bool = False
    # Take reason and message from the job's condition of this type (set by an earlier
    # state), so Failed repeats why FailureTarget was set.
    copy_from: str | None = Field(default=None, alias="copyFrom")
    # As copyFrom, and the job loses the condition it copies: Kubeflow's Succeeded and
    # Failed, whose API has no SuccessCriteriaMet or FailureTarget once the job has ended.
    move_from: str | None = Field(default=None, alias="moveFrom")
    # Condition types the job loses when it enters the state: Kubeflow's Running and
    # Restarting replace each other rather than one staying beside the other as False.
    replaces: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_source(self) -> ConditionSpec:
        if self.copy_from is not None and self.move_from is not None:
            raise ValueError("give copyFrom or moveFrom, not both: moveFrom copies too")
        return self

    @property
    def source(self) -> str | None:
        """The condition whose reason and message this one takes (copyFrom or moveFrom)."""
        return self.move_from if self.move_from is not None else self.copy_from


# A duration ("30s", "10m", "1h30m", "500ms") or, where documented, a CEL
# expression giving seconds; an integer is a number of seconds.
Duration = str | int


class StateSpec(_Strict):
    """One state of a job or replica machine."""

    phase: str | None = None  # the word shown as the phase; default: the state's name
    condition: ConditionSpec | None = None
    terminal: Terminal | None = None
    on_enter: list[ActionSpec] = Field(default_factory=list, alias="onEnter")
    requeue_after: Duration | None = Field(default=None, alias="requeueAfter")
    # After this long in the state, `timedOut` holds: a duration, or CEL giving seconds
    # (null or <= 0: no timeout).
    timeout: Duration | None = None
    hold_replicas: bool = Field(default=False, alias="holdReplicas")  # job level only
    description: str | None = None
    # Only a job's failure rules lead here; `jobmachine check`, whose jobs have none, says
    # nothing of the state never being entered.
    reached_only_by: Literal["failureRules"] | None = Field(default=None, alias="reachedOnlyBy")
    # Job level: the job may stay here for ever (a workload that keeps its pods running and
    # never completes, as a ReplicaSet): it needs no transition out, and `jobmachine check`
    # takes it as an end the job may rest in.
    steady: bool = False

    @model_validator(mode="before")
    @classmethod
    def _empty(cls, value: Any) -> Any:
        return {} if value is None else value


class TransitionSpec(_Strict):
    """One edge: from which states, to which, on what observation, under what guard."""

    # Names a transition so that a machine extending this one can change or remove it.
    name: str | None = Field(default=None, min_length=1, max_length=63)
    source: list[str] = Field(alias="from")  # "*" means every non-terminal state
    to: str
    on: str | None = None
    when: str | None = None  # CEL guard, must be bool
    actions: list[ActionSpec] = Field(default_factory=list)
    reason: str | None = None  # event reason, CamelCase; default: the target state
    message: str | None = None  # event message template
    type: EventType | None = None  # default: Warning into a failure state, else Normal
    # Post no Event for this state change (it is still recorded and counted), e.g. the
    # second phase of an ending whose first phase already said why.
    silent: bool = False
    description: str | None = None
    # Merge directives, only in a machine that extends another (spec.extends); they are
    # consumed by the merge and never reach the machine that runs.
    before: str | None = None  # insert before the base's transition of this name
    after: str | None = None  # insert after the base's transition of this name
    remove: bool | None = None  # drop the base's transition of the same name

    @field_validator("source", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @property
    def is_wildcard(self) -> bool:
        return self.source == ["*"]


class MachineSpec(_Strict):
    """A job-level or replica-level machine."""

    initial: str
    states: dict[str, StateSpec]
    transitions: list[TransitionSpec] = Field(default_factory=list)
    # Whether an instance's creation in `initial` posts an Event (`Created in <state>`); a
    # built-in kind whose own controller posts none there (batch/v1 Job) says false.
    creation_event: bool = Field(default=True, alias="creationEvent")


class PortSpec(_Strict):
    """A service port: the main container's port called `name`, else `port`."""

    name: str
    port: Annotated[int, Field(ge=1, le=65535)]
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class ServiceSpec(_Strict):
    """Headless services for replicas of some types (one per replica index)."""

    replica_types: list[str] = Field(default_factory=lambda: ["*"], alias="replicaTypes")
    ports: list[PortSpec] = Field(default_factory=list)

    @field_validator("replica_types", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class PodSpec(_Strict):
    """How the engine decorates each replica's pod template.

    Values of `env`, `labels` and `annotations` are CEL expressions; a result
    that is not a string is rendered as JSON (so TF_CONFIG can be a map).
    """

    container: str | None = None  # the framework's main container; default: the first
    env: dict[str, str] = Field(default_factory=dict)
    # Which of the template's containers get `env`: the main one (Kubeflow), or All, every
    # container and init container (the Job API's JOB_COMPLETION_INDEX).
    env_containers: Literal["Main", "All"] = Field(default="Main", alias="envContainers")
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    # The pod's restartPolicy: Never, OnFailure or Always as written, else CEL over the
    # replica's variables giving one of them (e.g. from the replica's `policy`).
    restart_policy: str = Field(default="Never", alias="restartPolicy")
    # When a pod being deleted is judged and replaced: TerminatingOrFailed (at once: it
    # is observed `podGone`), or Failed (once it has ended: its phase and the failure
    # rules decide, as the Job API's podReplacementPolicy Failed); as written, else CEL
    # over `job` giving one of them.
    replacement_policy: str = Field(default="TerminatingOrFailed", alias="replacementPolicy")
    # CEL giving a list of core/v1 Volumes added to the pod (replacing same-named ones),
    # and a list of VolumeMounts added to the main container; null or [] adds none.
    volumes: str | None = None
    volume_mounts: str | None = Field(default=None, alias="volumeMounts")
    # CEL giving a list of core/v1 Containers appended to the pod's initContainers
    # (replacing same-named ones): MPI's kubectl-delivery; null or [] adds none.
    init_containers: str | None = Field(default=None, alias="initContainers")
    # CEL giving the main container's command (a list of strings) when its template sets
    # neither command nor args (e.g. MPI Workers that only wait to be reached); null: none.
    command: str | None = None
    # Pod spec field -> CEL value, set where the template leaves the field unset (the
    # template's own value wins); null leaves it unset (a gang's schedulerName).
    spec_fields: dict[str, str] = Field(default_factory=dict, alias="specFields")
    # Indexed: a pod per replica index, named `<job>-<type>-<index>`. Generated: pods named
    # `<job>-<5 random characters>` by the API server (generateName, as a ReplicaSet's),
    # the index only a label: such pods are interchangeable, so a type with more active
    # pods than replicas keeps the best and deletes the rest in kube-controller-manager's
    # order (ActivePodsWithRanks), and a pod being deleted frees its index at once.
    naming: Literal["Indexed", "Generated"] = "Indexed"
    # The reason of the Normal Event `Deleted pod: <name>` for each pod the engine deletes
    # that had not ended (kube-controller-manager's SuccessfulDelete: its job and ReplicaSet
    # controllers delete only active pods, and say each); none when unset.
    deleted_reason: str | None = Field(
        default=None, alias="deletedReason", pattern=r"^[A-Z][A-Za-z0-9]*$")
    # The same Event for surplus pods only (`naming: Generated`), kept for machines written
    # before deletedReason; unused where deletedReason is set (one Event per pod).
    surplus_reason: str | None = Field(
        default=None, alias="surplusReason", pattern=r"^[A-Z][A-Za-z0-9]*$")
    # Create a type's missing pods in batches of 1, 2, 4, ... in one pass, the creates of a
    # batch at once, stopping after a batch in which a create failed (kube-controller-
    # manager's slowStartBatch), at most 500 a pass (its burstReplicas), and delete a pass's
    # surplus at once; else one at a time, stopping at the first failure (Kubeflow's).
    slow_start: bool = Field(default=False, alias="slowStart")


class ValidationRule(_Strict):
    """A rule every job of the kind must keep; a job that breaks it is invalid (`error`).

    `rule` is CEL over `job` giving true for a valid job, as a CRD's
    x-kubernetes-validations rule does over `self`.
    """

    rule: str
    message: str
    field_path: str | None = Field(default=None, alias="fieldPath")
    # CEL string over `job` saying what is wrong in the job's own words (the entry at
    # fault), as a CRD rule's messageExpression; `message` when it cannot be computed.
    message_expression: str | None = Field(default=None, alias="messageExpression")


class ObjectSpec(_Strict):
    """A namespaced object every job of the kind has besides its pods and services.

    It is named `<job>-<name>` (or, with `naming: JobName`, like the job itself, as Kubeflow
    names a job's PodGroup), owned by the job, created before the job's pods,
    updated when what it is rendered from changes, and removed with the job.
    Every value is CEL over the job-level variables (and the template variables).
    """

    name: Annotated[
        str, Field(min_length=1, max_length=40, pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
    ]
    api_version: str = Field(alias="apiVersion")
    kind: str
    naming: Literal["JobNameSuffixed", "JobName"] = "JobNameSuffixed"
    # The API object is `<job>-<suffix>` (default: the name): objects of different kinds may
    # share one, as MPIJob's launcher ServiceAccount, Role and RoleBinding do.
    suffix: Annotated[
        str | None, Field(default=None, min_length=1, max_length=40,
                          pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
    ] = None
    when: str | None = None  # CEL bool; while false the object does not exist
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    # Top-level fields besides apiVersion, kind and metadata (data, stringData, type, spec...).
    fields: dict[str, str] = Field(default_factory=dict)
    # Replace: rewritten when what it renders to changes. Never: made once when missing and
    # never rendered again while it exists (a Secret holding a key pair made at random).
    update: Literal["Replace", "Never"] = "Replace"


class ChildStatus(_Strict):
    """How a replica's child reads, as CEL over `job` and `child` (the object as last seen):
    the engine knows nothing of the child's kind beyond these, so any kind whose status
    CEL can read works (a JobSet's Jobs, a TrainJob's JobSet)."""

    ready: str = "false"  # CEL bool: the child runs as wanted (a Job's pods are ready)
    succeeded: str  # CEL bool: the child ended well
    failed: str  # CEL bool: the child ended badly
    failure_reason: str = Field(default="''", alias="failureReason")  # CEL string
    failure_message: str = Field(default="''", alias="failureMessage")  # CEL string


class ChildSpec(_Strict):
    """A replica's child when it is not a pod: one object of another kind per replica index
    (a JobSet's replicated job `workers` with replicas 4 has four Jobs).

    The object is the replica spec's template (`{metadata, spec}` at `template`), named
    `<job>-<type in lower case>-<index>` unless `name` says otherwise, with the engine's
    replica labels, owned by the job; the replica machine reads it through `status`.
    Labels, annotations, `fields` and the name are CEL over the replica's variables.
    """

    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str | None = None  # CEL string; default: <job>-<type in lower case>-<index>
    template: Annotated[str, Field(min_length=1)] = "template"  # the replica spec's field
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    # Dotted path in the child (spec.suspend) -> CEL value the engine forces, at creation
    # and whenever it changes (JobSet suspends and resumes its Jobs so).
    fields: dict[str, str] = Field(default_factory=dict)
    # CEL map {labels, annotations} (each a map, or absent) for keys known only at run time
    # (a TrainJob's runtime template's); `labels` and `annotations` above win over them.
    metadata: str | None = None
    status: ChildStatus


class ScheduledChild(_Strict):
    """What a schedule makes at each due time: an object of a kind the engine also governs
    (a CronJob's Job), owned by the job. Every value is CEL over the job-level variables."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    labels: str = "{}"  # CEL map(string, string)
    annotations: str = "{}"  # CEL map(string, string)
    spec: str  # CEL map: the child's spec


class ScheduleSpec(_Strict):
    """Children made on a cron schedule, as the CronJob controller makes Jobs.

    Each value is CEL over the job-level variables. The schedule runs while the job is in
    a state without holdReplicas; in one with it (Suspended) nothing new is made, but
    finished children are still counted and the history still trimmed.
    """

    cron: str  # CEL string: five fields or a descriptor (@hourly, @every 90s)
    time_zone: str = Field(default="null", alias="timeZone")  # CEL string or null (UTC)
    # CEL int or null: a due time older than this is skipped (MissSchedule).
    starting_deadline_seconds: str = Field(default="null", alias="startingDeadlineSeconds")
    concurrency_policy: str = Field(default="'Allow'", alias="concurrencyPolicy")  # CEL string
    successful_history_limit: str = Field(default="3", alias="successfulHistoryLimit")  # CEL int
    failed_history_limit: str = Field(default="1", alias="failedHistoryLimit")  # CEL int
    child: ScheduledChild


class RolloutChild(_Strict):
    """The kind of a rollout's revisions: an object of a kind the engine also governs (a
    Deployment's ReplicaSets), with `spec.replicas`, `spec.selector` and `spec.template`,
    and a status that counts `replicas`, `readyReplicas` and `availableReplicas`."""

    api_version: str = Field(alias="apiVersion")
    kind: str


class RolloutSpec(_Strict):
    """Revisions of a template, rolled out as the Deployment controller rolls out ReplicaSets.

    Each distinct `template` is one child, named `<job>-<hash of the template>`, whose
    `spec.replicas` the engine moves from the old revisions to the new one within
    `maxSurge` and `maxUnavailable` (strategy RollingUpdate) or all at once (Recreate).
    Every value is CEL over the job-level variables.
    """

    replicas: str  # CEL int: the pods wanted across the revisions
    selector: str  # CEL map: the LabelSelector the children's selectors extend
    template: str  # CEL map: the pod template, {metadata, spec}; each version is a revision
    strategy: str = "'RollingUpdate'"  # CEL string: RollingUpdate or Recreate
    max_surge: str = Field(default="'25%'", alias="maxSurge")  # CEL int or 'N%'
    max_unavailable: str = Field(default="'25%'", alias="maxUnavailable")  # CEL int or 'N%'
    paused: str = "false"  # CEL bool: scale only, roll out nothing
    min_ready_seconds: str = Field(default="0", alias="minReadySeconds")  # CEL int
    # CEL int or null: old revisions kept (null: all).
    revision_history_limit: str = Field(default="10", alias="revisionHistoryLimit")
    # CEL int or null: seconds without progress before Progressing is False (null: never).
    progress_deadline_seconds: str = Field(default="600", alias="progressDeadlineSeconds")
    child: RolloutChild


BUILT_IN_KINDS: frozenset[tuple[str, str]] = frozenset(
    {("batch/v1", "Job"), ("batch/v1", "CronJob"), ("apps/v1", "ReplicaSet"),
     ("v1", "ReplicationController"), ("apps/v1", "Deployment")})
"""(apiVersion, kind) of the kinds a machine may govern that every API server serves without
a CRD (the embedded one too): no CRD gives their schema."""


_REFERENCE_NAME = r"^[a-z][A-Za-z0-9]*$"


class Reference(_Strict):
    """An object a job names and the machine reads (a TrainJob's runtime): the engine finds
    it, watches it, and gives it to CEL as `references.<name>` ({} while it is absent).

    Each field is CEL over `job`, giving a string; `scope` is `Namespaced` (the object is
    in the job's namespace) or `Cluster`.
    """

    api_version: str = Field(alias="apiVersion")  # CEL string
    kind: str  # CEL string
    name: str  # CEL string
    scope: str = "'Namespaced'"  # CEL string: 'Namespaced' or 'Cluster'


class Governs(_Strict):
    """Which kind the definition drives and where that kind keeps its replicas."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    replica_specs: str = Field(default="spec.replicaSpecs", alias="replicaSpecs")
    run_policy: str = Field(default="spec.runPolicy", alias="runPolicy")
    failure_rules: str = Field(default="spec.failureRules", alias="failureRules")
    replica_types: list[str] | None = Field(default=None, alias="replicaTypes")
    default_restart_policy: Literal["Always", "OnFailure", "Never", "ExitCode"] = Field(
        default="Never", alias="defaultRestartPolicy"
    )
    # Replica specs may be pools: `completions` members run at most `parallelism` at a time
    # (`completionMode` NonIndexed or Indexed) instead of `replicas` all at once.
    pools: bool = False
    # A kind with one replica type keeps its one replica spec here instead of a map at
    # replicaSpecs (batch/v1 Job: `spec`, with template, completions, parallelism); the
    # type is named by replicaTypes, which then has exactly one entry.
    replica_spec: str | None = Field(default=None, alias="replicaSpec")
    # The replica specs at replicaSpecs are a list of specs, each named by its `name` field
    # (JobSet's replicatedJobs, Volcano's tasks) instead of a map of type -> spec; the types
    # are the names, in the list's order.
    replica_list: bool = Field(default=False, alias="replicaList")
    # Engine: the engine's record, phase and counts go into the job's status (a kind whose
    # CRD keeps unknown status fields). Native: the kind's status has a fixed schema (a
    # built-in kind); the record goes into the annotation jobmachine.dev/status and the
    # status gets only conditions, startTime, completionTime and the machine's `status`.
    status_layout: Literal["Engine", "Native"] = Field(default="Engine", alias="statusLayout")

    @model_validator(mode="after")
    def _one_type_for_one_spec(self) -> Governs:
        if self.replica_spec is not None and len(self.replica_types or ()) != 1:
            raise ValueError("replicaSpec needs replicaTypes with exactly one type (its name)")
        if self.replica_spec is not None and self.replica_list:
            raise ValueError("replicaList is for replicaSpecs (a list of specs), not replicaSpec")
        if self.selector is not None and len(self.replica_types or ()) != 1:
            raise ValueError("selector needs replicaTypes with exactly one type: an adopted "
                             "pod is given to it")
        return self
    # Values of runPolicy.managedBy that also name this engine (beside unset and
    # jobmachine.dev/job-controller), e.g. the controller a kind is a drop-in for.
    managed_by: list[str] = Field(default_factory=list, alias="managedBy")
    # Run-policy fields a kind also keeps at another path, from an older API (MPIJob's
    # spec.cleanPodPolicy): field -> dotted path. The runPolicy's own value wins.
    run_policy_fallbacks: dict[str, str] = Field(
        default_factory=dict, alias="runPolicyFallbacks"
    )
    # Dotted path to the job's pod selector: a LabelSelector (matchLabels, matchExpressions),
    # or the plain map of labels a v1 ReplicationController keeps. With it pods are claimed
    # as kube-controller-manager's PodControllerRefManager does: an orphan that matches is
    # adopted, a pod of the job's that stops matching is released. One replica type only.
    selector: str | None = None
    # Dotted path to the seconds a Ready pod must stay Ready to be available (the
    # `available` counts; ReplicaSet's spec.minReadySeconds); unset or absent: 0.
    min_ready_seconds: str | None = Field(default=None, alias="minReadySeconds")
    # With statusLayout Native: the condition the kind's own status gets while the API server
    # refuses the engine's pods (status True, reason FailedCreate, the server's message),
    # removed by the first pass that goes through: ReplicaSet's ReplicaFailure. Unset: none.
    refused_condition: Literal["ReplicaFailure"] | None = Field(
        default=None, alias="refusedCondition")
    # Objects the job names that the machine reads (a TrainJob's runtime), by a lowerCamel
    # name: CEL sees each as references.<name>, {} while it is absent.
    references: dict[
        Annotated[str, Field(pattern=_REFERENCE_NAME, max_length=63)], Reference
    ] = Field(default_factory=dict)


class Defaults(_Strict):
    """Values used where a job leaves a field out."""

    run_policy: dict[str, Any] = Field(default_factory=dict, alias="runPolicy")
    # Applied after the job's own spec.failureRules (the first match wins).
    failure_rules: list[FailureRule] = Field(default_factory=list, alias="failureRules")


NO_REPLICAS = MachineSpec(initial="None", states={"None": StateSpec(terminal="success",
    description="The kind has no pods, so no replica ever enters this machine.")})
"""The replica machine of a kind without pods (a CronJob's children are Jobs)."""


class DefinitionSpec(_Strict):
    # Only a base for other machines: governs no kind and never runs by itself.
    abstract: bool = False
    # The machine this one is written as changes to (merged before anything is checked).
    extends: str | None = None
    governs: Governs | None = None
    defaults: Defaults = Field(default_factory=Defaults)
    job: MachineSpec
    # A kind without pods (governs.replicaTypes: [], a CronJob) may leave it out.
    replica: MachineSpec = Field(default_factory=lambda: NO_REPLICAS)
    pod: PodSpec = Field(default_factory=PodSpec)
    # A replica's child when it is not a pod (a JobSet's Jobs): see ChildSpec.
    child: ChildSpec | None = None
    services: list[ServiceSpec] = Field(default_factory=list)
    validations: list[ValidationRule] = Field(default_factory=list)
    objects: list[ObjectSpec] = Field(default_factory=list)
    # With governs.statusLayout Native: status field -> CEL over the job-level variables,
    # written into the job's status at every reconcile (null leaves the field out).
    status: dict[str, str] = Field(default_factory=dict)
    # Children made on a cron schedule (a CronJob's Jobs): see ScheduleSpec.
    schedule: ScheduleSpec | None = None
    # Revisions of a template rolled out over children (a Deployment's ReplicaSets): see
    # RolloutSpec.
    rollout: RolloutSpec | None = None
    # Named CEL fragments: `name()` in any expression or template of the machine stands for
    # `(fragment)`, so a rule read in several places is written once (JobSet's first failed
    # Job, its success targets).
    expressions: dict[
        Annotated[str, Field(pattern=r"^[a-z][A-Za-z0-9]{0,62}$")], str
    ] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _governs_unless_abstract(self) -> DefinitionSpec:
        if self.governs is None and not self.abstract:
            raise ValueError("governs is required (only an abstract machine governs no kind)")
        podless = self.governs is not None and self.governs.replica_types == []
        if "replica" not in self.model_fields_set and not podless and not self.abstract:
            raise ValueError("replica is required (only a kind without pods, "
                             "governs.replicaTypes: [], may leave it out)")
        native = self.governs is not None and self.governs.status_layout == "Native"
        if self.child is not None and "pod" in self.model_fields_set:
            raise ValueError("a machine has a pod section or a child section, not both: its "
                             "replicas are pods, or objects of the child's kind")
        if (self.governs is not None and self.governs.selector is not None
                and self.pod.naming != "Generated"):
            raise ValueError("governs.selector needs pod.naming: Generated (an adopted pod "
                             "has no index of its own to be named by)")
        if self.rollout is not None and self.governs is not None and not native:
            raise ValueError("a rollout needs governs.statusLayout: Native (it writes the "
                             "kind's own status: replicas, updatedReplicas, conditions, ...)")
        if self.status and self.governs is not None and not native:
            raise ValueError("status fields need governs.statusLayout: Native (with the "
                             "Engine layout the engine writes the status itself)")
        return self


class Metadata(BaseModel):
    """Object metadata; only `name` matters here, the rest is kept for `kubectl apply`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: Annotated[
        str, Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    ]


class MachineDefinition(_Strict):
    """A whole `StateMachine` document."""

    api_version: Literal["jobmachine.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["StateMachine"]
    metadata: Metadata
    spec: DefinitionSpec

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def governs(self) -> Governs:
        """The kind it governs; an abstract machine governs none (a caller's error)."""
        if self.spec.governs is None:
            raise ValueError(f"machine {self.name} is abstract: it governs no kind")
        return self.spec.governs
