"""The closed vocabulary of the machine language: observations, actions, CEL variables.

Every name a definition may use is declared here once, with the one-line
meaning that `docs/machine-language.md` expands on. The checks reject any other
name and list these; the controller computes exactly these observations and
executes exactly these actions, so the language and the engine cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["job", "replica"]


@dataclass(frozen=True)
class Observation:
    name: str
    level: Level
    meaning: str
    # Observations of one group are mutually exclusive: at most one holds at a time.
    group: str | None = None


@dataclass(frozen=True)
class ActionArg:
    name: str
    meaning: str
    required: bool = False
    # "string": a literal; "cel": a CEL expression; "template": text with ${...}
    kind: Literal["string", "cel", "template"] = "string"
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Action:
    name: str
    levels: tuple[Level, ...]
    meaning: str
    args: tuple[ActionArg, ...] = ()
    replayable: bool = False
    """Its effect is a desired state of the world, so doing it twice is harmless: planned
    again at every step while an instance stays in the state whose `onEnter` has it, so
    one whose carrying out failed (the API server was away) is done on a later pass."""
    creates: bool = False
    """It creates a replica's child: a job state that holds its replicas cancels it, though
    planned earlier in the same decision."""
    resets_world: bool = False
    """After it no guard sees the world it saw (every replica starts again), so a cycle
    through it is not a loop without the world changing."""
    acts_on: Literal["pod", "child"] | None = None
    """What of a replica it acts on, where a machine's replicas are pods (`pod`) or
    objects of spec.child's kind (`child`): an action on the other is refused."""


@dataclass(frozen=True)
class Variable:
    """A name CEL reads, with its type and meaning: a variable, or a field of a struct."""

    name: str
    # A CEL type signature: bool, int, double, string, dyn, list(T), map(K, V), or a struct
    # (STRUCTS, RunPolicy, Job: cel_types.py).
    cel_type: str
    meaning: str


@dataclass(frozen=True)
class Struct:
    """An object type of the engine's variables, checked field by field: reading a field
    it does not have is an error where the expression is written."""

    name: str
    label: str  # how an error speaks of a value of this type
    fields: tuple[Variable, ...]


REPLICA_STRUCT = Struct("Replica", "replica", (
    Variable("type", "string", "The replica type, as in the job's spec (Worker)."),
    Variable("index", "int", "The replica's index within its type, from 0."),
    Variable("restarts", "int", "Restarts counted for this index."),
    Variable("desired", "int", "Members of its type: replicas, or a pool's completions."),
))
POD_STRUCT = Struct("Pod", "pod", (
    Variable("name", "string", "The pod's name."),
    Variable("phase", "string", "The pod's phase (Pending, Running, Succeeded, Failed)."),
    Variable("reason", "string", "The pod's status reason (Evicted, ...), else ''."),
    Variable("exitCode", "int", "The main container's exit code, -1 while it has not ended."),
    Variable("terminationReason", "string", "The main container's termination reason."),
    Variable("restartCount", "int", "The main container's restarts in place."),
    Variable("ready", "bool", "The pod's Ready condition is True."),
))
SUMMARY_STRUCT = Struct("ReplicaSummary", "a replica type's summary", (
    Variable("position", "int", "The type's place among the job's types, from 0: the spec's "
             "order for a list of replica specs (replicaList), else governs.replicaTypes' "
             "order (a start-up order reads it)."),
    Variable("desired", "int", "Members of the type: replicas, or a pool's completions."),
    Variable("parallelism", "int", "Members that may have a pod at once."),
    Variable("active", "int", "Running pods; with spec.child, children that exist and have "
             "not ended (JobSet's active)."),
    Variable("ready", "int", "Running pods whose Ready condition is True; children whose "
             "`ready` holds."),
    Variable("available", "int", "Ready pods that have been Ready for governs."
             "minReadySeconds (ReplicaSet's availableReplicas)."),
    Variable("fullyLabeled", "int", "Live pods that carry every label of their template "
             "(ReplicaSet's fullyLabeledReplicas)."),
    Variable("live", "int", "Pods (or children) that have not ended and are not being "
             "deleted (the Job API's active)."),
    Variable("terminating", "int", "Pods (or children) being deleted."),
    Variable("waiting", "int", "Members not started that have no place now (a pool's)."),
    Variable("succeeded", "int", "Members in a success terminal state."),
    Variable("failed", "int", "Members in a failure terminal state."),
    Variable("restarts", "int", "Restarts counted for the type's members."),
    Variable("states", "map(string, int)", "Replicas per state name."),
    Variable("completedIndexes", "string", "Members in a success terminal state (`0-3,7`)."),
    Variable("failedIndexes", "string", "Members in a failure terminal state."),
))
"""Per replica type; besides these, one int per phase word of the machine's replica states
in lowerCamelCase (`running`), added for the machine at hand."""

