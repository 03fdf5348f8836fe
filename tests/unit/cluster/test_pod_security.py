"""The PodSecurity admission plugin without HTTP: every check of the baseline and restricted
levels (a pod it forbids, worded as upstream's policy package words it, and one it lets
through), the order and aggregation of the message, the namespace labels and how invalid
ones read, the levels' ordering (a property: what restricted admits, baseline admits), then
the plugin through the store: 403 on enforce, warnings, pod updates, namespace updates and
pod controllers.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.apiserver.admission import pod_security_checks
from engine.cluster.apiserver.admission.pod_security import (
    DEFAULT_POLICY,
    ENFORCE_LEVEL_LABEL,
    LevelVersion,
    Policy,
    compare_levels,
    default_namespace_labels,
    existing_pod_warnings,
    policy_to_evaluate,
    significant_pod_update,
)
from engine.cluster.apiserver.admission.pod_security_checks import (
    BASELINE,
    LEVEL_CHECKS,
    RESTRICTED,
    check_pod,
)
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CRONJOBS, JOBS, NAMESPACES, PODS
from tests.unit.cluster.store_support import ManualReactor, make_core
from tests.unit.test_deploy_manifests import DEPLOYMENT

PRIVILEGED = "privileged"
Spec = dict[str, Any]


def container(name: str = "c", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", **fields}


def baseline_spec(**fields: Any) -> Spec:
    """A spec baseline allows (and restricted does not)."""
    return {"containers": [container()], **fields}


RESTRICTED_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def restricted_spec(*containers_: dict[str, Any], **fields: Any) -> Spec:
    """A spec restricted allows: the fields given replace the pod's."""
    containers_ = containers_ or (container(securityContext=dict(RESTRICTED_CONTEXT)),)
    return {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": list(containers_),
        **fields,
    }


def restricted_container(name: str = "c", **context: Any) -> dict[str, Any]:
    """A container restricted allows, with `context` merged into its securityContext
    (a None value removes the field)."""
    merged = {**RESTRICTED_CONTEXT, **context}
    return container(name, securityContext={k: v for k, v in merged.items() if v is not None})


def verdict(level: str, spec: Spec, metadata: dict[str, Any] | None = None
            ) -> list[tuple[str, str]]:
    result = check_pod(level, metadata or {}, spec)
    return list(zip(result.reasons, result.details, strict=True))


class Case(NamedTuple):
    """A pod that only `check_id` forbids at `level`, and upstream's words for it."""

    check_id: str
    level: str
    metadata: dict[str, Any]
    spec: Spec
    reason: str
    detail: str


