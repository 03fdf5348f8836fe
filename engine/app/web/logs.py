"""Replicas' logs, read through the pods/log subresource as the viewer: the last lines of
each for a page, the whole of one for its download link.

Reading as the viewer (with their token) leaves the decision to the API server: a user
without `get pods/log` sees why, never the log. A pod's tail is read again only while
it runs or when the pod changed, so a finished job's page costs no request per redraw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.app.web.job_page import LogTail
from engine.app.web.state import Pod
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, Forbidden
from engine.kube.resources import PODS

TAIL_LINES = 40
TAIL_BYTES = 64 * 1024
SHOWN = 20
"""Logs of at most this many pods per page (a job may have thousands of replicas)."""
WHOLE_BYTES = 16 * 1024 * 1024
"""A download holds at most this much of a log (its end is cut)."""
_FORBIDDEN = "you may not read this pod's log (get pods/log)"


@dataclass(frozen=True)
class WholeLog:
    """A pod's whole log as text, or why not, with the HTTP status that says so."""

    text: str
    status: int = 200


def whole_log(client: KubeClient, namespace: str, pod: Pod, *, previous: bool) -> WholeLog:
    """The pod's log (`previous`: of the container's attempt before its last restart)."""
    query: dict[str, object] = {"limitBytes": WHOLE_BYTES}
    if pod.container:
        query["container"] = pod.container
    if previous:
        query["previous"] = "true"
    try:
        return WholeLog(client.read_text(PODS, pod.name, namespace, subresource="log",
                                         query=query))
    except Forbidden:
        return WholeLog(_FORBIDDEN + "\n", 403)
    except ApiError as exc:
        return WholeLog(f"{exc}\n", exc.status if 400 <= exc.status < 600 else 502)


class LogTails:
    """The log tails of one page's pods, kept between redraws."""

    def __init__(self, client: Callable[[], KubeClient], namespace: str) -> None:
        self._client = client
        """The viewer's client (asked each time: the viewers' clients are kept a while only)."""
        self._namespace = namespace
        self._kept: dict[str, tuple[str, LogTail]] = {}

    def read(self, pods: Sequence[Pod]) -> dict[str, LogTail]:
        """Pod name -> its tail, for the first SHOWN pods (the rest say they are not shown)."""
        tails = {pod.name: self._tail(pod) for pod in pods[:SHOWN]}
        tails.update({pod.name: LogTail(note=f"not shown: only the first {SHOWN} pods' logs "
                                             "are") for pod in pods[SHOWN:]})
        return tails

    def _tail(self, pod: Pod) -> LogTail:
        kept = self._kept.get(pod.name)
        if kept is not None and kept[0] == pod.resource_version and pod.phase != "Running":
            return kept[1]
        tail = self._fetch(pod)
        self._kept[pod.name] = (pod.resource_version, tail)
        return tail

    def _fetch(self, pod: Pod) -> LogTail:
        query: dict[str, object] = {"tailLines": TAIL_LINES, "limitBytes": TAIL_BYTES}
        if pod.container:
            query["container"] = pod.container
        try:
            return LogTail(text=self._client().read_text(
                PODS, pod.name, self._namespace, subresource="log", query=query))
        except Forbidden:
            return LogTail(note=_FORBIDDEN)
        except ApiError as exc:
            return LogTail(note=str(exc))
