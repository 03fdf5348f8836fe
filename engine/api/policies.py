"""Failure rules as every job kind's spec writes them: what a failed pod means.

Each rule is checked twice with the same meaning: by the API server (CEL rules in
the CRD, so `kubectl apply` rejects a bad rule) and by these models (so the
engine and the tests reject it without a server).
"""

from __future__ import annotations

from engine.definition.failure_rules import (
    FAILURE_RULES_DOC,
    ExitCodes,
    FailureAction,
    FailureRule,
    KindFailureRule,
    PodConditionMatch,
)

__all__ = [
    "FAILURE_RULES_DOC",
    "ExitCodes",
    "FailureAction",
    "FailureRule",
    "KindFailureRule",
    "PodConditionMatch",
]
