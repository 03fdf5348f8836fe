"""The Pod Security Standards' checks, worded and ordered as k8s.io/pod-security-admission's
policy package words and orders them, over pod specs as JSON dicts; pure.

Each check looks at a pod's metadata and spec and either allows it or names a reason
("privileged", "hostPath volumes") and a detail (`container "main" must not set
securityContext.privileged=true`). Only each check's newest revision is here: every policy
version is evaluated with it (pod_security.py says why). A level runs its checks in
upstream's order: the baseline checks sorted by ID, then the restricted ones sorted by ID,
where a restricted check that overrides a baseline one (capabilities, hostPath volumes,
/proc mount, seccomp) replaces it. The results aggregate into one message,
`reason (detail), reason, ...`, as upstream's AggregateCheckResults does.

The checks trust what pod validation guarantees upstream (a Windows pod sets no Linux-only
fields), as upstream's do: the restricted capabilities, seccomp and allowPrivilegeEscalation
checks let a pod with `spec.os.name: windows` through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.encoding.go_text import go_quote

BASELINE = "baseline"
RESTRICTED = "restricted"

Spec = Mapping[str, Any]
CheckPod = Callable[[Spec, Spec], "CheckResult"]


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict: allowed, or why not (reason always, detail when known)."""

    allowed: bool
    reason: str = ""
    detail: str = ""


ALLOWED = CheckResult(True)
UNKNOWN_FORBIDDEN_REASON = "unknown forbidden reason"


def _forbidden(reason: str, detail: str) -> CheckResult:
    return CheckResult(False, reason, detail)


@dataclass(frozen=True)
class Aggregate:
    """Every forbidding check's reason and detail, in check order."""

    reasons: tuple[str, ...] = ()
    details: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def forbidden_reason(self) -> str:
        """`host namespaces, privileged`: the reasons alone."""
        return ", ".join(self.reasons)

    def forbidden_detail(self) -> str:
        """`host namespaces (hostNetwork=true), privileged (container "c" must not ...)`."""
        return ", ".join(
            f"{reason} ({detail})" if detail else reason
            for reason, detail in zip(self.reasons, self.details, strict=True)
        )


def aggregate(results: Iterable[CheckResult]) -> Aggregate:
    forbidding = [r for r in results if not r.allowed]
    return Aggregate(
        tuple(r.reason or UNKNOWN_FORBIDDEN_REASON for r in forbidding),
        tuple(r.detail for r in forbidding),
    )


# --- helpers (policy/helpers.go, policy/visitor.go) ---


def join_quote(items: Iterable[str]) -> str:
    items = list(items)
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def containers(spec: Spec) -> Iterator[Mapping[str, Any]]:
    """Init containers, containers, then ephemeral containers (visitContainers' order)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(key)):
            if isinstance(container, Mapping):
                yield container


def _name(container: Mapping[str, Any]) -> str:
    return str(container.get("name") or "")


def _security(container: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The container's securityContext, None when unset (a nil pointer)."""
    context = container.get("securityContext")
    return context if isinstance(context, Mapping) else None


def _pod_security(spec: Spec) -> Mapping[str, Any] | None:
    return _security(spec)