SCHEDULING_POLICY_STRUCT = Struct("SchedulingPolicy", "runPolicy.schedulingPolicy", (
    Variable("minAvailable", "int", "Pods that must be schedulable together (the gang)."),
    Variable("queue", "string", "The scheduler queue the job's pods join."),
    Variable("minResources", "map(string, dyn)", "Resources the gang needs at least."),
    Variable("priorityClass", "string", "The PodGroup's priority class."),
    Variable("scheduleTimeoutSeconds", "int", "Seconds the gang may wait to be scheduled."),
))
RUN_POLICY_STRUCT = Struct("RunPolicy", "runPolicy", (
    Variable("cleanPodPolicy", "string", "All, Running or None."),
    Variable("ttlSecondsAfterFinished", "int", "Seconds an ended job is kept."),
    Variable("activeDeadlineSeconds", "int", "Seconds the job may be active."),
    Variable("backoffLimit", "int", "Restarts allowed before the job fails."),
    Variable("pendingTimeoutSeconds", "int", "Seconds a replica may stay Pending."),
    Variable("recreationBackoff", "bool", "Whether a failed pod waits the re-creation "
             "back-off."),
    Variable("schedulingPolicy", "SchedulingPolicy", "Gang scheduling, when asked for."),
    Variable("suspend", "bool", "Whether the job is suspended."),
    Variable("managedBy", "string", "The controller that manages the job."),
))
"""The run policy's fields, as the kinds' `runPolicy` model (engine.api.runpolicy) has them:
a unit test keeps the two the same."""

ENGINE_STATUS_STRUCT = Struct("EngineStatus", "status", (
    Variable("phase", "string", "The phase word of the job machine's state."),
    Variable("state", "string", "The job machine's state."),
    Variable("restarts", "int", "Restarts counted against runPolicy.backoffLimit."),
    Variable("restartAttempt", "int", "The job's restart attempt (left out while 0)."),
    Variable("lastFailure", "string", "The last replica failure seen (left out while none)."),
    Variable("lastTransitions", "list(string)", "The last state changes, when kept."),
    Variable("record", "string", "The engine's bookkeeping as compact JSON (not an API)."),
    Variable("machine", "string", "The machine revision the job runs with."),
    Variable("conditions", "list(dyn)", "The job's conditions: type, status, reason, message, "
             "lastTransitionTime, lastUpdateTime."),
    Variable("replicaStatuses", "map(string, dyn)", "Kubeflow's pod counts per replica type."),
    Variable("startTime", "string", "When the job started (RFC 3339), once it has."),
    Variable("completionTime", "string", "When the job ended (RFC 3339), once it has."),
))
"""The engine's status just decided, as a Native-layout machine's `status` fields read it:
the fields `status.py` writes, so a misspelt one is an error where it is written."""

STRUCTS: tuple[Struct, ...] = (REPLICA_STRUCT, POD_STRUCT, SUMMARY_STRUCT,
                               SCHEDULING_POLICY_STRUCT, RUN_POLICY_STRUCT,
                               ENGINE_STATUS_STRUCT)