FORBIDDEN: list[Case] = [Case(*case) for case in [
    ("hostNamespaces", BASELINE, {}, baseline_spec(hostNetwork=True, hostPID=True, hostIPC=True),
     "host namespaces", "hostNetwork=true, hostPID=true, hostIPC=true"),
    ("privileged", BASELINE, {},
     baseline_spec(initContainers=[container("a", securityContext={"privileged": True})],
                   containers=[container("b", securityContext={"privileged": True}),
                               container("ok", securityContext={"privileged": False})]),
     "privileged", 'containers "a", "b" must not set securityContext.privileged=true'),
    ("capabilities_baseline", BASELINE, {},
     baseline_spec(containers=[container(securityContext={"capabilities": {
         "add": ["SYS_ADMIN", "CHOWN", "NET_ADMIN"]}})]),
     "non-default capabilities",
     'container "c" must not include "NET_ADMIN", "SYS_ADMIN" in '
     "securityContext.capabilities.add"),
    ("hostPathVolumes", BASELINE, {},
     baseline_spec(volumes=[{"name": "root", "hostPath": {"path": "/"}},
                            {"name": "scratch", "emptyDir": {}}]),
     "hostPath volumes", 'volume "root"'),
    ("hostPorts", BASELINE, {},
     baseline_spec(containers=[
         container("a", ports=[{"containerPort": 80}]),
         container("b", ports=[{"containerPort": 1, "hostPort": 10},
                               {"containerPort": 2, "hostPort": 20}]),
         container("c", ports=[{"containerPort": 1, "hostPort": 10},
                               {"containerPort": 3, "hostPort": 30}])]),
     "hostPort", 'containers "b", "c" use hostPorts 10, 20, 30'),
    ("hostPorts", BASELINE, {},
     baseline_spec(containers=[container("b", ports=[{"containerPort": 1, "hostPort": 20}])]),
     "hostPort", 'container "b" uses hostPort 20'),
    ("appArmorProfile", BASELINE, {},
     baseline_spec(securityContext={"appArmorProfile": {"type": "Unconfined"}}),
     "forbidden AppArmor profile", 'pod must not set AppArmor profile type to "Unconfined"'),
    ("appArmorProfile", BASELINE, {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/": "bogus",
        "container.apparmor.security.beta.kubernetes.io/a": "",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/f": "unknown",
    }}, baseline_spec(),
     "forbidden AppArmor profiles",
     "annotations must not set AppArmor profile type to "
     '"container.apparmor.security.beta.kubernetes.io/="bogus"", '
     '"container.apparmor.security.beta.kubernetes.io/e="unconfined"", '
     '"container.apparmor.security.beta.kubernetes.io/f="unknown""'),
    ("appArmorProfile", BASELINE, {},
     baseline_spec(securityContext={"appArmorProfile": {"type": "Unconfined"}},
                   containers=[container(securityContext={"appArmorProfile": {
                       "type": "Bogus"}})]),
     "forbidden AppArmor profiles",
     'pod and container "c" must not set AppArmor profile type to "Bogus", "Unconfined"'),
    ("seLinuxOptions", BASELINE, {},
     baseline_spec(securityContext={"seLinuxOptions": {"role": "sysadm_r"}},
                   containers=[container(securityContext={"seLinuxOptions": {
                       "type": "spc_t", "user": "root"}})]),
     "seLinuxOptions",
     'pod and container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"; '
     "user may not be set; role may not be set"),
    ("procMount", BASELINE, {},
     baseline_spec(containers=[container(securityContext={"procMount": "Unmasked"})]),
     "procMount", 'container "c" must not set securityContext.procMount to "Unmasked"'),
    ("seccompProfile_baseline", BASELINE, {},
     baseline_spec(securityContext={"seccompProfile": {"type": "Unconfined"}}),
     "seccompProfile", 'pod must not set securityContext.seccompProfile.type to "Unconfined"'),
    ("sysctls", BASELINE, {},
     baseline_spec(securityContext={"sysctls": [
         {"name": "kernel.msgmax", "value": "1"},
         {"name": "net.ipv4.tcp_syncookies", "value": "1"},
         {"name": "kernel.sem", "value": "1"}]}),
     "forbidden sysctls", "kernel.msgmax, kernel.sem"),
    ("windowsHostProcess", BASELINE, {},
     baseline_spec(securityContext={"windowsOptions": {"hostProcess": True}},
                   containers=[container(securityContext={"windowsOptions": {
                       "hostProcess": True}})]),
     "hostProcess",
     'pod and container "c" must not set securityContext.windowsOptions.hostProcess=true'),
    ("hostProbesAndHostLifecycle", BASELINE, {},
     baseline_spec(containers=[
         container("web", livenessProbe={"httpGet": {"port": 80, "host": "10.0.0.1"}},
                   lifecycle={"preStop": {"tcpSocket": {"port": 1, "host": "example.com"}}}),
         container("db", readinessProbe={"tcpSocket": {"port": 5432, "host": "10.0.0.1"}}),
         container("ok", startupProbe={"httpGet": {"port": 80, "host": ""}})]),
     "probe or lifecycle host",
     'containers "db", "web" use probe or lifecycle hosts "10.0.0.1", "example.com"'),
    ("allowPrivilegeEscalation", RESTRICTED, {},
     restricted_spec(restricted_container(allowPrivilegeEscalation=None),
                     restricted_container("d", allowPrivilegeEscalation=True)),
     "allowPrivilegeEscalation != false",
     'containers "c", "d" must set securityContext.allowPrivilegeEscalation=false'),
    ("capabilities_restricted", RESTRICTED, {},
     restricted_spec(restricted_container(capabilities={"add": ["SYS_ADMIN",
                                                                 "NET_BIND_SERVICE"]})),
     "unrestricted capabilities",
     'container "c" must set securityContext.capabilities.drop=["ALL"]; '
     'container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add'),
    ("capabilities_restricted", RESTRICTED, {},
     restricted_spec(restricted_container("bare", capabilities=None), restricted_container()),
     "unrestricted capabilities",
     'container "bare" must set securityContext.capabilities.drop=["ALL"]'),
    ("procMount_restricted", RESTRICTED, {},
     restricted_spec(restricted_container(procMount="Unmasked"), hostUsers=False),
     "procMount", 'container "c" must not set securityContext.procMount to "Unmasked"'),
    ("restrictedVolumes", RESTRICTED, {},
     restricted_spec(volumes=[
         {"name": "root", "hostPath": {"path": "/"}},
         {"name": "data", "nfs": {"server": "s", "path": "/"}},
         {"name": "odd", "someFutureSource": {}},
         *({"name": kind, kind: {}} for kind in pod_security_checks.RESTRICTED_VOLUME_SOURCES),
     ]),
     "restricted volume types",
     'volumes "root", "data", "odd" use restricted volume types "hostPath", "nfs", "unknown"'),
    ("runAsNonRoot", RESTRICTED, {},
     restricted_spec(securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
     "runAsNonRoot != true", 'pod or container "c" must set securityContext.runAsNonRoot=true'),
    ("runAsNonRoot", RESTRICTED, {},
     restricted_spec(restricted_container(runAsNonRoot=False),
                     securityContext={"runAsNonRoot": False,
                                      "seccompProfile": {"type": "RuntimeDefault"}}),
     "runAsNonRoot != true",
     'pod and container "c" must not set securityContext.runAsNonRoot=false'),
    ("runAsUser", RESTRICTED, {},
     restricted_spec(restricted_container(runAsUser=0),
                     securityContext={"runAsNonRoot": True, "runAsUser": 0,
                                      "seccompProfile": {"type": "RuntimeDefault"}}),
     "runAsUser=0", 'pod and container "c" must not set runAsUser=0'),
    ("seccompProfile_restricted", RESTRICTED, {},
     restricted_spec(securityContext={"runAsNonRoot": True}),
     "seccompProfile",
     'pod or container "c" must set securityContext.seccompProfile.type to '
     '"RuntimeDefault" or "Localhost"'),
    ("seccompProfile_restricted", RESTRICTED, {},
     restricted_spec(restricted_container(seccompProfile={"type": "Unconfined"})),
     "seccompProfile", 'container "c" must not set securityContext.seccompProfile.type to '
     '"Unconfined"'),
]]

