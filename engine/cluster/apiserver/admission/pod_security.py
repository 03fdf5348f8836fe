"""The PodSecurity admission plugin: the Pod Security Standards per namespace, as
kube-apiserver enforces them (k8s.io/pod-security-admission's admission package).

A namespace chooses a level for each mode through its labels:
`pod-security.kubernetes.io/enforce`, `/audit`, `/warn` (privileged, baseline or restricted;
no label: privileged, which allows everything) and `/enforce-version`, `/audit-version`,
`/warn-version` (`latest` or `v1.N`; no label: latest). Without a warn label, warn follows a
valid enforce level (and its version, unless warn-version is set).

- A pod create, or an update that changes a container image or adds an ephemeral container
  (upstream's "significant" update; any other pod update passes unchecked), that the enforce
  level forbids is refused with 403 `pods "NAME" is forbidden: violates PodSecurity
  "baseline:latest": REASON (DETAIL), ...`. One that passes gets a `Warning`, `would violate
  PodSecurity "restricted:latest": ...`, when the warn level forbids it.
- A Job, CronJob, Deployment, ReplicaSet or ReplicationController whose pod template the
  warn level forbids is stored with that warning (never refused), as upstream treats pod
  controllers.
- A namespace whose labels are invalid is refused on create with 422, and on update when
  they changed; an update that tightens the enforce level answers with warnings naming the
  existing pods the new level forbids (`existing pods in namespace "x" violate the new
  PodSecurity enforce level "restricted:latest"`, then `pod-a (and 2 other pods): REASONS`).

An invalid level fails closed for enforce (restricted) and open for audit and warn
(privileged); an invalid version reads as latest.

Deliberate differences from upstream (docs/pod-security.md):
- Every version, `v1.N` included, is evaluated with the newest checks
  (pod_security_checks.py); the version is kept in the messages as labelled. Upstream runs
  each check's revision for that version, so a pinned older version can allow what latest
  refuses (the sysctls added later, container_engine_t, user-namespace relaxations) and the
  reverse (checks added later, such as probe and lifecycle hosts).
- No configuration file: the defaults are privileged:latest for all three modes, and no
  namespace, user or runtime class is exempt.
- Audit labels are parsed and validated but write nothing: the audit log
  (auth/audit.py) has no way for admission to add annotations.
- The check of existing pods on a namespace update has upstream's limits (3000 pods, one
  second) but no request deadline to halve.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.admission.pod_security_checks import (
    BASELINE,
    RESTRICTED,
    Aggregate,
    check_pod,
)
from engine.cluster.apiserver.encoding.go_text import go_quote
from engine.cluster.apiserver.errors import Cause, forbidden_resource, internal, invalid
from engine.cluster.apiserver.registry.builtins import (
    CRONJOBS,
    JOBS,
    NAMESPACES,
    PODS,
    WORKLOAD_TYPES,
)
from engine.cluster.apiserver.storage.objects import Obj, ObjectTable, TypeKey
from engine.cluster.apiserver.validation import field_errors

PRIVILEGED = "privileged"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
LATEST = "latest"

LABEL_PREFIX = "pod-security.kubernetes.io/"
ENFORCE_LEVEL_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"

# How many existing pods, and for how long, a tightened enforce level is checked against.
MAX_PODS_TO_CHECK = 3000
POD_CHECK_TIMEOUT_S = 1.0

_VERSION = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")
_MAX_INT = 2**63 - 1  # strconv.Atoi's limit on a 64-bit machine
_LEVEL_ERROR = f"must be one of {', '.join(LEVELS)}"
_VERSION_ERROR = 'must be "latest" or "v1.x"'


@dataclass(frozen=True)
class LevelVersion:
    level: str
    version: str = LATEST

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


PRIVILEGED_LATEST = LevelVersion(PRIVILEGED)


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = PRIVILEGED_LATEST
    audit: LevelVersion = PRIVILEGED_LATEST
    warn: LevelVersion = PRIVILEGED_LATEST

    @property
    def fully_privileged(self) -> bool:
        return all(lv.level == PRIVILEGED for lv in (self.enforce, self.audit, self.warn))


DEFAULT_POLICY = Policy()


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or 1 as `a` is less strict than, as strict as, or stricter than `b`."""
    rank = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}
    if a == b or a not in rank or b not in rank:
        return 0
    return -1 if rank[a] < rank[b] else 1


def parse_level(value: str) -> tuple[str, str | None]:
    """The level and None, or restricted and why `value` is not a level."""
    return (value, None) if value in LEVELS else (RESTRICTED, _LEVEL_ERROR)


def parse_version(value: str) -> tuple[str, str | None]:
    """`latest` or `v1.N` and None, or latest and why `value` is not a version."""
    if value == LATEST:
        return LATEST, None
    match = _VERSION.fullmatch(value)
    if match is None or int(match.group(1)) > _MAX_INT:
        return LATEST, _VERSION_ERROR
    return value, None