"""In dependency order: a struct's fields name only structs before it."""

POD = "pod"  # the group of replica observations computed from the replica's pod
CHILD = "child"  # the group computed from the replica's child object (a machine with spec.child)

OBSERVATIONS: tuple[Observation, ...] = (
    Observation("podMissing", "replica", "No pod exists for this replica index.", POD),
    Observation(
        "podPending", "replica", "The pod exists and its main container has not started.", POD
    ),
    Observation("podRunning", "replica", "The pod's main container is running.", POD),
    Observation(
        "podSucceeded",
        "replica",
        "The pod's main container terminated with exit code 0 and the kubelet will not "
        "restart it.",
        POD,
    ),
    Observation(
        "podFailed",
        "replica",
        "The pod's main container terminated with a non-zero exit code and the kubelet will "
        "not restart it, or the pod failed.",
        POD,
    ),
    Observation(
        "podRestarting",
        "replica",
        "The main container of a pod whose restartPolicy is OnFailure or Always ended and the "
        "kubelet restarts it in the same pod; holds once per end (`newRestarts` says how many "
        "ends are new), then the pod reads as podPending or podRunning again.",
        POD,
    ),
    Observation(
        "podGone",
        "replica",
        "The pod is being deleted (it has a deletionTimestamp): it will not run to the end. "
        "Never with `pod.replacementPolicy` Failed: a deleted pod is judged once it ended.",
        POD,
    ),
    Observation(
        "podLost",
        "replica",
        "The pod claims to run but cannot: its node is gone or not ready, or its phase is Unknown.",
        POD,
    ),
    Observation("childMissing", "replica", "No child object exists for this replica index.",
                CHILD),
    Observation(
        "childPending", "replica",
        "The child exists and its `ready`, `succeeded` and `failed` expressions are all false.",
        CHILD,
    ),
    Observation("childReady", "replica",
                "The child's `ready` expression holds (and it has not ended).", CHILD),
    Observation("childSucceeded", "replica", "The child's `succeeded` expression holds.", CHILD),
    Observation(
        "childFailed", "replica",
        "The child's `failed` expression holds (`reason` and `terminationMessage` are its "
        "`failureReason` and `failureMessage`).",
        CHILD,
    ),
    Observation(
        "childGone", "replica",
        "The child is being deleted (it has a deletionTimestamp) and has not ended.", CHILD,
    ),
    Observation(
        "timedOut", "replica", "The replica has been in its state longer than the state's timeout."
    ),
    Observation("deleting", "job", "The job has a deletionTimestamp."),
    Observation("suspended", "job", "The run policy says suspend: true.", "suspend"),
    Observation("resumed", "job", "The run policy does not say suspend: true.", "suspend"),
    Observation(
        "deadlineExceeded",
        "job",
        "The job has been active longer than runPolicy.activeDeadlineSeconds (time suspended "
        "does not count).",
    ),
    Observation(
        "invalid", "job", "The job failed validation against its kind (the reason is in `error`)."
    ),
    Observation(
        "settled",
        "job",
        "No pod of the job is terminating or left to delete: none has a deletionTimestamp, "
        "none is of an older restart attempt, none is to be deleted by this pass's actions "
        "(a held replica's `deletePod` included), and none the engine created is still "
        "missing from its watch.",
    ),
    Observation(
        "timedOut", "job", "The job has been in its state longer than the state's timeout."
    ),
    Observation(
        "replicaRestarting", "job",
        "A replica is in a state of phase Restarting (its pod is created again, or the kubelet "
        "restarts its container in place), as the replica machines stand after their steps.",
        "restarts",
    ),
    Observation(
        "noReplicaRestarting", "job", "No replica is in a state of phase Restarting.",
        "restarts",
    ),
)