# (level, metadata, spec): pods near a check's edge that the level allows.
ALLOWED: list[tuple[str, dict[str, Any], Spec]] = [
    (BASELINE, {}, baseline_spec(hostNetwork=False, hostPID=False, hostIPC=False)),
    (BASELINE, {}, baseline_spec(containers=[container(securityContext={"privileged": False})])),
    (BASELINE, {}, baseline_spec(containers=[container(securityContext={"capabilities": {
        "add": sorted(pod_security_checks.BASELINE_CAPABILITIES), "drop": ["ALL"]}})])),
    (BASELINE, {}, baseline_spec(volumes=[{"name": "nfs", "nfs": {"server": "s", "path": "/"}}])),
    (BASELINE, {}, baseline_spec(containers=[container(ports=[{"containerPort": 80,
                                                               "hostPort": 0}])])),
    (BASELINE, {"annotations": {"container.apparmor.security.beta.kubernetes.io/c":
                                "localhost/profile"}},
     baseline_spec(securityContext={"appArmorProfile": {"type": "RuntimeDefault"}},
                   containers=[container(securityContext={"appArmorProfile": {
                       "type": "Localhost", "localhostProfile": "p"}})])),
    (BASELINE, {}, baseline_spec(securityContext={"seLinuxOptions": {
        "type": "container_engine_t", "level": "s0:c1"}})),
    (BASELINE, {}, baseline_spec(containers=[container(securityContext={"procMount": "Default"})])),
    (BASELINE, {}, baseline_spec(hostUsers=False, containers=[
        container(securityContext={"procMount": "Unmasked"})])),
    (BASELINE, {}, baseline_spec(securityContext={"seccompProfile": {"type": "Localhost",
                                                                     "localhostProfile": "p"}})),
    (BASELINE, {}, baseline_spec(securityContext={"sysctls": [
        {"name": name, "value": "1"} for name in sorted(pod_security_checks.SAFE_SYSCTLS)]})),
    (BASELINE, {}, baseline_spec(securityContext={"windowsOptions": {"hostProcess": False}})),
    (BASELINE, {}, baseline_spec(containers=[container(
        livenessProbe={"httpGet": {"port": 80}}, lifecycle={"postStart": {"exec": {}}})])),
    (RESTRICTED, {}, restricted_spec()),
    (RESTRICTED, {}, restricted_spec(restricted_container(
        capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}))),
    (RESTRICTED, {}, restricted_spec(
        restricted_container(runAsNonRoot=True, seccompProfile={"type": "Localhost"}),
        securityContext={})),
    (RESTRICTED, {}, restricted_spec(volumes=[
        {"name": kind, kind: {}} for kind in pod_security_checks.RESTRICTED_VOLUME_SOURCES])),
    (RESTRICTED, {}, restricted_spec(securityContext={
        "runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}})),
    # A user namespace relaxes runAsNonRoot and runAsUser.
    (RESTRICTED, {}, restricted_spec(restricted_container(runAsUser=0), hostUsers=False,
                                     securityContext={"seccompProfile": {"type": "Localhost"}})),
    # Windows pods are spared the Linux-only restricted checks.
    (RESTRICTED, {}, restricted_spec(container("w"), os={"name": "windows"})),
]


def _case_id(case: Case) -> str:
    return f"{case.check_id}-{case.level}"


@pytest.mark.parametrize("case", FORBIDDEN, ids=_case_id)
def test_each_check_forbids_with_upstreams_words(case: Case) -> None:
    assert verdict(case.level, case.spec, case.metadata) == [(case.reason, case.detail)]
    if case.level == BASELINE:
        # Baseline's checks run at restricted too, but for those a restricted check
        # replaces, which forbids the pod in its own words.
        restricted = verdict(RESTRICTED, case.spec, case.metadata)
        if case.check_id in {c.id for c in LEVEL_CHECKS[RESTRICTED]}:
            assert (case.reason, case.detail) in restricted
        else:
            assert restricted


@pytest.mark.parametrize("case", FORBIDDEN, ids=_case_id)
def test_without_the_check_the_pod_would_pass(monkeypatch: pytest.MonkeyPatch, case: Case
                                              ) -> None:
    """Each case above is caught by its own check alone."""
    remaining = tuple(c for c in LEVEL_CHECKS[case.level] if c.id != case.check_id)
    assert len(remaining) == len(LEVEL_CHECKS[case.level]) - 1
    monkeypatch.setitem(LEVEL_CHECKS, case.level, remaining)
    assert verdict(case.level, case.spec, case.metadata) == []


def test_every_check_has_a_case() -> None:
    assert {case.check_id for case in FORBIDDEN} == {c.id for c in pod_security_checks.CHECKS}


@pytest.mark.parametrize(("level", "metadata", "spec"), ALLOWED)
def test_pods_at_the_edge_of_a_check_pass(level: str, metadata: dict[str, Any], spec: Spec
                                          ) -> None:
    assert verdict(level, spec, metadata) == []


def test_privileged_allows_everything() -> None:
    for case in FORBIDDEN:
        assert verdict(PRIVILEGED, case.spec, case.metadata) == []


def test_the_levels_run_upstreams_checks_in_upstreams_order() -> None:
    assert [c.id for c in LEVEL_CHECKS[BASELINE]] == [
        "appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPathVolumes",
        "hostPorts", "hostProbesAndHostLifecycle", "privileged", "procMount", "seLinuxOptions",
        "seccompProfile_baseline", "sysctls", "windowsHostProcess",
    ]
    assert [c.id for c in LEVEL_CHECKS[RESTRICTED]] == [
        "appArmorProfile", "hostNamespaces", "hostPorts", "hostProbesAndHostLifecycle",
        "privileged", "seLinuxOptions", "sysctls", "windowsHostProcess",
        "allowPrivilegeEscalation", "capabilities_restricted", "procMount_restricted",
        "restrictedVolumes", "runAsNonRoot", "runAsUser", "seccompProfile_restricted",
    ]


def test_the_message_aggregates_every_reason_in_check_order() -> None:
    spec = baseline_spec(
        hostNetwork=True, volumes=[{"name": "root", "hostPath": {"path": "/"}}],
        containers=[container(securityContext={"privileged": True})],
    )
    assert check_pod(BASELINE, {}, spec).forbidden_detail() == (
        "host namespaces (hostNetwork=true), hostPath volumes (volume \"root\"), "
        'privileged (container "c" must not set securityContext.privileged=true)'
    )
    assert check_pod(BASELINE, {}, spec).forbidden_reason() == (
        "host namespaces, hostPath volumes, privileged"
    )
    restricted = check_pod(RESTRICTED, {}, spec).forbidden_reason()
    assert restricted == (
        "host namespaces, privileged, allowPrivilegeEscalation != false, "
        "unrestricted capabilities, restricted volume types, runAsNonRoot != true, "
        "seccompProfile"
    )


def test_the_engines_deployment_passes_restricted() -> None:
    """The engine's own manifest (deploy/) is meant for restricted namespaces."""
    template = DEPLOYMENT["spec"]["template"]
    assert verdict(RESTRICTED, template["spec"], template.get("metadata")) == []


def test_a_windows_pod_passes_the_restricted_linux_checks_as_upstream_lets_it() -> None:
    """Upstream relies on pod validation to refuse Linux-only fields on Windows pods: its
    restricted capabilities check skips them, so a capability added there is only caught
    at baseline. This server's validation does not refuse them (docs/pod-security.md)."""
    spec = restricted_spec(restricted_container(capabilities={"add": ["SYS_ADMIN"]}),
                           os={"name": "windows"})
    assert verdict(RESTRICTED, spec) == []
    assert verdict(BASELINE, spec)[0][0] == "non-default capabilities"


# --- the property: what restricted admits, baseline admits ---

_CONTAINER_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "privileged": st.booleans(),
    "allowPrivilegeEscalation": st.booleans(),
    "capabilities": st.fixed_dictionaries({}, optional={
        "add": st.lists(st.sampled_from(["NET_BIND_SERVICE", "CHOWN", "SYS_ADMIN", "NET_RAW"]),
                        max_size=2),
        "drop": st.lists(st.sampled_from(["ALL", "NET_RAW"]), max_size=2),
    }),
    "procMount": st.sampled_from(["Default", "Unmasked"]),
    "runAsNonRoot": st.booleans(),
    "runAsUser": st.sampled_from([0, 1000]),
    "seccompProfile": st.fixed_dictionaries({"type": st.sampled_from(
        ["RuntimeDefault", "Localhost", "Unconfined"])}),
    "seLinuxOptions": st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["container_t", "spc_t"]), "user": st.just("u")}),
    "appArmorProfile": st.fixed_dictionaries({"type": st.sampled_from(
        ["RuntimeDefault", "Unconfined"])}),
    "windowsOptions": st.fixed_dictionaries({"hostProcess": st.booleans()}),
}
_POD_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "runAsNonRoot": st.booleans(),
    "runAsUser": st.sampled_from([0, 1000]),
    "seccompProfile": st.fixed_dictionaries({"type": st.sampled_from(
        ["RuntimeDefault", "Unconfined"])}),
    "sysctls": st.lists(st.fixed_dictionaries({"name": st.sampled_from(
        ["kernel.shm_rmid_forced", "kernel.msgmax"]), "value": st.just("1")}), max_size=2),
    "appArmorProfile": st.fixed_dictionaries({"type": st.sampled_from(
        ["Localhost", "Unconfined"])}),
    "seLinuxOptions": st.fixed_dictionaries({"role": st.sampled_from(["", "r"])}),
    "windowsOptions": st.fixed_dictionaries({"hostProcess": st.booleans()}),
}
# One change to a restricted pod: (where, key, value); None removes the field.
_CHANGE = st.one_of(
    *(st.tuples(st.just("container"), st.just(k), st.one_of(st.none(), v))
      for k, v in _CONTAINER_FIELDS.items()),
    *(st.tuples(st.just("pod"), st.just(k), st.one_of(st.none(), v))
      for k, v in _POD_FIELDS.items()),
    st.tuples(st.just("spec"), st.sampled_from(["hostNetwork", "hostPID", "hostIPC",
                                                "hostUsers"]), st.booleans()),
    st.tuples(st.just("volume"), st.just(""), st.sampled_from(
        [{"emptyDir": {}}, {"hostPath": {"path": "/"}}, {"nfs": {}}, {"projected": {}}])),
    st.tuples(st.just("annotation"), st.sampled_from(
        ["container.apparmor.security.beta.kubernetes.io/c0", "other"]),
        st.sampled_from(["unconfined", "runtime/default"])),
    st.tuples(st.just("probe"), st.just(""), st.sampled_from(["", "10.0.0.1"])),
)