def _set(context: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    """`context.key` when both are set (non-nil pointers), else None."""
    if context is None:
        return None
    value = context.get(key)
    return value if isinstance(value, Mapping) else None


def _containers_phrase(names: list[str]) -> str:
    return f"{pluralize('container', 'containers', len(names))} {join_quote(names)}"


def _user_namespaced(spec: Spec) -> bool:
    """hostUsers: false, for which some restrictions are relaxed."""
    return spec.get("hostUsers") is False


def _windows(spec: Spec) -> bool:
    return _dict(spec.get("os")).get("name") == "windows"


# --- baseline ---


_APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_APPARMOR_TYPES = frozenset({"RuntimeDefault", "Localhost"})


def _apparmor_annotation_allowed(value: str) -> bool:
    return value in ("", "runtime/default") or value.startswith("localhost/")


def app_armor_profile(metadata: Spec, spec: Spec) -> CheckResult:
    bad_setters: list[str] = []
    bad_values: set[str] = set()
    pod_profile = _set(_pod_security(spec), "appArmorProfile")
    if pod_profile is not None and pod_profile.get("type") not in _APPARMOR_TYPES:
        bad_setters.append("pod")
        bad_values.add(str(pod_profile.get("type") or ""))
    bad_containers = []
    for container in containers(spec):
        profile = _set(_security(container), "appArmorProfile")
        if profile is not None and profile.get("type") not in _APPARMOR_TYPES:
            bad_containers.append(_name(container))
            bad_values.add(str(profile.get("type") or ""))
    if bad_containers:
        bad_setters.append(_containers_phrase(bad_containers))
    annotations = _dict(metadata.get("annotations"))
    forbidden_annotations = sorted(
        f"{key}={go_quote(str(value))}" for key, value in annotations.items()
        if str(key).startswith(_APPARMOR_ANNOTATION_PREFIX)
        and not _apparmor_annotation_allowed(str(value))
    )
    bad_value_list = [*sorted(bad_values), *forbidden_annotations]
    if forbidden_annotations:
        bad_setters.append(pluralize("annotation", "annotations", len(forbidden_annotations)))
    if not bad_setters:
        return ALLOWED
    return _forbidden(
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles",
                  len(bad_value_list)),
        f"{' and '.join(bad_setters)} must not set AppArmor profile type to "
        f"{join_quote(bad_value_list)}",
    )


# The container runtime's default capability set, which baseline lets containers add.
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})


def capabilities_baseline(metadata: Spec, spec: Spec) -> CheckResult:
    bad_containers = []
    non_default: set[str] = set()
    for container in containers(spec):
        capabilities = _set(_security(container), "capabilities")
        if capabilities is None:
            continue
        added = {str(c) for c in _list(capabilities.get("add"))} - BASELINE_CAPABILITIES
        if added:
            non_default |= added
            bad_containers.append(_name(container))
    if not bad_containers:
        return ALLOWED
    return _forbidden(
        "non-default capabilities",
        f"{_containers_phrase(bad_containers)} must not include "
        f"{join_quote(sorted(non_default))} in securityContext.capabilities.add",
    )


def host_namespaces(metadata: Spec, spec: Spec) -> CheckResult:
    shared = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC")
              if spec.get(key) is True]
    return _forbidden("host namespaces", ", ".join(shared)) if shared else ALLOWED


def _volumes(spec: Spec) -> Iterator[Mapping[str, Any]]:
    for volume in _list(spec.get("volumes")):
        if isinstance(volume, Mapping):
            yield volume


def host_path_volumes(metadata: Spec, spec: Spec) -> CheckResult:
    names = [str(v.get("name") or "") for v in _volumes(spec) if v.get("hostPath") is not None]
    if not names:
        return ALLOWED
    return _forbidden(
        "hostPath volumes", f"{pluralize('volume', 'volumes', len(names))} {join_quote(names)}"
    )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def host_ports(metadata: Spec, spec: Spec) -> CheckResult:
    bad_containers = []
    ports: set[str] = set()
    for container in containers(spec):
        used = {str(_int(p.get("hostPort"))) for p in _list(container.get("ports"))
                if isinstance(p, Mapping) and _int(p.get("hostPort")) != 0}
        if used:
            ports |= used
            bad_containers.append(_name(container))
    if not bad_containers:
        return ALLOWED
    count = len(bad_containers)
    return _forbidden(
        "hostPort",
        f"{_containers_phrase(bad_containers)} {pluralize('uses', 'use', count)} "
        f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
    )


def _handler_hosts(handler: Any) -> list[str]:
    """The hosts an httpGet or tcpSocket probe or lifecycle handler names."""
    handler = _dict(handler)
    return [str(host) for kind in ("httpGet", "tcpSocket")
            if (host := _dict(handler.get(kind)).get("host"))]


def host_probes_and_host_lifecycle(metadata: Spec, spec: Spec) -> CheckResult:
    bad_containers: set[str] = set()
    hosts: set[str] = set()
    for container in containers(spec):
        lifecycle = _dict(container.get("lifecycle"))
        handlers = [container.get("livenessProbe"), container.get("readinessProbe"),
                    container.get("startupProbe"), lifecycle.get("postStart"),
                    lifecycle.get("preStop")]
        for handler in handlers:
            if found := _handler_hosts(handler):
                bad_containers.add(_name(container))
                hosts.update(found)
    if not bad_containers:
        return ALLOWED
    count = len(bad_containers)
    return _forbidden(
        "probe or lifecycle host",
        f"{_containers_phrase(sorted(bad_containers))} {pluralize('uses', 'use', count)} "
        f"{pluralize('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} "
        f"{join_quote(sorted(hosts))}",
    )