_POLICY_CHOICES = ("All", "Running", "None")
_REASON_TEMPLATE = (
    "CamelCase reason; or a template whose rendered text is a Kubernetes condition reason "
    "(letters, digits, `_`, `,`, `:`), e.g. JobSet's `FailurePolicy_${rule}`."
)

ACTIONS: tuple[Action, ...] = (
    Action(
        "createPod", ("replica",), "Create the replica's pod (idempotent: a deterministic name).",
        (
            ActionArg("reason", "With it, a Normal Event `Created pod: <name>` of this reason "
                      "is posted when the pod is created (the Job controller's "
                      "SuccessfulCreate); none otherwise."),
        ),
        replayable=True, creates=True, acts_on="pod",
    ),
    Action("deletePod", ("replica",), "Delete the replica's pod, gracefully.", replayable=True,
           acts_on="pod"),
    Action(
        "createService", ("replica",), "Create the replica's headless service, if it has one.",
        replayable=True, creates=True,
    ),
    Action("deleteService", ("replica",), "Delete the replica's service.", replayable=True),
    Action(
        "createChild", ("replica",),
        "Create the replica's child object (spec.child) from its replica spec's template "
        "(idempotent: a deterministic name).",
        replayable=True, creates=True, acts_on="child",
    ),
    Action(
        "deleteChild", ("replica",),
        "Delete the replica's child object in the foreground: it is gone once its own "
        "children are (JobSet deletes its Jobs so).",
        replayable=True, acts_on="child",
    ),
    Action(
        "countRestart",
        ("replica",),
        "Count restarts against the replica index and the job (runPolicy.backoffLimit).",
        (
            ActionArg(
                "count",
                "How many restarts to count, an int (default 1), e.g. newRestarts.",
                kind="cel",
            ),
        ),
    ),
    Action(
        "cleanupPods",
        ("job",),
        "Delete the job's pods (and their services) as the clean-pod policy says.",
        (
            ActionArg(
                "policy",
                "All, Running or None; default: runPolicy.cleanPodPolicy, else the machine's "
                "defaults.",
                kind="string",
                choices=_POLICY_CHOICES,
            ),
        ),
        replayable=True,
    ),
    Action(
        "restartJob",
        ("job",),
        "Start a new attempt of the whole job: the restart attempt goes up by one (pods of "
        "older attempts are deleted), one restart is counted (runPolicy.backoffLimit), and "
        "every replica starts again from the initial state.",
        (
            ActionArg(
                "count",
                "How many restarts the new attempt counts against runPolicy.backoffLimit, an "
                "int (default 1); 0: the attempt is not counted (JobSet's "
                "RestartJobSetAndIgnoreMaxRestarts).",
                kind="cel",
            ),
        ),
        resets_world=True,
    ),
    Action(
        "setCondition",
        ("job", "replica"),
        "Set a condition on the job besides the one the state sets.",
        (
            ActionArg("type", "Condition type.", required=True),
            ActionArg(
                "status",
                "True, False or Unknown (default True).",
                choices=("True", "False", "Unknown"),
            ),
            ActionArg("reason", _REASON_TEMPLATE, kind="template"),
            ActionArg("message", "Message template.", kind="template"),
        ),
    ),
    Action(
        "event",
        ("job", "replica"),
        "Post an extra Event on the job.",
        (
            ActionArg("reason", _REASON_TEMPLATE, required=True, kind="template"),
            ActionArg("type", "Normal or Warning (default Normal).", choices=("Normal", "Warning")),
            ActionArg("message", "Message template.", kind="template"),
        ),
    ),
)

_SUMMARY = "map(string, ReplicaSummary)"

