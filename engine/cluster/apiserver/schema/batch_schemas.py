"""The published schemas of batch/v1 Job and CronJob: their specs and statuses, field by field.

`kubectl explain job.spec.completions` reads these, so the spec and status
fields carry their types and a description; the pod template inside stays open
(its metadata is an ObjectMeta), as a Pod's spec is, because the server, not
kubectl, validates it. The fields are built with the reference to ObjectMeta in
the prefix of the document they go into (OpenAPI v3 or v2). The descriptions
are this project's words.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.cluster.apiserver.schema.schema_parts import OPEN as _OPEN
from engine.cluster.apiserver.schema.schema_parts import Schema, pod_template
from engine.cluster.apiserver.schema.schema_parts import integer as _int
from engine.cluster.apiserver.schema.schema_parts import obj as _object
from engine.cluster.apiserver.schema.schema_parts import text as _text


def _flag(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def _time(description: str) -> Schema:
    return {"type": "string", "format": "date-time", "description": description}


def _atomic_list(items: Schema, description: str) -> Schema:
    return {"type": "array", "items": items, "x-kubernetes-list-type": "atomic",
            "description": description}




def _pod_template(meta: Schema) -> Schema:
    return pod_template(meta, "The pods this Job makes: their metadata and their pod spec.")


def _pod_failure_policy() -> Schema:
    exit_codes = _object(
        "Matches a failed pod by the exit codes of its terminated containers.",
        {
            "containerName": _text("Only this container's exit code is looked at."),
            "operator": _text("Whether an exit code must be In or NotIn the values.", "In",
                              "NotIn"),
            "values": {"type": "array", "items": {"type": "integer", "format": "int32"},
                       "x-kubernetes-list-type": "set",
                       "description": "Exit codes, ordered, without duplicates."},
        },
        "operator", "values",
    )
    condition = _object(
        "Matches a failed pod by one of its conditions.",
        {"type": _text("The pod condition type."),
         "status": _text("The condition status to match (True when unset).")},
        "type",
    )
    rule = _object(
        "One rule: what to do with a failed pod it matches.",
        {
            "action": _text("What a match does: FailJob, FailIndex, Ignore or Count.", "Count",
                            "FailIndex", "FailJob", "Ignore"),
            "onExitCodes": exit_codes,
            "onPodConditions": _atomic_list(condition, "Pod conditions that match."),
        },
        "action",
    )
    return _object(
        "How failed pods count toward the backoff limit; the first matching rule decides.",
        {"rules": _atomic_list(rule, "The rules, at most 20, tried in order.")},
        "rules",
    )


def _success_policy() -> Schema:
    rule = _object(
        "Enough succeeded indexes, among the listed ones when both fields are set.",
        {"succeededIndexes": _text("Indexes such as 0,2-5 that must succeed."),
         "succeededCount": _int("How many indexes must succeed.")},
    )
    return _object(
        "When an Indexed Job may be declared succeeded before every index succeeds.",
        {"rules": _atomic_list(rule, "The rules, at most 20; the first met ends the Job.")},
        "rules",
    )


def job_spec(meta: Schema) -> Schema:
    """JobSpec, its pod template's metadata referring to `meta` (ObjectMeta)."""
    return _object("What the Job runs and when it is done.", {
        "parallelism": _int("How many pods may run at once (default 1)."),
        "completions": _int("How many pods must succeed; unset for a work queue, where one "
                            "success is enough."),
        "activeDeadlineSeconds": _int("Seconds the Job may be active before it fails.", "int64"),
        "podFailurePolicy": _pod_failure_policy(),
        "successPolicy": _success_policy(),
        "backoffLimit": _int("Failed pods allowed before the Job fails (default 6)."),
        "backoffLimitPerIndex": _int("Failed pods allowed per index of an Indexed Job."),
        "maxFailedIndexes": _int("Failed indexes allowed before an Indexed Job fails."),
        "selector": {**_OPEN, "description": "The label selector of the Job's pods; generated "
                     "unless manualSelector is true."},
        "manualSelector": _flag("Whether the selector is the user's own (default false)."),
        "template": _pod_template(meta),
        "ttlSecondsAfterFinished": _int("Seconds after finishing at which the Job is deleted."),
        "completionMode": _text("NonIndexed, or Indexed: each pod gets an index.",
                                "Indexed", "NonIndexed"),
        "suspend": _flag("Whether the Job is suspended: no pods run (default false)."),
        "podReplacementPolicy": _text("When a failed pod is replaced: once it is terminating, "
                                      "or only once it has failed.", "Failed",
                                      "TerminatingOrFailed"),
        "managedBy": _text("The controller that runs the Job, as a domain-prefixed path."),
    }, "template")