def policy_to_evaluate(labels: Mapping[str, Any] | None,
                       defaults: Policy = DEFAULT_POLICY) -> tuple[Policy, list[Cause]]:
    """The namespace's policy from its labels, and a cause per invalid label."""
    if not labels:
        return defaults, []
    causes: list[Cause] = []

    def read(label: str, parse: Any, current: str) -> tuple[str, bool]:
        if label not in labels:
            return current, False
        value = str(labels[label])
        parsed, error = parse(value)
        if error is not None:
            path = f"metadata.labels[{label}]"
            causes.append(field_errors.invalid(path, value, error))
        return parsed, error is None

    enforce_level, enforce_ok = read(ENFORCE_LEVEL_LABEL, parse_level, defaults.enforce.level)
    enforce_version, _ = read(ENFORCE_VERSION_LABEL, parse_version, defaults.enforce.version)
    audit_level, audit_ok = read(AUDIT_LEVEL_LABEL, parse_level, defaults.audit.level)
    if AUDIT_LEVEL_LABEL in labels and not audit_ok:
        audit_level = PRIVILEGED  # fail open for audit
    audit_version, _ = read(AUDIT_VERSION_LABEL, parse_version, defaults.audit.version)
    warn_level, warn_ok = read(WARN_LEVEL_LABEL, parse_level, defaults.warn.level)
    if WARN_LEVEL_LABEL in labels and not warn_ok:
        warn_level = PRIVILEGED  # fail open for warn
    warn_version, _ = read(WARN_VERSION_LABEL, parse_version, defaults.warn.version)
    if (WARN_LEVEL_LABEL not in labels and enforce_ok
            and compare_levels(enforce_level, warn_level) > 0):
        warn_level = enforce_level
        if WARN_VERSION_LABEL not in labels:
            warn_version = enforce_version
    return Policy(
        LevelVersion(enforce_level, enforce_version),
        LevelVersion(audit_level, audit_version),
        LevelVersion(warn_level, warn_version),
    ), causes


def evaluate(lv: LevelVersion, metadata: Mapping[str, Any], spec: Mapping[str, Any]
             ) -> Aggregate:
    """What `lv` forbids in a pod (or pod template): every version with the newest checks."""
    return check_pod(lv.level, metadata, spec)


def default_namespace_labels(level: str = BASELINE) -> dict[str, str]:
    """The labels `jobmachine up` puts on the `default` namespace: enforce `level` (baseline
    unless told otherwise; privileged turns enforcement off). Raises ValueError for a level
    that is not one of LEVELS."""
    if level not in LEVELS:
        raise ValueError(f"pod security level must be one of {', '.join(LEVELS)}, not {level!r}")
    return {ENFORCE_LEVEL_LABEL: level}


def admit_pod_security(key: TypeKey, obj: Obj, old: Obj | None, table: ObjectTable
                       ) -> list[str]:
    """The plugin on a create (`old` None) or update of the whole object (subresources are
    not checked: a pod's served ones, status, binding, log and exec, are those upstream
    ignores). Returns the warnings to send; raises the refusal."""
    if key == PODS.key:
        return _admit_pod(obj, old, table)
    if key == NAMESPACES.key:
        return _admit_namespace(obj, old, table)
    if key in _POD_CONTROLLERS:
        return _admit_pod_controller(key, obj, table)
    return []


# Kinds whose pod template the plugin warns about (pod controllers): Jobs, CronJobs and the
# replicated workloads.
_POD_CONTROLLERS = frozenset({JOBS.key, CRONJOBS.key, *(rt.key for rt in WORKLOAD_TYPES)})


def _labels(obj: Obj | None) -> Mapping[str, Any]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _namespace_policy(table: ObjectTable, namespace: str) -> tuple[Policy, list[Cause]] | None:
    entry = table.get(NAMESPACES.key, "", namespace)
    return None if entry is None else policy_to_evaluate(_labels(entry.obj))


def _would_violate(lv: LevelVersion, result: Aggregate) -> str:
    return f"would violate PodSecurity {go_quote(str(lv))}: {result.forbidden_detail()}"


def _admit_pod(pod: Obj, old: Obj | None, table: ObjectTable) -> list[str]:
    metadata = _dict(pod.get("metadata"))
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    found = _namespace_policy(table, namespace)
    if found is None:
        raise internal(f'Internal error occurred: failed to lookup namespace "{namespace}"')
    policy, causes = found
    if not causes and policy.fully_privileged:
        return []
    if old is not None and not significant_pod_update(pod, old):
        return []
    spec = _dict(pod.get("spec"))
    enforced = evaluate(policy.enforce, metadata, spec)
    if not enforced.allowed:
        raise forbidden_resource(
            "", PODS.plural, name,
            f"violates PodSecurity {go_quote(str(policy.enforce))}: "
            f"{enforced.forbidden_detail()}",
        )
    warned = enforced if policy.warn == policy.enforce else evaluate(policy.warn, metadata, spec)
    return [] if warned.allowed else [_would_violate(policy.warn, warned)]


def _images(spec: Mapping[str, Any], key: str) -> list[Any]:
    return [_dict(c).get("image") for c in spec.get(key) or ()]