@st.composite
def pods(draw: st.DrawFn) -> tuple[dict[str, Any], Spec]:
    """Restricted pods with a few changes, so that many still pass restricted (Windows pods
    aside: see the test above)."""
    spec = restricted_spec(*(restricted_container(f"c{i}") for i in range(draw(st.integers(1, 2)))))
    metadata: dict[str, Any] = {"annotations": {}}
    for where, key, value in draw(st.lists(_CHANGE, max_size=3)):
        if where in ("container", "probe"):
            target = spec["containers"][draw(st.integers(0, len(spec["containers"]) - 1))]
            if where == "probe":
                target["livenessProbe"] = {"httpGet": {"port": 80, "host": value}}
                continue
            context = target["securityContext"]
        elif where == "pod":
            context = spec["securityContext"]
        elif where == "spec":
            spec[key] = value
            continue
        elif where == "volume":
            spec.setdefault("volumes", []).append({"name": f"v{len(spec.get('volumes', []))}",
                                                   **value})
            continue
        else:
            metadata["annotations"][key] = value
            continue
        if value is None:
            context.pop(key, None)
        else:
            context[key] = value
    return metadata, spec


@settings(max_examples=400, deadline=None)
@given(pods())
def test_what_restricted_admits_baseline_admits(pod: tuple[dict[str, Any], Spec]) -> None:
    metadata, spec = pod
    restricted = check_pod(RESTRICTED, metadata, spec)
    baseline = check_pod(BASELINE, metadata, spec)
    assert check_pod(PRIVILEGED, metadata, spec).allowed
    if restricted.allowed:
        assert baseline.allowed
    if not baseline.allowed:
        assert not restricted.allowed


