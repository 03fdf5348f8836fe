"""kube-apiserver's answer to a patch whose `metadata.uid` is not the stored object's, for
the fake clients of the claim tests: a patch takes no uid precondition, so its uid meets
ValidateObjectMetaUpdate, a 422 on `metadata.uid` (field is immutable). A name that holds
another object since the engine read it answers so."""

from __future__ import annotations

from typing import Any

from engine.kube.errors import error_from_status


def refuse_another_uid(kind: str, name: str, patch: Any, stored: dict[str, Any]) -> None:
    """Raise the 422 kube-apiserver sends when `patch` names a uid other than `stored`'s."""
    sent = (patch.get("metadata") or {}).get("uid")
    if not sent or sent == stored["metadata"].get("uid"):
        return
    cause = f'Invalid value: "{sent}": field is immutable'
    raise error_from_status(422, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'{kind} "{name}" is invalid: metadata.uid: {cause}', "reason": "Invalid",
        "details": {"name": name, "kind": kind, "causes": [
            {"reason": "FieldValueInvalid", "message": cause, "field": "metadata.uid"}]},
        "code": 422})
