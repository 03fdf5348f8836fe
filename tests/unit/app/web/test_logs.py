"""Log tails: read as the viewer, again only while a pod runs or when it changed."""

from __future__ import annotations

from typing import Any, cast

from engine.app.web.logs import SHOWN, TAIL_LINES, WHOLE_BYTES, LogTails, whole_log
from engine.app.web.state import Pod
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, Forbidden


class FakeClient:
    """Answers pods/log reads from a table; remembers what was asked."""

    def __init__(self, answers: dict[str, str | ApiError]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str, dict[str, Any]]] = []

    def read_text(self, _res: object, name: str, namespace: str, *, subresource: str,
                  query: dict[str, Any]) -> str:
        assert subresource == "log"
        self.asked.append((namespace, name, query))
        answer = self.answers[name]
        if isinstance(answer, ApiError):
            raise answer
        return answer


def _pod(name: str, *, phase: str = "Succeeded", rv: str = "1") -> Pod:
    return Pod(name=name, replica_type="Worker", replica_index="0", phase=phase,
               container="pytorch", container_state="", resource_version=rv)


def _tails(client: FakeClient) -> LogTails:
    return LogTails(lambda: cast(KubeClient, client), "team")


def test_a_finished_pods_tail_is_read_once_a_running_pods_every_time() -> None:
    client = FakeClient({"done": "bye\n", "busy": "working\n"})
    tails = _tails(client)
    pods = [_pod("done"), _pod("busy", phase="Running")]

    first, second = tails.read(pods), tails.read(pods)

    assert first == second
    assert (first["done"].text, first["busy"].text) == ("bye\n", "working\n")
    assert [name for _, name, _ in client.asked] == ["done", "busy", "busy"]
    assert client.asked[0] == ("team", "done", {"tailLines": TAIL_LINES, "limitBytes": 65536,
                                                "container": "pytorch"})


def test_a_changed_pod_is_read_again() -> None:
    client = FakeClient({"done": "first\n"})
    tails = _tails(client)
    tails.read([_pod("done")])
    client.answers["done"] = "second\n"

    assert tails.read([_pod("done", rv="2")])["done"].text == "second\n"


def test_a_refused_or_failed_read_says_why() -> None:
    client = FakeClient({
        "secret": Forbidden(403, "Forbidden", "pods \"secret\" is forbidden", {}),
        "waiting": ApiError(400, "BadRequest", 'container "pytorch" is waiting to start', {}),
    })

    tails = _tails(client).read([_pod("secret"), _pod("waiting")])

    assert tails["secret"].note == "you may not read this pod's log (get pods/log)"
    assert tails["waiting"].note == 'container "pytorch" is waiting to start'
    assert not tails["secret"].text


def test_only_the_first_pods_logs_are_read() -> None:
    client = FakeClient({f"p{n}": "" for n in range(SHOWN + 2)})

    tails = _tails(client).read([_pod(f"p{n}") for n in range(SHOWN + 2)])

    assert len(client.asked) == SHOWN
    assert tails[f"p{SHOWN}"].note.startswith(f"not shown: only the first {SHOWN}")


def test_a_whole_log_is_read_as_the_viewer_previous_on_request_and_refusals_say_why() -> None:
    client = FakeClient({"done": "all of it\n", "secret": Forbidden(403, "Forbidden", "no", {}),
                         "gone": ApiError(400, "BadRequest", "previous terminated container "
                                          "not found", {})})
    viewer = cast(KubeClient, client)

    assert whole_log(viewer, "team", _pod("done"), previous=False).text == "all of it\n"
    whole_log(viewer, "team", _pod("done"), previous=True)
    assert [query for _, _, query in client.asked] == [
        {"limitBytes": WHOLE_BYTES, "container": "pytorch"},
        {"limitBytes": WHOLE_BYTES, "container": "pytorch", "previous": "true"}]
    refused = whole_log(viewer, "team", _pod("secret"), previous=False)
    assert (refused.status, refused.text) == (
        403, "you may not read this pod's log (get pods/log)\n")
    assert whole_log(viewer, "team", _pod("gone"), previous=True).status == 400