def test_levels_are_ordered() -> None:
    levels = [PRIVILEGED, BASELINE, RESTRICTED]
    for i, a in enumerate(levels):
        for j, b in enumerate(levels):
            assert compare_levels(a, b) == (i > j) - (i < j)


# --- labels ---


def test_no_labels_is_privileged_everywhere() -> None:
    assert policy_to_evaluate({}) == (DEFAULT_POLICY, [])
    assert DEFAULT_POLICY.fully_privileged


def test_warn_follows_enforce_unless_set() -> None:
    policy, causes = policy_to_evaluate({ENFORCE_LEVEL_LABEL: "baseline",
                                         "pod-security.kubernetes.io/enforce-version": "v1.30"})
    assert causes == []
    assert policy == Policy(LevelVersion("baseline", "v1.30"), LevelVersion(PRIVILEGED),
                            LevelVersion("baseline", "v1.30"))
    policy, _ = policy_to_evaluate({ENFORCE_LEVEL_LABEL: "restricted",
                                    "pod-security.kubernetes.io/warn-version": "v1.29"})
    assert policy.warn == LevelVersion("restricted", "v1.29")
    policy, _ = policy_to_evaluate({ENFORCE_LEVEL_LABEL: "baseline",
                                    "pod-security.kubernetes.io/warn": "privileged"})
    assert policy.warn == LevelVersion(PRIVILEGED)
    assert str(policy.enforce) == "baseline:latest"


