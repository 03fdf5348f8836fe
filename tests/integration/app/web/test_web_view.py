"""The web view against a real local cluster, as curl sees it: who gets in, what each user
sees, and the live stream of a job's state changes.

Two users come from a token file: `nobody` (no binding at all) and `teamer` (may list
PyTorchJobs, pods and events in namespace `team` only, and read logs there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.app.web import RunningWebView, WebOptions, serving_web_view
from engine.kube.resources import NAMESPACES, Resource
from engine.settings import EngineSettings
from tests.integration.app.support import job_status, wait_until, workers_job
from tests.integration.app.web.browsing import (
    event_stream,
    request,
    session_cookie,
    until,
)
from tests.kinds import PYTORCHJOBS

pytestmark = pytest.mark.slow

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
RESTARTED = "restarted"
TEAM_JOB = "team-job"
JOB_PATH = f"/jobs/default/pytorchjobs.kubeflow.org/{RESTARTED}"


@dataclass(frozen=True)
class Viewed:
    cluster: LocalCluster
    view: RunningWebView

    @property
    def admin(self) -> str:
        return self.cluster.server.token


def _grant_team(cluster: LocalCluster) -> None:
    client = cluster.client
    client.create(NAMESPACES, {"metadata": {"name": "team"}})
    client.create(ROLES, {"metadata": {"name": "job-viewer"}, "rules": [
        {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ]}, "team")
    client.create(ROLE_BINDINGS, {
        "metadata": {"name": "teamer-views-jobs"},
        "roleRef": {"apiGroup": ROLES.group, "kind": "Role", "name": "job-viewer"},
        "subjects": [{"kind": "User", "name": "teamer", "apiGroup": ROLES.group}],
    }, "team")


@pytest.fixture(scope="module")
def viewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewed]:
    """A local cluster with two finished jobs (one restarted once), and its web view."""
    home = tmp_path_factory.mktemp("web")
    users = home / "users.csv"
    users.write_text("nobody-secret,nobody,u-1\nteamer-secret,teamer,u-2\n")
    settings = EngineSettings(replica_backoff_base_s=0.2)
    options = UpOptions(data_dir=home / "data", port=0, node_mode="simulate",
                        settings=settings, token_auth_file=users)
    with running_local_cluster(options) as cluster, serving_web_view(
            cluster.client, WebOptions(system_namespace=settings.system_namespace)) as view:
        _grant_team(cluster)
        cluster.client.create(PYTORCHJOBS, workers_job(RESTARTED, workers=1, annotations={
            "sim.jobmachine.dev/exit-codes": "137,0"}), "default")
        team_job = workers_job(TEAM_JOB, workers=1, annotations={})
        team_job["metadata"]["namespace"] = "team"
        cluster.client.create(PYTORCHJOBS, team_job, "team")
        wait_until(lambda: job_status(cluster.client, RESTARTED),
                   lambda s: s.get("phase") == "Succeeded", what="the job to succeed")
        yield Viewed(cluster, view)


def _page(viewed: Viewed, path: str, *, token: str | None) -> str:
    """The page once the web view's watch has caught up with the finished jobs."""
    answer = wait_until(lambda: request(viewed.view.url + path, token=token),
                        lambda a: a.status == 200 and 'data-state="Succeeded"' in a.body,
                        what=f"{path} to show the finished job")
    return answer.body


LOG_PATH = f"{JOB_PATH}/logs/{RESTARTED}-worker-0"


@pytest.mark.parametrize("path", ["/", "/stream", JOB_PATH, JOB_PATH + "/stream", LOG_PATH])
@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_without_a_token_the_api_server_accepts_there_is_the_login_form_not_data(
    viewed: Viewed, path: str, token: str | None
) -> None:
    answer = request(viewed.view.url + path, token=token)

    assert answer.status == 401
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="jobmachine"'
    assert 'name="token"' in answer.body
    assert RESTARTED not in answer.body.replace(f"next\" value=\"{path}", "")
    assert "Set-Cookie" not in answer.headers