COMMON_VARIABLES: tuple[Variable, ...] = (
    Variable(
        "job", "Job", "The job object: apiVersion, kind, metadata (without "
        "managedFields), spec, status; typed by the kind's schema where it is known."
    ),
    Variable(
        "runPolicy",
        "RunPolicy",
        "The job's run policy with the machine's defaults filled in.",
    ),
    Variable(
        "replicas",
        _SUMMARY,
        "Per replica type: position (its place in the job's order, from 0), desired (its "
        "members: replicas, or a pool's completions), "
        "parallelism (members that may have a pod at once), active (running pods; children "
        "that exist and have not ended), ready (running pods whose Ready condition is True; "
        "children whose `ready` holds), available (ready pods Ready for governs."
        "minReadySeconds), fullyLabeled (live pods with every label of their template), "
        "live (pods or children that have not ended and are "
        "not being deleted, pending or running: the Job API's active), terminating (pods or "
        "children being deleted), "
        "waiting (members not started yet: a pool's wait for a place), succeeded, failed, "
        "restarts, one count per replica phase word in lowerCamelCase (pending, running, "
        "...), states (count per state name), completedIndexes and failedIndexes (members "
        "in a success or failure terminal state, as `0-3,7`).",
    ),
    Variable("restarts", "int", "Restarts counted for the whole job (countRestart)."),
    Variable("error", "string", "Why the job is invalid, or an empty string."),
    Variable(
        "lastFailure",
        "string",
        "The last replica failure seen, as `Worker-1 (exit code 2, Error: <message>)`, "
        "else ''.",
    ),
    Variable(
        "lastFailureCause",
        "string",
        "The failure rule the last failure (`lastFailure`) matched, in the Job API's words: "
        "`Container main for pod team/p-job-0 failed with exit code 42 matching FailJob rule "
        "at index 0` or `Pod team/p has condition DisruptionTarget matching Ignore rule at "
        "index 1`; '' when it matched none.",
    ),
    Variable(
        "gangScheduler",
        "string",
        "The PodGroup API the job is gang scheduled with: 'volcano' "
        "(scheduling.volcano.sh/v1beta1) or 'scheduler-plugins' (scheduling.x-k8s.io/v1alpha1), "
        "the engine's --gang-scheduler-name; '' when the job is not gang scheduled (it is when "
        "its run policy has a schedulingPolicy, or the engine runs with --gang-scheduling).",
    ),
    Variable(
        "objects",
        "map(string, map(string, dyn))",
        "Per child object the machine declares (spec.objects), by its name there: the object "
        "as last seen (metadata and status, e.g. a PodGroup's phase), or an empty map while "
        "it does not exist.",
    ),
    Variable(
        "children",
        "list(map(string, dyn))",
        "With spec.child: every replica's child of the current attempt that exists, in type "
        "order then by index, as {type, index, observation (childPending, childReady, "
        "childSucceeded, childFailed, childGone), reason and message (its failureReason and "
        "failureMessage when failed, else ''), object (as last seen: metadata and status)}; "
        "[] for a machine of pods. JobSet finds its first failed Job and matches its failure "
        "rules with it.",
    ),
    Variable(
        "references",
        "References",
        "Per object the machine names in governs.references, by its name there (a field: "
        "`references.runtime`; another name is an error): the object as the engine last saw "
        "it (apiVersion, kind, metadata, spec, ...), or an empty map while it is absent or "
        "cannot be named. A TrainJob reads its runtime's template so.",
    ),
)