def test_invalid_labels_fail_closed_for_enforce_and_open_for_audit_and_warn() -> None:
    policy, causes = policy_to_evaluate({
        ENFORCE_LEVEL_LABEL: "strict",
        "pod-security.kubernetes.io/enforce-version": "v1.05",
        "pod-security.kubernetes.io/audit": "none",
        "pod-security.kubernetes.io/audit-version": "1.30",
        "pod-security.kubernetes.io/warn": "all",
        "pod-security.kubernetes.io/warn-version": "v2.0",
    })
    assert policy == Policy(LevelVersion(RESTRICTED), LevelVersion(PRIVILEGED),
                            LevelVersion(PRIVILEGED))
    assert [f"{c.field}: {c.message}" for c in causes] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": '
        "must be one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v1.05": '
        'must be "latest" or "v1.x"',
        'metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "none": '
        "must be one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "1.30": '
        'must be "latest" or "v1.x"',
        'metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "all": '
        "must be one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2.0": '
        'must be "latest" or "v1.x"',
    ]
    # An invalid enforce level does not make warn follow it.
    assert policy_to_evaluate({ENFORCE_LEVEL_LABEL: "x"})[0].warn.level == PRIVILEGED


@pytest.mark.parametrize("version", ["latest", "v1.0", "v1.9", "v1.35", "v1.100"])
def test_versions_accepted(version: str) -> None:
    policy, causes = policy_to_evaluate({ENFORCE_LEVEL_LABEL: "baseline",
                                         "pod-security.kubernetes.io/enforce-version": version})
    assert causes == [] and policy.enforce.version == version


def test_default_namespace_labels() -> None:
    assert default_namespace_labels() == {ENFORCE_LEVEL_LABEL: "baseline"}
    assert default_namespace_labels("privileged") == {ENFORCE_LEVEL_LABEL: "privileged"}
    with pytest.raises(ValueError, match="must be one of privileged, baseline, restricted"):
        default_namespace_labels("strict")


# --- pod updates, existing pods ---


def _pod(name: str, spec: Spec, **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **metadata}, "spec": spec}