def privileged(metadata: Spec, spec: Spec) -> CheckResult:
    bad = [_name(c) for c in containers(spec)
           if (_security(c) or {}).get("privileged") is True]
    if not bad:
        return ALLOWED
    return _forbidden(
        "privileged", f"{_containers_phrase(bad)} must not set securityContext.privileged=true"
    )


def _proc_mount(metadata: Spec, spec: Spec) -> CheckResult:
    bad_containers = []
    types: set[str] = set()
    for container in containers(spec):
        value = (_security(container) or {}).get("procMount")
        if value is not None and value != "Default":
            bad_containers.append(_name(container))
            types.add(str(value))
    if not bad_containers:
        return ALLOWED
    return _forbidden(
        "procMount",
        f"{_containers_phrase(bad_containers)} must not set securityContext.procMount to "
        f"{join_quote(sorted(types))}",
    )


def proc_mount_baseline(metadata: Spec, spec: Spec) -> CheckResult:
    """Any /proc mount is allowed in a user namespace (hostUsers: false)."""
    return ALLOWED if _user_namespaced(spec) else _proc_mount(metadata, spec)


SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                           "container_engine_t"})


def se_linux_options(metadata: Spec, spec: Spec) -> CheckResult:
    bad_types: set[str] = set()
    set_user = set_role = False

    def valid(options: Mapping[str, Any]) -> bool:
        nonlocal set_user, set_role
        ok = True
        kind = str(options.get("type") or "")
        if kind not in SELINUX_TYPES:
            ok = False
            bad_types.add(kind)
        if options.get("user"):
            ok, set_user = False, True
        if options.get("role"):
            ok, set_role = False, True
        return ok

    bad_setters = []
    pod_options = _set(_pod_security(spec), "seLinuxOptions")
    if pod_options is not None and not valid(pod_options):
        bad_setters.append("pod")
    bad_containers = []
    for container in containers(spec):
        options = _set(_security(container), "seLinuxOptions")
        if options is not None and not valid(options):
            bad_containers.append(_name(container))
    if bad_containers:
        bad_setters.append(_containers_phrase(bad_containers))
    if not bad_setters:
        return ALLOWED
    bad_data = []
    if bad_types:
        bad_data.append(
            f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}"
        )
    if set_user:
        bad_data.append("user may not be set")
    if set_role:
        bad_data.append("role may not be set")
    return _forbidden(
        "seLinuxOptions",
        f"{' and '.join(bad_setters)} set forbidden securityContext.seLinuxOptions: "
        f"{'; '.join(bad_data)}",
    )


_SECCOMP_TYPES = frozenset({"RuntimeDefault", "Localhost"})


def _seccomp(*, required: bool) -> CheckPod:
    """The seccomp check: a profile, when set, must be RuntimeDefault or Localhost;
    `required` (restricted) also wants the pod or every container to set one."""

    def check(metadata: Spec, spec: Spec) -> CheckResult:
        bad_setters = []
        bad_values: set[str] = set()
        pod_set = False
        pod_profile = _set(_pod_security(spec), "seccompProfile")
        if pod_profile is not None:
            if pod_profile.get("type") not in _SECCOMP_TYPES:
                bad_setters.append("pod")
                bad_values.add(str(pod_profile.get("type") or ""))
            else:
                pod_set = True
        explicit, implicit = [], []
        for container in containers(spec):
            profile = _set(_security(container), "seccompProfile")
            if profile is not None:
                if profile.get("type") not in _SECCOMP_TYPES:
                    explicit.append(_name(container))
                    bad_values.add(str(profile.get("type") or ""))
            elif not pod_set:
                implicit.append(_name(container))
        if explicit:
            bad_setters.append(_containers_phrase(explicit))
        if bad_setters:
            return _forbidden(
                "seccompProfile",
                f"{' and '.join(bad_setters)} must not set securityContext.seccompProfile.type "
                f"to {join_quote(sorted(bad_values))}",
            )
        if required and implicit:
            return _forbidden(
                "seccompProfile",
                f"pod or {_containers_phrase(implicit)} must set "
                'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
            )
        return ALLOWED

    return check