def significant_pod_update(pod: Obj, old: Obj) -> bool:
    """Whether an update needs checking: a container or init container image changed (or
    their number), or an ephemeral container was added or changed its image. Nothing else
    a pod update may change matters to the checks."""
    spec, old_spec = _dict(pod.get("spec")), _dict(old.get("spec"))
    for key in ("containers", "initContainers"):
        if _images(spec, key) != _images(old_spec, key):
            return True
    old_ephemeral = {_dict(c).get("name"): _dict(c).get("image")
                     for c in old_spec.get("ephemeralContainers") or ()}
    return any(
        _dict(c).get("name") not in old_ephemeral
        or old_ephemeral[_dict(c).get("name")] != _dict(c).get("image")
        for c in spec.get("ephemeralContainers") or ()
    )


def _admit_pod_controller(key: TypeKey, obj: Obj, table: ObjectTable) -> list[str]:
    """A pod controller's pod template (a Job's, a Deployment's...): warned about, never
    refused."""
    namespace = str(_dict(obj.get("metadata")).get("namespace") or "")
    found = _namespace_policy(table, namespace)
    if found is None:
        return []
    policy, causes = found
    if not causes and policy.warn.level == PRIVILEGED and policy.audit.level == PRIVILEGED:
        return []
    spec = _dict(obj.get("spec"))
    if key == CRONJOBS.key:
        spec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return []
    warned = evaluate(policy.warn, _dict(template.get("metadata")), _dict(template.get("spec")))
    return [] if warned.allowed else [_would_violate(policy.warn, warned)]


def _admit_namespace(namespace: Obj, old: Obj | None, table: ObjectTable) -> list[str]:
    name = str(_dict(namespace.get("metadata")).get("name") or "")
    policy, causes = policy_to_evaluate(_labels(namespace))
    if old is None:
        if causes:
            raise invalid("", NAMESPACES.kind, name, causes)
        return []
    old_policy, old_causes = policy_to_evaluate(_labels(old))
    if causes and (not old_causes or causes != old_causes):
        raise invalid("", NAMESPACES.kind, name, causes)
    new, before = policy.enforce, old_policy.enforce
    if new == before or new.level == PRIVILEGED:
        return []
    if new.version == before.version and compare_levels(new.level, before.level) < 1:
        return []
    pods = [entry.obj for key in table.bucket(PODS.key).keys_after(name, None)
            if (entry := table.get(PODS.key, *key)) is not None]
    return existing_pod_warnings(name, new, pods)


def _controller_uid(pod: Obj) -> str | None:
    for ref in _dict(pod.get("metadata")).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return None


def _prioritized(pods: Iterable[Obj]) -> list[Obj]:
    """One pod per controller first (and every pod without one), the other replicas last."""
    first: list[Obj] = []
    replicas: list[Obj] = []
    seen: set[str] = set()
    for pod in pods:
        uid = _controller_uid(pod)
        if uid is not None and uid in seen:
            replicas.append(pod)
            continue
        if uid is not None:
            seen.add(uid)
        first.append(pod)
    return first + replicas


def existing_pod_warnings(namespace: str, enforce: LevelVersion, pods: Iterable[Obj], *,
                          max_pods: int = MAX_PODS_TO_CHECK,
                          timeout_s: float = POD_CHECK_TIMEOUT_S) -> list[str]:
    """The warnings for a namespace's new enforce level: which existing pods it forbids,
    grouped by their reasons, each group named by its lexically first pod."""
    deadline = time.monotonic() + timeout_s
    prioritized = _prioritized(pods)
    total = len(prioritized)
    prioritized = prioritized[:max_pods]
    checked = len(prioritized)
    by_reasons: dict[str, tuple[str, int]] = {}  # reasons -> (first pod name, pod count)
    for index, pod in enumerate(prioritized):
        metadata = _dict(pod.get("metadata"))
        result = evaluate(enforce, metadata, _dict(pod.get("spec")))
        if not result.allowed:
            reasons, pod_name = result.forbidden_reason(), str(metadata.get("name") or "")
            first, count = by_reasons.get(reasons, (pod_name, 0))
            by_reasons[reasons] = (min(first, pod_name), count + 1)
        if time.monotonic() > deadline:
            checked = index + 1
            break
    warnings = []
    if checked < total:
        warnings.append(f"new PodSecurity enforce level only checked against the first "
                        f"{checked} of {total} existing pods")
    if by_reasons:
        warnings.append(f"existing pods in namespace {go_quote(namespace)} violate the new "
                        f"PodSecurity enforce level {go_quote(str(enforce))}")
    return warnings + sorted(_decorated(first, count, reasons)
                             for reasons, (first, count) in by_reasons.items())


def _decorated(pod_name: str, count: int, reasons: str) -> str:
    if count == 1:
        return f"{pod_name}: {reasons}"
    if count == 2:
        return f"{pod_name} (and 1 other pod): {reasons}"
    return f"{pod_name} (and {count - 1} other pods): {reasons}"
