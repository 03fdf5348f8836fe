"""The warnings kube-apiserver sends with a Job or CronJob write (the `Warning` headers).

A name that is not a DNS label still works but makes odd pod hostnames; an
Indexed Job far beyond 10^5 completions and 10^4 parallelism may lose track of
its indexes; a CronJob schedule with its own `TZ=` should use `spec.timeZone`.
They are sent on create, and on an update that changes the spec (the TZ one on
every CronJob update whose schedule has it); a status write sends none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.cluster.apiserver.validation.names import dns1123_label_errors

_COMPLETIONS_SOFT_LIMIT = 100_000
_PARALLELISM_SOFT_LIMIT = 10_000
_INDEXED_TRACKING = (
    "In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher "
    "than 10^4, Kubernetes might not be able to track completedIndexes when a big number of "
    "indexes fail"
)
# Upstream names the field spec.spec.schedule in this warning.
_TZ_IN_SCHEDULE = (
    "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see "
    "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
)
Spec = Mapping[str, Any]


def write_warnings(kind: str, obj: Spec, old: Spec | None) -> list[str]:
    """The warnings of a create (`old` None) or an update of the main resource."""
    warn = _WARNINGS.get(kind)
    return [] if warn is None else warn(obj, old)


def _job(obj: Spec, old: Spec | None) -> list[str]:
    if old is None:
        return [*_name_warnings(obj), *_job_spec_warnings(obj.get("spec") or {}, "spec")]
    if obj.get("spec") != old.get("spec"):
        return _job_spec_warnings(obj.get("spec") or {}, "spec")
    return []


def _cronjob(obj: Spec, old: Spec | None) -> list[str]:
    spec = obj.get("spec") or {}
    template_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    path = "spec.jobTemplate.spec"
    if old is None:
        return [*_name_warnings(obj), *_job_spec_warnings(template_spec, path)]
    warnings = _job_spec_warnings(template_spec, path) if spec != old.get("spec") else []
    if "TZ" in str(spec.get("schedule") or ""):
        warnings.append(_TZ_IN_SCHEDULE)
    return warnings


def _name_warnings(obj: Spec) -> list[str]:
    name = str((obj.get("metadata") or {}).get("name") or "")
    problems = dns1123_label_errors(name)
    if not problems:
        return []
    return [
        "metadata.name: this is used in Pod names and hostnames, which can result in surprising "
        f"behavior; a DNS label is recommended: [{' '.join(problems)}]"
    ]


def _job_spec_warnings(spec: Spec, path: str) -> list[str]:
    """WarningsForJobSpec's own: the size an Indexed Job can still track."""
    if spec.get("completionMode") != "Indexed":
        return []
    completions, parallelism = spec.get("completions") or 0, spec.get("parallelism") or 0
    if completions > _COMPLETIONS_SOFT_LIMIT and parallelism > _PARALLELISM_SOFT_LIMIT:
        return [f"{path}: {_INDEXED_TRACKING}"]
    return []


_WARNINGS: dict[str, Callable[[Spec, Spec | None], list[str]]] = {
    "Job": _job,
    "CronJob": _cronjob,
}