def test_only_image_changes_and_new_ephemeral_containers_are_significant() -> None:
    old = _pod("p", baseline_spec(ephemeralContainers=[container("debug")]))
    relabeled = copy.deepcopy(old)
    relabeled["metadata"]["labels"] = {"a": "b"}
    relabeled["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    assert not significant_pod_update(relabeled, old)
    image = copy.deepcopy(old)
    image["spec"]["containers"][0]["image"] = "busybox:2"
    assert significant_pod_update(image, old)
    added = copy.deepcopy(old)
    added["spec"]["ephemeralContainers"].append(container("debug2"))
    assert significant_pod_update(added, old)
    more = copy.deepcopy(old)
    more["spec"]["initContainers"] = [container("init")]
    assert significant_pod_update(more, old)


def test_existing_pods_are_grouped_by_reasons() -> None:
    privileged = baseline_spec(containers=[container(securityContext={"privileged": True})])
    host = baseline_spec(hostNetwork=True)
    pods = [_pod("zeta", privileged), _pod("alpha", privileged), _pod("mid", privileged),
            _pod("net", host), _pod("ok", baseline_spec()), _pod("beta", privileged)]
    assert existing_pod_warnings("team", LevelVersion(BASELINE), pods) == [
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "alpha (and 3 other pods): privileged",
        "net: host namespaces",
    ]
    two = existing_pod_warnings("team", LevelVersion(BASELINE), pods[:2])
    assert two[1:] == ["alpha (and 1 other pod): privileged"]
    assert existing_pod_warnings("team", LevelVersion(BASELINE), [_pod("ok", baseline_spec())]
                                 ) == []


def test_existing_pods_beyond_the_limit_are_not_checked() -> None:
    privileged = baseline_spec(containers=[container(securityContext={"privileged": True})])
    owner = {"ownerReferences": [{"uid": "u1", "controller": True, "name": "rs",
                                  "kind": "ReplicaSet", "apiVersion": "apps/v1"}]}
    # The second replica of a controller goes last: the bare pod is checked before it.
    pods = [_pod("r1", baseline_spec(), **owner), _pod("r2", baseline_spec(), **owner),
            _pod("bare", privileged)]
    assert existing_pod_warnings("ns", LevelVersion(BASELINE, "v1.30"), pods, max_pods=2) == [
        "new PodSecurity enforce level only checked against the first 2 of 3 existing pods",
        'existing pods in namespace "ns" violate the new PodSecurity enforce level '
        '"baseline:v1.30"',
        "bare: privileged",
    ]


# --- through the store ---


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _labelled(core: Core, name: str, labels: dict[str, str]) -> list[str]:
    entry = core.store.table.get(NAMESPACES.key, "", name)
    if entry is None:
        return core.store.create(NAMESPACES, "", {"metadata": {"name": name,
                                                               "labels": labels}}).warnings
    body = copy.deepcopy(entry.obj)
    body["metadata"]["labels"] = labels
    return core.store.update(NAMESPACES, "", name, body).warnings


def _create_pod(core: Core, ns: str, name: str, spec: Spec) -> list[str]:
    return core.store.create(PODS, ns, {"metadata": {"name": name}, "spec": spec}).warnings


ROOT_HOSTPATH = baseline_spec(
    volumes=[{"name": "root", "hostPath": {"path": "/"}}],
    containers=[container(securityContext={"privileged": True})],
)


def test_an_unlabelled_namespace_admits_a_privileged_pod(core: Core) -> None:
    assert _create_pod(core, "default", "root", ROOT_HOSTPATH) == []


def test_enforce_refuses_with_403_naming_every_violation(core: Core) -> None:
    _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline"})
    with pytest.raises(ApiError) as refused:
        _create_pod(core, "team", "root", ROOT_HOSTPATH)
    assert refused.value.code == 403 and refused.value.reason == "Forbidden"
    assert refused.value.message == (
        'pods "root" is forbidden: violates PodSecurity "baseline:latest": '
        'hostPath volumes (volume "root"), '
        'privileged (container "c" must not set securityContext.privileged=true)'
    )
    assert refused.value.details == {"name": "root", "group": "", "kind": "pods"}
    assert core.store.table.get(PODS.key, "team", "root") is None


def test_a_generated_name_is_the_one_refused(core: Core) -> None:
    _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline"})
    with pytest.raises(ApiError) as refused:
        core.store.create(PODS, "team", {"metadata": {"generateName": "root-"},
                                         "spec": ROOT_HOSTPATH})
    assert refused.value.message.startswith('pods "root-')
    assert refused.value.details["name"].startswith("root-")


def test_host_network_is_refused_with_the_defaulted_host_ports(core: Core) -> None:
    _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline"})
    spec = baseline_spec(hostNetwork=True, containers=[container(
        ports=[{"containerPort": 8080}])])
    with pytest.raises(ApiError) as refused:
        _create_pod(core, "team", "net", spec)
    assert refused.value.message.endswith(
        'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), '
        'hostPort (container "c" uses hostPort 8080)'
    )


def test_warn_adds_a_warning_and_stores_the_pod(core: Core) -> None:
    _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline",
                             "pod-security.kubernetes.io/warn": "restricted"})
    warnings = _create_pod(core, "team", "web", baseline_spec())
    assert warnings == [
        'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container '
        '"c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container '
        '"c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
    ]
    assert core.store.table.get(PODS.key, "team", "web") is not None
    assert _create_pod(core, "team", "tight", restricted_spec()) == []