def test_the_list_shows_each_job_with_kind_state_restarts_and_age(viewed: Viewed) -> None:
    body = _page(viewed, "/", token=viewed.admin)

    row = re.search(rf'<tr data-tone="succeeded"><td><a href="{JOB_PATH}">{RESTARTED}</a>'
                    r"</td>(.*?)</tr>", body)
    assert row is not None, body
    assert re.fullmatch(
        r'<td>default</td><td>PyTorchJob</td><td><span class="state" data-state="Succeeded" '
        r'data-tone="succeeded">Succeeded</span></td><td class="number">1</td><td><time '
        r'class="age" datetime="[^"]+">\d+s</time></td>', row.group(1))
    assert "<td>team</td>" in body
    assert "Succeeded <b>2</b>" in body  # the counts by state
    filtered = _page(viewed, "/?namespace=team", token=viewed.admin)
    assert TEAM_JOB in filtered and f">{RESTARTED}</a>" not in filtered
    assert "signed in as <b>kubernetes-admin</b>" in body


def test_the_job_page_shows_state_restarts_machine_events_and_logs(viewed: Viewed) -> None:
    body = _page(viewed, JOB_PATH, token=viewed.admin)

    assert '<span id="restarts">1</span>' in body
    assert '<g id="node' in body and 'current" data-current="job"' in body
    current = re.findall(r'class="node \w+ current" data-current="([^"]*)">\s*<title>([^<]*)<',
                         body)
    assert sorted(current) == [("Worker-0", "replica/s/Succeeded"), ("job", "job/s/Succeeded")]
    assert "exited with code 137" in body  # the ExitedWithCode event
    assert "is restarting because Worker replica(s) failed." in body
    assert "<td>Succeeded</td><td>True</td><td>PyTorchJobSucceeded</td>" in body
    assert "<td>SuccessCriteriaMet</td>" not in body  # Succeeded took it over at the end
    assert "simulated attempt 2: exit code 0" in body  # the log tail, read through pods/log
    assert f'href="{LOG_PATH}?download=1"' in body
    assert _strict_headers(viewed, JOB_PATH)


def test_a_replicas_whole_log_downloads_as_the_viewer_may_read_it(viewed: Viewed) -> None:
    answer = request(viewed.view.url + LOG_PATH + "?download=1", token=viewed.admin)
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert answer.headers["Content-Disposition"] == (
        f'attachment; filename="{RESTARTED}-worker-0.log"')
    assert "simulated attempt 2: exit code 0" in answer.body
    # a pod that is not the job's is not found; a user who may not list the job is refused
    assert request(viewed.view.url + f"{JOB_PATH}/logs/{TEAM_JOB}-worker-0",
                   token=viewed.admin).status == 404
    assert request(viewed.view.url + LOG_PATH, token="teamer-secret").status == 403


def test_the_icon_is_served(viewed: Viewed) -> None:
    for path in ("/favicon.svg", "/favicon.ico"):
        answer = request(viewed.view.url + path)
        assert answer.status == 200 and answer.body.startswith("<svg")


def _strict_headers(viewed: Viewed, path: str) -> bool:
    headers = request(viewed.view.url + path, token=viewed.admin).headers
    return (headers["Cache-Control"] == "no-store"
            and "script-src 'self'" in (headers["Content-Security-Policy"] or "")
            and headers["X-Content-Type-Options"] == "nosniff"
            and headers["Referrer-Policy"] == "no-referrer")


