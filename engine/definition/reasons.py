"""`${job.kind}` in reasons: one base machine gives each kind its own CamelCase reasons.

Kubeflow names its reasons after the kind (PyTorchJobCreated, TFJobFailed); a
base shared by several kinds writes `${job.kind}Created` instead. Reasons are
fixed words, not templates: the placeholder is replaced once, when a machine
that governs a kind is loaded, so events, conditions and pictures all carry
the final word. Any other `${...}` in a reason is left for the checks to refuse.
"""

from __future__ import annotations

from typing import Any

PLACEHOLDER = "${job.kind}"
_LEVELS = ("job", "replica")
_ACTION_KEYS = ("onEnter", "actions")


def expand_kind(data: Any) -> Any:
    """The document with the placeholder replaced in every reason, when it governs a kind
    (the input is not changed; anything malformed is left for the schema to report)."""
    kind = _governed_kind(data)
    if kind is None:
        return data
    spec = dict(data["spec"])
    for level in _LEVELS:
        if isinstance(spec.get(level), dict):
            spec[level] = _machine(spec[level], kind)
    return {**data, "spec": spec}


def _governed_kind(data: Any) -> str | None:
    spec = data.get("spec") if isinstance(data, dict) else None
    governs = spec.get("governs") if isinstance(spec, dict) else None
    kind = governs.get("kind") if isinstance(governs, dict) else None
    return kind if isinstance(kind, str) else None


def _machine(machine: dict[str, Any], kind: str) -> dict[str, Any]:
    result = dict(machine)
    states = machine.get("states")
    if isinstance(states, dict):
        result["states"] = {name: _state(state, kind) for name, state in states.items()}
    transitions = machine.get("transitions")
    if isinstance(transitions, list):
        result["transitions"] = [_with_reason(_with_actions(t, kind), kind) for t in transitions]
    return result


def _state(state: Any, kind: str) -> Any:
    if not isinstance(state, dict):
        return state
    result = _with_actions(state, kind)
    condition = state.get("condition")
    if isinstance(condition, dict):
        result["condition"] = _with_reason(condition, kind)
    return result


def _with_actions(owner: Any, kind: str) -> Any:
    if not isinstance(owner, dict):
        return owner
    result = dict(owner)
    for key in _ACTION_KEYS:
        actions = owner.get(key)
        if isinstance(actions, list):
            result[key] = [_action(action, kind) for action in actions]
    return result


def _action(action: Any, kind: str) -> Any:
    """`{setCondition: {reason: ...}}` or `{name: ..., args: {reason: ...}}`."""
    if not isinstance(action, dict):
        return action
    if "name" in action:
        args = action.get("args")
        return {**action, "args": _with_reason(args, kind)} if isinstance(args, dict) else action
    return {name: _with_reason(args, kind) for name, args in action.items()}


def _with_reason(owner: Any, kind: str) -> Any:
    if not isinstance(owner, dict):
        return owner
    reason = owner.get("reason")
    if isinstance(reason, str) and PLACEHOLDER in reason:
        return {**owner, "reason": reason.replace(PLACEHOLDER, kind)}
    return dict(owner)