def test_audit_only_changes_nothing(core: Core) -> None:
    _labelled(core, "team", {"pod-security.kubernetes.io/audit": "restricted"})
    assert _create_pod(core, "team", "root", ROOT_HOSTPATH) == []


def test_an_invalid_enforce_label_on_a_stored_namespace_enforces_restricted(core: Core) -> None:
    _labelled(core, "team", {})
    entry = core.store.table.get(NAMESPACES.key, "", "team")
    assert entry is not None
    stored = copy.deepcopy(entry.obj)
    stored["metadata"]["labels"] = {ENFORCE_LEVEL_LABEL: "strict"}
    core.store.table.put(NAMESPACES.key, stored)  # as if stored before the labels were checked
    with pytest.raises(ApiError) as refused:
        _create_pod(core, "team", "web", baseline_spec())
    assert 'violates PodSecurity "restricted:latest"' in refused.value.message
    # Updating it with the same invalid labels is allowed; changing them to others is not.
    body = copy.deepcopy(stored)
    body["metadata"]["annotations"] = {"note": "x"}
    core.store.update(NAMESPACES, "", "team", body)
    with pytest.raises(ApiError) as invalid:
        _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "stricter"})
    assert invalid.value.code == 422


def test_invalid_labels_refuse_the_namespace(core: Core) -> None:
    with pytest.raises(ApiError) as refused:
        _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "strict"})
    assert refused.value.code == 422
    assert refused.value.message == (
        'Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted'
    )
    _labelled(core, "team", {})
    with pytest.raises(ApiError) as updated:
        _labelled(core, "team", {"pod-security.kubernetes.io/warn-version": "1.30"})
    assert updated.value.code == 422


def test_only_significant_pod_updates_are_checked(core: Core) -> None:
    _create_pod(core, "default", "root", ROOT_HOSTPATH)
    _labelled(core, "default", {ENFORCE_LEVEL_LABEL: "baseline"})
    entry = core.store.table.get(PODS.key, "default", "root")
    assert entry is not None
    relabeled = copy.deepcopy(entry.obj)
    relabeled["metadata"]["labels"] = {"app": "root"}
    assert core.store.update(PODS, "default", "root", relabeled).warnings == []
    entry = core.store.table.get(PODS.key, "default", "root")
    assert entry is not None
    new_image = copy.deepcopy(entry.obj)
    new_image["spec"]["containers"][0]["image"] = "busybox:2"
    with pytest.raises(ApiError) as refused:
        core.store.update(PODS, "default", "root", new_image)
    assert refused.value.code == 403
    assert refused.value.message.startswith(
        'pods "root" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes')


def test_tightening_enforce_warns_about_existing_pods(core: Core) -> None:
    _labelled(core, "team", {})
    _create_pod(core, "team", "root", ROOT_HOSTPATH)
    _create_pod(core, "team", "web", baseline_spec())
    assert _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline"}) == [
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "root: hostPath volumes, privileged",
    ]
    # Loosening, or keeping, the level checks nothing.
    assert _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline", "x": "y"}) == []
    assert _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "privileged"}) == []
    assert _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "restricted"}) == [
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"restricted:latest"',
        "root: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, "
        "restricted volume types, runAsNonRoot != true, seccompProfile",
        "web: allowPrivilegeEscalation != false, unrestricted capabilities, "
        "runAsNonRoot != true, seccompProfile",
    ]
    # Another version of the same level is checked again.
    warnings = _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "restricted",
                                        "pod-security.kubernetes.io/enforce-version": "v1.30"})
    assert warnings[0] == (
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"restricted:v1.30"'
    )


def test_jobs_and_cronjobs_are_warned_never_refused(core: Core) -> None:
    _labelled(core, "team", {ENFORCE_LEVEL_LABEL: "baseline"})
    template = {"spec": {**ROOT_HOSTPATH, "restartPolicy": "Never"}}
    job = {"metadata": {"name": "j"}, "spec": {"template": template}}
    expected = [
        'would violate PodSecurity "baseline:latest": hostPath volumes (volume "root"), '
        'privileged (container "c" must not set securityContext.privileged=true)'
    ]
    assert core.store.create(JOBS, "team", job).warnings[-1:] == expected
    cronjob = {"metadata": {"name": "cj"}, "spec": {"schedule": "* * * * *", "jobTemplate": {
        "spec": {"template": template}}}}
    assert core.store.create(CRONJOBS, "team", cronjob).warnings[-1:] == expected
    assert core.store.create(JOBS, "default", {**job, "metadata": {"name": "j"}}).warnings == []