seccomp_profile_baseline = _seccomp(required=False)


# Sysctls namespaced in the pod and isolated from other pods and the node.
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
})


def sysctls(metadata: Spec, spec: Spec) -> CheckResult:
    context = _pod_security(spec) or {}
    names = [str(_dict(s).get("name") or "") for s in _list(context.get("sysctls"))]
    forbidden = [name for name in names if name not in SAFE_SYSCTLS]
    return _forbidden("forbidden sysctls", ", ".join(forbidden)) if forbidden else ALLOWED


def _host_process(context: Mapping[str, Any] | None) -> bool:
    return (_set(context, "windowsOptions") or {}).get("hostProcess") is True


def windows_host_process(metadata: Spec, spec: Spec) -> CheckResult:
    setters = ["pod"] if _host_process(_pod_security(spec)) else []
    bad = [_name(c) for c in containers(spec) if _host_process(_security(c))]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return ALLOWED
    return _forbidden(
        "hostProcess",
        f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true",
    )


# --- restricted ---


def allow_privilege_escalation(metadata: Spec, spec: Spec) -> CheckResult:
    if _windows(spec):
        return ALLOWED
    bad = [_name(c) for c in containers(spec)
           if (_security(c) or {}).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return ALLOWED
    return _forbidden(
        "allowPrivilegeEscalation != false",
        f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def capabilities_restricted(metadata: Spec, spec: Spec) -> CheckResult:
    if _windows(spec):
        return ALLOWED
    missing_drop_all, adding = [], []
    forbidden: set[str] = set()
    for container in containers(spec):
        capabilities = _set(_security(container), "capabilities")
        if capabilities is None:
            missing_drop_all.append(_name(container))
            continue
        if "ALL" not in [str(c) for c in _list(capabilities.get("drop"))]:
            missing_drop_all.append(_name(container))
        added = {str(c) for c in _list(capabilities.get("add"))} - {"NET_BIND_SERVICE"}
        if added:
            forbidden |= added
            adding.append(_name(container))
    details = []
    if missing_drop_all:
        details.append(
            f"{_containers_phrase(missing_drop_all)} must set "
            'securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_containers_phrase(adding)} must not include {join_quote(sorted(forbidden))} "
            "in securityContext.capabilities.add"
        )
    return _forbidden("unrestricted capabilities", "; ".join(details)) if details else ALLOWED


def proc_mount_restricted(metadata: Spec, spec: Spec) -> CheckResult:
    """The default /proc mount, user namespace or not."""
    return _proc_mount(metadata, spec)


# The inline volume sources restricted allows (upstream's switch order), then the ones it
# names when refusing, in the order it looks for them.
RESTRICTED_VOLUME_SOURCES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                             "persistentVolumeClaim", "projected", "secret")
_NAMED_VOLUME_TYPES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
    "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
    "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume",
    "scaleIO", "storageos",
)


def restricted_volumes(metadata: Spec, spec: Spec) -> CheckResult:
    bad_volumes = []
    bad_types: set[str] = set()
    for volume in _volumes(spec):
        if any(volume.get(kind) is not None for kind in RESTRICTED_VOLUME_SOURCES):
            continue
        bad_volumes.append(str(volume.get("name") or ""))
        bad_types.add(next((kind for kind in _NAMED_VOLUME_TYPES
                            if volume.get(kind) is not None), "unknown"))
    if not bad_volumes:
        return ALLOWED
    count = len(bad_volumes)
    return _forbidden(
        "restricted volume types",
        f"{pluralize('volume', 'volumes', count)} {join_quote(bad_volumes)} "
        f"{pluralize('uses', 'use', count)} "
        f"{pluralize('restricted volume type', 'restricted volume types', len(bad_types))} "
        f"{join_quote(sorted(bad_types))}",
    )