REPLICA_VARIABLES: tuple[Variable, ...] = (
    Variable(
        "replica",
        "Replica",
        "This replica: type, index, restarts (of this index), desired (replicas of its type).",
    ),
    Variable("policy", "string", "The restart policy of this replica's type."),
    Variable(
        "pod",
        "Pod",
        "The observed pod: name, phase, reason, exitCode, terminationReason, restartCount, "
        "ready; empty when there is none.",
    ),
    Variable(
        "child",
        "map(string, dyn)",
        "With spec.child: the replica's child object as last seen (metadata and status); "
        "empty while there is none, and for a machine whose replicas are pods.",
    ),
    Variable(
        "exitCode",
        "int",
        "The main container's exit code, of its last end when the kubelet restarted it in "
        "place; -1 while it has not ended.",
    ),
    Variable(
        "reason",
        "string",
        "The main container's termination reason (OOMKilled, Error, Completed, ...), else ''.",
    ),
    Variable(
        "terminationMessage",
        "string",
        "The main container's termination message (its terminationMessagePath, or the end of "
        "its log with FallbackToLogsOnError), else ''.",
    ),
    Variable(
        "termination",
        "string",
        "The main container's end in words: `exit code 2, Error: <last line of the "
        "termination message>`; 'no exit code' when it has none.",
    ),
    Variable(
        "newRestarts",
        "int",
        "With podRestarting: how many ends of the main container are new since the last "
        "look (usually 1), else 0.",
    ),
    Variable(
        "failureAction",
        "string",
        "For a failed or restarting pod: the action of the job's first failure rule that "
        "matches it (FailJob, RestartJob, RestartReplica, Ignore, Count, FailIndex), else ''.",
    ),
    Variable(
        "failureCause",
        "string",
        "With failureAction: what of the pod the rule matched, in the Job API's words (see "
        "lastFailureCause), else ''.",
    ),
)

STATUS_VARIABLES: tuple[Variable, ...] = (
    Variable(
        "status",
        "EngineStatus",
        "In a Native-layout machine's `status` fields: the engine's status just decided (state, "
        "phase, conditions, startTime, completionTime, restarts, ...), kept in the job's "
        "jobmachine.dev/status annotation.",
    ),
)

TEMPLATE_VARIABLES: tuple[Variable, ...] = (
    Variable(
        "clusterSpec",
        "map(string, list(string))",
        "Lower-case replica type -> host:port of each replica's service (TF_CONFIG's cluster).",
    ),
    Variable(
        "hosts",
        "map(string, list(string))",
        "Replica type -> the host name of each replica in index order: its pod's name, which "
        "its headless service (where it has one) shares.",
    ),
)

VALIDATION_VARIABLES: tuple[Variable, ...] = (COMMON_VARIABLES[0],)
"""What a validation rule sees: the job alone (it is checked before anything is observed)."""

CHILD_STATUS_VARIABLES: tuple[Variable, ...] = (
    COMMON_VARIABLES[0],
    Variable("child", "map(string, dyn)",
             "The replica's child object as last seen: metadata and status."),
)
"""What spec.child's status expressions see: the job and the child (they make the replica's
observation, before anything else is computed)."""


def lower_camel(word: str) -> str:
    """A phase word as the replica summary counts it: `Running` -> `running`,
    `SucceededAsChief` -> `succeededAsChief`."""
    return word[:1].lower() + word[1:]


def variables_for(
    level: Level, *, template: bool = False, validation: bool = False, status: bool = False,
    child: bool = False,
) -> tuple[Variable, ...]:
    """The CEL variables visible to a guard, template, validation rule, status field or
    child status expression at `level`."""
    if validation:
        return VALIDATION_VARIABLES
    if child:
        return CHILD_STATUS_VARIABLES
    found = COMMON_VARIABLES
    if status:
        found += STATUS_VARIABLES
    if level == "replica":
        found += REPLICA_VARIABLES
    if template:
        found += TEMPLATE_VARIABLES
    return found


def observations_for(level: Level) -> dict[str, Observation]:
    return {o.name: o for o in OBSERVATIONS if o.level == level}


def actions_for(level: Level) -> dict[str, Action]:
    return {a.name: a for a in ACTIONS if level in a.levels}


REPLAYABLE_ACTIONS = frozenset(a.name for a in ACTIONS if a.replayable)
CREATING_ACTIONS = frozenset(a.name for a in ACTIONS if a.creates)
WORLD_RESETTING_ACTIONS = frozenset(a.name for a in ACTIONS if a.resets_world)


@dataclass(frozen=True)
class CelFunction:
    """A function the engine adds to CEL, called as `name(parameters...)`."""

    name: str
    # CEL type signatures, as in `Variable.cel_type`.
    parameters: tuple[str, ...]
    result: str
    meaning: str

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(self.parameters)}) -> {self.result}"


