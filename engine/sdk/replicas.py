"""What each replica of a job is, read from its status: the state its machine is in, or,
for a job that ended before some replicas did, the words the engine recorded for them
(`Running, stopped at job end (pod deleted)`, as `kubectl describe` and the web view say).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.native_status import engine_view
from engine.controller.reconcile.record import RecordError, parse_ranges, read_record
from engine.controller.reconcile.status import UNFINISHED_FIELD


def replica_states(job: Mapping[str, Any]) -> dict[ReplicaId, str]:
    """Each replica's state in words, by replica, in order; empty for a job not seen yet
    (or whose record was edited into nonsense)."""
    status = engine_view(job).get("status") or {}
    try:
        states = dict(read_record(status).replica_states)
    except RecordError:
        return {}
    for replica_type, entry in (status.get("replicaStatuses") or {}).items():
        for ranges, words in ((entry or {}).get(UNFINISHED_FIELD) or {}).items():
            states.update({ReplicaId(replica_type, index): str(words)
                           for index in parse_ranges(ranges)})
    return dict(sorted(states.items()))
