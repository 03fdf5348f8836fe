"""Telling refusals apart from the Status bodies real kube-apiservers answered with.

Each body is what kube-apiserver (1.27-1.33) sends, built as upstream builds it:
`apierrors.NewForbidden` (`<resource> "<name>" is forbidden: <detail>`, no name for a
create the authorizer refuses before it reads the body), RBAC's `forbiddenMessage`, the
admission plugins' own texts, NamespaceLifecycle's `NamespaceTerminating` cause.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.kube.errors import Forbidden, Invalid, Replaced, error_from_status
from engine.kube.refusals import Policy, RefusalKind, classify, classify_status

SA = "system:serviceaccount:jobmachine-system:jobmachine"


def status(message: str, *, code: int = 403, reason: str = "Forbidden", kind: str = "pods",
           name: str = "", causes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if causes is not None:
        details["causes"] = causes
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": details, "code": code}


RBAC_BODIES = [
    status(f'pods is forbidden: User "{SA}" cannot create resource "pods" in API group "" '
           f'in the namespace "team"'),
    status(f'statemachines.jobmachine.dev is forbidden: User "{SA}" cannot create resource '
           f'"statemachines" in API group "jobmachine.dev" at the cluster scope',
           kind="statemachines"),
    status(f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" at '
           f'the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "jobmachine" not '
           f'found'),
    status(f'pods "job-master-0" is forbidden: User "{SA}" cannot patch resource "pods" in '
           f'API group "" in the namespace "team"', name="job-master-0"),
    status('forbidden: User "system:anonymous" cannot get path "/apis"', kind=""),
]


@pytest.mark.parametrize("body", RBAC_BODIES)
def test_the_authorizers_refusal_is_rbac(body: dict[str, Any]) -> None:
    refusal = classify(error_from_status(403, body))
    assert refusal.kind is RefusalKind.AUTHORIZATION
    assert refusal.rbac
    assert refusal.policy is None
    assert refusal.message == body["message"]


ADMISSION = [
    (status('pods "job-worker-0" is forbidden: violates PodSecurity "restricted:latest": '
            'allowPrivilegeEscalation != false (container "pytorch" must set '
            'securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or '
            'container "pytorch" must set securityContext.runAsNonRoot=true)',
            name="job-worker-0"),
     Policy.POD_SECURITY, "restricted:latest"),
    (status('pods "job-worker-0" is forbidden: violates PodSecurity "baseline:v1.30": '
            'privileged (container "pytorch" must not set securityContext.privileged=true)',
            name="job-worker-0"),
     Policy.POD_SECURITY, "baseline:v1.30"),
    (status('pods "job-worker-0" is forbidden: exceeded quota: tiny, requested: pods=1, '
            'used: pods=1, limited: pods=1', name="job-worker-0"),
     Policy.RESOURCE_QUOTA, "tiny"),
    (status('pods "job-worker-0" is forbidden: failed quota: compute: must specify '
            'limits.cpu for: pytorch; limits.memory for: pytorch', name="job-worker-0"),
     Policy.RESOURCE_QUOTA, "compute"),
    (status('pods "job-worker-0" is forbidden: status unknown for quota: compute, '
            'resources: limits.cpu', name="job-worker-0"),
     Policy.RESOURCE_QUOTA, "compute"),
    (status('pods "job-worker-0" is forbidden: insufficient quota to consume: '
            'requests.nvidia.com/gpu', name="job-worker-0"),
     Policy.RESOURCE_QUOTA, None),
    (status('pods "job-worker-0" is forbidden: maximum cpu usage per Container is 1, but '
            'limit is 2', name="job-worker-0"),
     Policy.LIMIT_RANGE, None),
    (status('pods "job-worker-0" is forbidden: [maximum cpu usage per Container is 1, but '
            'limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi]',
            name="job-worker-0"),
     Policy.LIMIT_RANGE, None),
    (status('pods "job-worker-0" is forbidden: [minimum cpu usage per Pod is 200m, but '
            'request is 100m, cpu max limit to request ratio per Container is 2, but provided '
            'ratio is 4.000000]', name="job-worker-0"),
     Policy.LIMIT_RANGE, None),
    (status('pods "job-worker-0" is forbidden: cpu max limit to request ratio per Container '
            'is 2, but provided ratio is 4.000000', name="job-worker-0"),
     Policy.LIMIT_RANGE, None),
    # Today's ToStatusErr leads with NewForbidden's words; older servers sent the webhook's alone.
    (status('pods "job-worker-0" is forbidden: admission webhook "validate.kyverno.svc-fail" '
            'denied the request: resource Pod/team/job-worker-0 was blocked',
            name="job-worker-0"),
     Policy.WEBHOOK, "validate.kyverno.svc-fail"),
    (status('admission webhook "validation.gatekeeper.sh" denied the request: [no-latest] '
            'image tag latest is not allowed', name="job-worker-0"),
     Policy.WEBHOOK, "validation.gatekeeper.sh"),
    (status("pods \"job-worker-0\" is forbidden: ValidatingAdmissionPolicy 'no-host-path' with "
            "binding 'no-host-path-team' denied request: failed expression: "
            "object.spec.volumes.all(v, !has(v.hostPath))", name="job-worker-0",
            causes=[{"message": "ValidatingAdmissionPolicy 'no-host-path' with binding "
                                "'no-host-path-team' denied request: failed expression: "
                                "object.spec.volumes.all(v, !has(v.hostPath))"}]),
     Policy.VALIDATING_ADMISSION_POLICY, "no-host-path"),
    (status('pods "job-worker-0" is forbidden: not yet ready to handle request',
            name="job-worker-0"),
     Policy.UNKNOWN, None),
]


@pytest.mark.parametrize(("body", "policy", "name"), ADMISSION)
def test_an_admission_refusal_names_its_check(body: dict[str, Any], policy: Policy,
                                               name: str | None) -> None:
    refusal = classify(error_from_status(403, body))
    assert refusal.kind is RefusalKind.ADMISSION
    assert not refusal.rbac
    assert (refusal.policy, refusal.name) == (policy, name)
    assert refusal.resource == "pods"
    assert refusal.names_check is (policy is not Policy.UNKNOWN)


def test_a_policy_label_quotes_the_name_it_has() -> None:
    quota = classify_status(ADMISSION[2][0])
    limits = classify_status(ADMISSION[6][0])
    assert quota.policy_label == 'ResourceQuota "tiny"'
    assert limits.policy_label == "LimitRange"


def test_a_policy_denying_with_422_is_still_named() -> None:
    """A ValidatingAdmissionPolicy denies with reason Invalid (422) unless it says otherwise."""
    message = ("pods \"job-worker-0\" is forbidden: ValidatingAdmissionPolicy 'no-host-path' "
               "with binding 'b' denied request: failed expression: x")
    error = error_from_status(422, status(message, code=422, reason="Invalid"))
    assert isinstance(error, Invalid)
    refusal = classify(error)
    assert (refusal.policy, refusal.name, refusal.names_check) == (
        Policy.VALIDATING_ADMISSION_POLICY, "no-host-path", True)


def test_a_plain_validation_error_names_no_check() -> None:
    error = error_from_status(422, status(
        'Pod "job-worker-0" is invalid: spec.containers[0].image: Required value',
        code=422, reason="Invalid", kind="Pod"))
    assert not classify(error).names_check


TERMINATING = 'unable to create new content in namespace team because it is being terminated'
CAUSE = {"reason": "NamespaceTerminating", "message": "namespace team is being terminated",
         "field": "metadata.namespace"}


@pytest.mark.parametrize("body", [
    status(f'pods "job-worker-0" is forbidden: {TERMINATING}', name="job-worker-0",
           causes=[CAUSE]),
    status(f'events "job.18a2b" is forbidden: {TERMINATING}', kind="events", name="job.18a2b",
           causes=[CAUSE]),
    # the cause alone is what client-go's HasStatusCause looks at
    status("pods \"job-worker-0\" is forbidden: namespace team is being torn down",
           name="job-worker-0", causes=[CAUSE]),
    # the message alone (a body whose causes were lost on the way)
    status(f'pods "job-worker-0" is forbidden: {TERMINATING}', name="job-worker-0"),
])
def test_a_namespace_being_deleted_is_told_apart(body: dict[str, Any]) -> None:
    refusal = classify(error_from_status(403, body))
    assert refusal.kind is RefusalKind.NAMESPACE_TERMINATING
    assert not refusal.rbac


def test_a_forbidden_without_a_body_is_classified_by_its_message() -> None:
    error = Forbidden(403, "", f'User "{SA}" cannot list resource "pods" in API group "" at '
                               f'the cluster scope', {})
    assert classify(error).rbac


def test_a_422_on_metadata_uid_is_a_replaced_object_and_still_invalid() -> None:
    """kube-apiserver's answer to a patch whose uid is not the stored object's; the engine's
    claims read it as "the name holds another object now"; any other 422 is not that."""
    cause = 'Invalid value: "old": field is immutable'
    uid_body = status(f'pods "p" is invalid: metadata.uid: {cause}', code=422,
                      reason="Invalid", kind="Pod", name="p",
                      causes=[{"reason": "FieldValueInvalid", "message": cause,
                               "field": "metadata.uid"}])
    replaced = error_from_status(422, uid_body)
    assert isinstance(replaced, Replaced) and isinstance(replaced, Invalid)
    labels_body = {**uid_body, "details": {**uid_body["details"], "causes": [
        {"reason": "FieldValueInvalid", "message": cause, "field": "metadata.labels"}]}}
    for other in (labels_body, {**uid_body, "details": {"kind": "Pod"}}, {}):
        assert type(error_from_status(422, other)) is Invalid
    assert not isinstance(error_from_status(409, {**uid_body, "reason": "Conflict"}), Invalid)