def test_a_token_link_starts_a_strict_session_and_goes_to_the_clean_url(viewed: Viewed) -> None:
    link = viewed.view.login_link(viewed.admin) + "&x=1"
    answer = request(link)

    assert answer.status == 303
    assert answer.headers["Location"] == "/?x=1"
    attributes = {part.strip().lower() for part in answer.headers["Set-Cookie"].split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    assert viewed.admin not in answer.headers["Set-Cookie"]
    cookie = session_cookie(answer)
    assert request(viewed.view.url + "/", cookie=cookie).status == 200

    logged_out = request(viewed.view.url + "/logout", method="POST", cookie=cookie)
    assert (logged_out.status, logged_out.headers["Location"]) == (303, "/login")
    assert request(viewed.view.url + "/", cookie=cookie).status == 401


def test_the_login_form_starts_a_session_only_for_a_token_the_server_accepts(
    viewed: Viewed,
) -> None:
    refused = request(viewed.view.url + "/login", method="POST",
                      form="token=wrong&next=%2Fjobs%2Fx")
    assert refused.status == 401
    assert "did not accept that token" in refused.body

    accepted = request(viewed.view.url + "/login", method="POST",
                       form=f"token={viewed.admin}&next=%2F%2Fevil.example%2F")
    assert (accepted.status, accepted.headers["Location"]) == (303, "/")
    for sneaked in ("%2F%09%2Fevil.example", "%2F%0a%2Fevil.example", "%2F%5Cevil.example",
                    "https%3A%2F%2Fevil.example%2F"):
        answer = request(viewed.view.url + "/login", method="POST",
                         form=f"token={viewed.admin}&next={sneaked}")
        assert (answer.status, answer.headers["Location"]) == (303, "/"), sneaked
    assert request(viewed.view.url + JOB_PATH, cookie=session_cookie(accepted)).status == 200


def test_a_user_without_list_rights_gets_a_clear_403(viewed: Viewed) -> None:
    for path in ("/", JOB_PATH, "/stream", JOB_PATH + "/stream"):
        answer = request(viewed.view.url + path, token="nobody-secret")
        assert answer.status == 403, (path, answer.status)
        assert "nobody may not list" in answer.body
        assert "Succeeded" not in answer.body


def test_a_user_sees_only_the_namespaces_where_rbac_lets_them_list(viewed: Viewed) -> None:
    team_path = f"/jobs/team/pytorchjobs.kubeflow.org/{TEAM_JOB}"
    body = _page(viewed, "/", token="teamer-secret")

    assert TEAM_JOB in body
    assert RESTARTED not in body
    assert "<td>default</td>" not in body
    assert request(viewed.view.url + JOB_PATH, token="teamer-secret").status == 403
    team_page = _page(viewed, team_path, token="teamer-secret")
    assert "simulated attempt 1: exit code 0" in team_page  # teamer may read logs there


def test_the_stream_delivers_each_state_change_as_it_happens(viewed: Viewed) -> None:
    """The job starts suspended and is resumed only once the stream is open, so the stream
    must carry every later state however slowly the machine runs."""
    name = "streamed"
    client = viewed.cluster.client
    job = workers_job(name, workers=1, annotations={"sim.jobmachine.dev/run-seconds": "2"})
    job["spec"]["runPolicy"] = {"suspend": True}
    client.create(PYTORCHJOBS, job, "default")
    path = f"/jobs/default/pytorchjobs.kubeflow.org/{name}"
    wait_until(lambda: request(viewed.view.url + path, token=viewed.admin).status,
               lambda status: status == 200, what="the job's page")

    states: list[str] = []
    resumed = False
    with event_stream(viewed.view.url + path + "/stream", token=viewed.admin) as events:
        for kind, data in until(events, seconds=60):
            assert kind == "parts"
            assert isinstance(data, dict)
            summary = data.get("summary")
            if summary is not None:
                state = re.search(r'data-state="([^"]*)"', summary)
                assert state is not None
                states.append(state.group(1))
            if not resumed and "Suspended" in states:  # the stream has shown it suspended
                client.patch(PYTORCHJOBS, name, {"spec": {"runPolicy": {"suspend": False}}},
                             namespace="default")
                resumed = True
            if states and states[-1] == "Succeeded":
                break

    assert "Suspended" in states, states
    assert states[-1] == "Succeeded", states
    assert "Running" in states, states  # seen while it ran, before it ended