FUNCTIONS: tuple[CelFunction, ...] = (
    CelFunction(
        "sum",
        ("list(int)",),
        "int",
        "The sum of a list of ints (0 for an empty list), e.g. counts across replica types.",
    ),
    CelFunction(
        "indexes",
        ("string",),
        "list(int)",
        "The indexes an interval list names, ascending: '1,3-5' gives [1, 3, 4, 5] (the Job "
        "API's completedIndexes and successPolicy's succeededIndexes; '' gives []).",
    ),
    CelFunction(
        "merge",
        ("map(string, dyn)", "map(string, dyn)"),
        "map(string, dyn)",
        "The first map with the second's entries added, the second's value winning for a key "
        "in both: a template's labels with the machine's (`merge(template.labels, {...})`).",
    ),
    CelFunction(
        "sha1",
        ("string",),
        "string",
        "The SHA-1 digest of a string's UTF-8 bytes, as 40 lower-case hex digits (JobSet's "
        "job-key label).",
    ),
    CelFunction(
        "firstIndex",
        ("list(bool)",),
        "int",
        "The position of the first true in a list of bools, or -1: which rule of a list "
        "matched first.",
    ),
    CelFunction(
        "patch",
        ("map(string, dyn)", "map(string, dyn)"),
        "map(string, dyn)",
        "The first map with the second applied as a JSON merge patch (RFC 7386): maps merge "
        "key by key at every depth, a null removes its key, any other value (a list too) "
        "replaces: a JobSet's replicated job with its counts set "
        "(`patch(rj, {'template': {'spec': {'parallelism': 2, 'completions': 2}}})`).",
    ),
    CelFunction(
        "sort",
        ("list(string)",),
        "list(string)",
        "The strings in ascending order. A map's keys come out of `filter` and `map` in an "
        "order that changes from process to process, so a message that names replica types "
        "sorts them (`sort(replicas.filter(t, replicas[t].failed > 0))`) to read the same "
        "every time.",
    ),
    CelFunction(
        "sshKeyPair",
        (),
        "map(string, string)",
        "A new SSH key pair, different at each call, as Kubeflow Trainer's MPI plugin makes "
        "one: an ECDSA P-521 key, `privateKey` in PEM (`EC PRIVATE KEY`) and `publicKey` in "
        "OpenSSH's authorized_keys form with its newline. For an object made once and never "
        "rewritten (`update: Never`): a TrainJob's `<trainjob>-mpi-ssh-auth` Secret.",
    ),
    CelFunction(
        "strategicPatch",
        ("map(string, dyn)", "list(dyn)", "map(string, string)"),
        "map(string, dyn)",
        "The first map with each map of the list applied in turn as a Kubernetes strategic "
        "merge patch: maps merge key by key, a null removes its key, a list whose dotted "
        "field path the third map names is merged entry by entry on that key (an entry new "
        "to it goes first, as apimachinery orders them), any other value replaces: "
        "Trainer's runtimePatches over a JobSet spec "
        "(`strategicPatch(spec, patches, {'replicatedJobs': 'name'})`).",
    ),
    CelFunction(
        "upsert",
        ("list(dyn)", "list(dyn)", "string"),
        "list(dyn)",
        "The first list of maps with each map of the second put in by the key field named: "
        "in the place of the entry with the same value there, else appended, as Kubernetes "
        "merges env, containers and ports (`upsert(c.env, [{'name': 'RANK', 'value': '0'}], "
        "'name')`).",
    ),
)


def job_value(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The value of the `job` variable: the object without `metadata.managedFields`.

    managedFields is the API server's record of which client wrote which field, often a
    third of the object; no rule has a reason to read it, and every evaluation round pays
    to convert what `job` holds.
    """
    metadata = job.get("metadata")
    if not isinstance(metadata, Mapping) or "managedFields" not in metadata:
        return job
    return {**job, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