def run_as_non_root(metadata: Spec, spec: Spec) -> CheckResult:
    if _user_namespaced(spec):
        return ALLOWED
    bad_setters = []
    pod_non_root = False
    pod_value = (_pod_security(spec) or {}).get("runAsNonRoot")
    if pod_value is not None:
        if pod_value is not True:
            bad_setters.append("pod")
        else:
            pod_non_root = True
    explicit, implicit = [], []
    for container in containers(spec):
        value = (_security(container) or {}).get("runAsNonRoot")
        if value is not None:
            if value is not True:
                explicit.append(_name(container))
        elif not pod_non_root:
            implicit.append(_name(container))
    if explicit:
        bad_setters.append(_containers_phrase(explicit))
    if bad_setters:
        return _forbidden(
            "runAsNonRoot != true",
            f"{' and '.join(bad_setters)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return _forbidden(
            "runAsNonRoot != true",
            f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true",
        )
    return ALLOWED


def _root(context: Mapping[str, Any] | None) -> bool:
    value = (context or {}).get("runAsUser")
    return value is not None and not isinstance(value, bool) and value == 0


def run_as_user(metadata: Spec, spec: Spec) -> CheckResult:
    if _user_namespaced(spec):
        return ALLOWED
    bad_setters = ["pod"] if _root(_pod_security(spec)) else []
    bad = [_name(c) for c in containers(spec) if _root(_security(c))]
    if bad:
        bad_setters.append(_containers_phrase(bad))
    if not bad_setters:
        return ALLOWED
    return _forbidden("runAsUser=0", f"{' and '.join(bad_setters)} must not set runAsUser=0")


_seccomp_restricted = _seccomp(required=True)


def seccomp_profile_restricted(metadata: Spec, spec: Spec) -> CheckResult:
    return ALLOWED if _windows(spec) else _seccomp_restricted(metadata, spec)


@dataclass(frozen=True)
class Check:
    """One check of a level; a restricted check may replace (override) baseline ones."""

    id: str
    level: str
    run: CheckPod
    overrides: tuple[str, ...] = ()


CHECKS: tuple[Check, ...] = (
    Check("appArmorProfile", BASELINE, app_armor_profile),
    Check("capabilities_baseline", BASELINE, capabilities_baseline),
    Check("hostNamespaces", BASELINE, host_namespaces),
    Check("hostPathVolumes", BASELINE, host_path_volumes),
    Check("hostPorts", BASELINE, host_ports),
    Check("hostProbesAndHostLifecycle", BASELINE, host_probes_and_host_lifecycle),
    Check("privileged", BASELINE, privileged),
    Check("procMount", BASELINE, proc_mount_baseline),
    Check("seLinuxOptions", BASELINE, se_linux_options),
    Check("seccompProfile_baseline", BASELINE, seccomp_profile_baseline),
    Check("sysctls", BASELINE, sysctls),
    Check("windowsHostProcess", BASELINE, windows_host_process),
    Check("allowPrivilegeEscalation", RESTRICTED, allow_privilege_escalation),
    Check("capabilities_restricted", RESTRICTED, capabilities_restricted,
          ("capabilities_baseline",)),
    Check("procMount_restricted", RESTRICTED, proc_mount_restricted, ("procMount",)),
    Check("restrictedVolumes", RESTRICTED, restricted_volumes, ("hostPathVolumes",)),
    Check("runAsNonRoot", RESTRICTED, run_as_non_root),
    Check("runAsUser", RESTRICTED, run_as_user),
    Check("seccompProfile_restricted", RESTRICTED, seccomp_profile_restricted,
          ("seccompProfile_baseline",)),
)


def _ordered(level: str) -> tuple[Check, ...]:
    """The checks a level runs: baseline ones sorted by ID, then restricted ones sorted by
    ID (restricted: its own, and the baseline ones none of them overrides)."""
    baseline = sorted((c for c in CHECKS if c.level == BASELINE), key=lambda c: c.id)
    if level == BASELINE:
        return tuple(baseline)
    restricted = sorted((c for c in CHECKS if c.level == RESTRICTED), key=lambda c: c.id)
    overridden = {override for check in restricted for override in check.overrides}
    return (*(c for c in baseline if c.id not in overridden), *restricted)


LEVEL_CHECKS: dict[str, tuple[Check, ...]] = {
    BASELINE: _ordered(BASELINE),
    RESTRICTED: _ordered(RESTRICTED),
}


def check_pod(level: str, metadata: Spec, spec: Spec) -> Aggregate:
    """Run `level`'s checks (none for privileged) on a pod's or pod template's metadata and
    spec."""
    return aggregate(check.run(metadata, spec) for check in LEVEL_CHECKS.get(level, ()))