def job_status() -> Schema:
    condition = _object(
        "One condition of a Job.",
        {"type": _text("Complete, Failed, Suspended, FailureTarget or SuccessCriteriaMet."),
         "status": _text("True, False or Unknown."),
         "lastProbeTime": _time("When the condition was last checked."),
         "lastTransitionTime": _time("When the condition last changed."),
         "reason": _text("Why, in one word."),
         "message": _text("Why, for people.")},
        "type", "status",
    )
    uncounted = _object(
        "Pods that finished but are not counted in the status yet.",
        {name: {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set",
                "description": f"UIDs of {name} pods."} for name in ("succeeded", "failed")},
    )
    conditions = _atomic_list(condition, "The Job's conditions.")
    conditions |= {"x-kubernetes-patch-merge-key": "type", "x-kubernetes-patch-strategy": "merge"}
    return _object("What the Job has done so far.", {
        "conditions": conditions,
        "startTime": _time("When the Job started running."),
        "completionTime": _time("When the Job completed."),
        "active": _int("Pods pending or running."),
        "succeeded": _int("Pods that succeeded."),
        "failed": _int("Pods that failed."),
        "terminating": _int("Pods being terminated."),
        "completedIndexes": _text("Succeeded indexes of an Indexed Job, such as 1,3-5."),
        "failedIndexes": _text("Failed indexes, with backoffLimitPerIndex."),
        "uncountedTerminatedPods": uncounted,
        "ready": _int("Active pods that are ready."),
    })


def cronjob_spec(meta: Schema) -> Schema:
    template = _object(
        "The Job each run creates.",
        {"metadata": {"allOf": [meta], "description": "Labels and annotations of the Jobs."},
         "spec": job_spec(meta)},
    )
    return _object("When and how the CronJob runs Jobs.", {
        "schedule": _text("The cron schedule, such as */5 * * * *."),
        "timeZone": _text("The IANA time zone the schedule is read in."),
        "startingDeadlineSeconds": _int("Seconds a missed run may still start.", "int64"),
        "concurrencyPolicy": _text("Allow, Forbid or Replace a run while one is active.",
                                   "Allow", "Forbid", "Replace"),
        "suspend": _flag("Whether new runs are held back (default false)."),
        "jobTemplate": template,
        "successfulJobsHistoryLimit": _int("Succeeded Jobs kept (default 3)."),
        "failedJobsHistoryLimit": _int("Failed Jobs kept (default 1)."),
    }, "schedule", "jobTemplate")


def cronjob_status() -> Schema:
    return _object("What the CronJob has done so far.", {
        "active": _atomic_list({**_OPEN, "description": "A reference to a Job."},
                               "The Jobs running now."),
        "lastScheduleTime": _time("When a Job was last scheduled."),
        "lastSuccessfulTime": _time("When a Job last succeeded."),
    })


# (group, kind) -> the top-level fields besides apiVersion, kind and metadata, built with the
# document's reference to ObjectMeta.
BATCH_FIELDS: dict[tuple[str, str], Callable[[Schema], dict[str, Schema]]] = {
    ("batch", "Job"): lambda meta: {"spec": job_spec(meta), "status": job_status()},
    ("batch", "CronJob"): lambda meta: {"spec": cronjob_spec(meta), "status": cronjob_status()},
}
BATCH_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("batch", "Job"): "Job runs pods until enough of them succeed.",
    ("batch", "CronJob"): "CronJob creates Jobs on a cron schedule.",
}
