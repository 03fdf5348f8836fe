"""Why the API server refused a request: its authorizer (RBAC), an admission check, or a
namespace being deleted, told apart from the Status it answered with.

A 403 is not always a missing permission. The authorizer's refusal has one fixed text
(kube-apiserver's `forbiddenMessage`: `User "u" cannot create resource "pods" in API group
"" in the namespace "ns"`); every other refusal comes from admission (Pod Security,
ResourceQuota, LimitRange, admission webhooks, ValidatingAdmissionPolicy), and
NamespaceLifecycle marks a create in a namespace being deleted with the Status cause
`NamespaceTerminating`. Only the first is fixed by granting the engine more; callers
advise accordingly. The texts matched are kubernetes/kubernetes' own (the `<resource>
"<name>" is forbidden: ` lead is optional: older servers sent a webhook's denial without it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.kube.errors import ApiError

NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
"""The Status cause NamespaceLifecycle adds (core/v1 `NamespaceTerminatingCause`)."""

_FORBIDDEN_PREFIX = re.compile(r'^(?:[^\s"]+(?: "[^"]*")? is forbidden|forbidden): ')
"""`apierrors.NewForbidden`'s lead: `pods "x" is forbidden: `, `pods is forbidden: `."""
_AUTHORIZER = re.compile(r'^User "(?:[^"\\]|\\.)*" cannot \S+ (?:resource|path) "')
_TERMINATING = re.compile(
    r"unable to create new content in namespace \S+ because it is being terminated")
_POD_SECURITY = re.compile(r'^violates PodSecurity "([^"]+)"')
_QUOTA = re.compile(r"^(?:exceeded quota|failed quota|status unknown for quota): ([^\s,:]+)")
_QUOTA_UNNAMED = re.compile(r"^(?:insufficient quota to consume|quota usage is negative)")
_LIMIT_RANGE = re.compile(
    r"^\[?(?:(?:maximum|minimum) \S+ usage per \S+ is |\S+ max limit to request ratio per )")
_WEBHOOK = re.compile(r'^admission webhook "([^"]+)" denied the request')
_POLICY = re.compile(r"^ValidatingAdmissionPolicy '([^']+)'")


class RefusalKind(StrEnum):
    """Who refused."""

    AUTHORIZATION = "Authorization"
    """The authorizer (RBAC, or a webhook authorizer): a permission the caller lacks."""
    ADMISSION = "Admission"
    """An admission check refused the object as it is (policy, quota, limits)."""
    NAMESPACE_TERMINATING = "NamespaceTerminating"
    """The namespace is being deleted: nothing new may be created in it, ever again."""


class Policy(StrEnum):
    """The admission check that refused, where the message names it."""

    POD_SECURITY = "PodSecurity"
    RESOURCE_QUOTA = "ResourceQuota"
    LIMIT_RANGE = "LimitRange"
    WEBHOOK = "AdmissionWebhook"
    VALIDATING_ADMISSION_POLICY = "ValidatingAdmissionPolicy"
    UNKNOWN = "Admission"
    """Another admission plugin (or a message this module does not know)."""


@dataclass(frozen=True)
class Refusal:
    """One refusal, classified; `message` is the server's, whole."""

    kind: RefusalKind
    message: str
    policy: Policy | None = None
    """Set for `ADMISSION` only."""
    name: str | None = None
    """The policy's own name, where the message gives one: the ResourceQuota's, the
    webhook's, the ValidatingAdmissionPolicy's, or the Pod Security level (`restricted:latest`)."""
    resource: str | None = None
    """The resource refused (the Status's `details.kind`, which holds the plural: `pods`)."""

    @property
    def rbac(self) -> bool:
        """Whether granting the caller a permission is what would help."""
        return self.kind is RefusalKind.AUTHORIZATION

    @property
    def names_check(self) -> bool:
        """Whether the message names the admission check that refused (for answers other
        than 403: a webhook or a ValidatingAdmissionPolicy may deny with 422, say)."""
        return self.policy not in (None, Policy.UNKNOWN)

    @property
    def policy_label(self) -> str:
        """The admission check in words, for events and logs: `ResourceQuota "tiny"`."""
        if self.policy is None:
            return str(self.kind)
        return self.policy.value if self.name is None else f'{self.policy.value} "{self.name}"'


def classify(error: ApiError) -> Refusal:
    """The refusal `error` (a 403, or another code an admission check chose) stands for."""
    return classify_status(error.body, error.message)


def classify_status(body: dict[str, Any], message: str | None = None) -> Refusal:
    """Classify a Status object (`message` overrides its message: a body-less answer)."""
    text = str(message if message is not None else body.get("message") or "")
    details = body.get("details")
    details = details if isinstance(details, dict) else {}
    resource = str(details.get("kind") or "") or None
    if _terminating(details, text):
        return Refusal(RefusalKind.NAMESPACE_TERMINATING, text, resource=resource)
    detail = _FORBIDDEN_PREFIX.sub("", text, count=1)
    if _AUTHORIZER.match(detail):
        return Refusal(RefusalKind.AUTHORIZATION, text, resource=resource)
    policy, name = _admission_policy(detail)
    return Refusal(RefusalKind.ADMISSION, text, policy, name, resource)


def _terminating(details: dict[str, Any], text: str) -> bool:
    causes = details.get("causes")
    if any(isinstance(c, dict) and c.get("reason") == NAMESPACE_TERMINATING_CAUSE
           for c in (causes if isinstance(causes, list) else ())):
        return True
    return _TERMINATING.search(text) is not None


def _admission_policy(detail: str) -> tuple[Policy, str | None]:
    for pattern, policy in ((_POD_SECURITY, Policy.POD_SECURITY), (_QUOTA, Policy.RESOURCE_QUOTA),
                            (_WEBHOOK, Policy.WEBHOOK),
                            (_POLICY, Policy.VALIDATING_ADMISSION_POLICY)):
        found = pattern.match(detail)
        if found:
            return policy, found.group(1)
    if _QUOTA_UNNAMED.match(detail):
        return Policy.RESOURCE_QUOTA, None
    if _LIMIT_RANGE.match(detail):
        return Policy.LIMIT_RANGE, None
    return Policy.UNKNOWN, None
