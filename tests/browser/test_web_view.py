"""The web view in a real headless Chromium: a job's state changes appear without a reload.

A PyTorchJob whose worker is killed once (exit code 137) and then succeeds, on a local
cluster in simulate mode. The browser opens the login link `up` would print, sees the job
appear in the list, opens its page, and watches: every change reaches the DOM over the
page's server-sent events, the same document all along, and the drawn machine marks the
state the job is in. Debian's `chromium` is driven by Playwright (nothing is downloaded);
the test skips only where that browser is not installed.

With JOBMACHINE_WEB_VIEW_SCREENSHOT=PATH the finished page's screenshot is written there
too (docs/images/web-view.png is made so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from engine.app.up import UpOptions, running_local_cluster
from engine.app.web import RunningWebView, WebOptions, serving_web_view
from engine.kube.client import KubeClient
from engine.settings import EngineSettings
from tests.browser.chromium import NEEDS_CHROMIUM, WAIT_MS, chromium_page
from tests.integration.app.support import ON_PATH_COLOUR, workers_job
from tests.kinds import PYTORCHJOBS

SCREENSHOT_ENV = "JOBMACHINE_WEB_VIEW_SCREENSHOT"
JOB = "browsed"

pytestmark = NEEDS_CHROMIUM

# Records, on every change of the page, the job's state, Worker-0's state and restarts,
# which machine state is drawn as current and how many events are listed: what a user
# would have seen, in order.
RECORDER = """() => {
  window.seen = [];
  window.sameDocument = true;
  const text = (selector) => {
    const found = document.querySelector(selector);
    return found ? found.textContent.trim() : null;
  };
  const record = () => {
    const now = {
      job: text("#summary .state"),
      replica: text('#replicas tr[data-replica="Worker-0"] .state'),
      restarts: text('#replicas tr[data-replica="Worker-0"] td.number'),
      drawn: text('#machine g.node.current[data-current="job"] > title'),
      events: document.querySelectorAll("#events tbody tr").length,
    };
    const last = window.seen[window.seen.length - 1];
    if (!last || JSON.stringify(last) !== JSON.stringify(now)) window.seen.push(now);
  };
  record();
  new MutationObserver(record).observe(document.body, {childList: true, subtree: true});
}"""


def _job() -> dict[str, Any]:
    # Each attempt runs 5 s: the page must open the job and start recording before the
    # first attempt ends, also on a machine busy with other tests.
    job = workers_job(JOB, workers=1, annotations={
        "sim.jobmachine.dev/exit-codes": "137,0", "sim.jobmachine.dev/run-seconds": "5"})
    # The engine's back-off, so the replica's Pending between its two pods lasts to be seen.
    job["spec"]["runPolicy"] = {"backoffLimit": 3, "recreationBackoff": True}
    return job


@pytest.fixture
def viewed(tmp_path: Path) -> Iterator[tuple[KubeClient, RunningWebView, str]]:
    # A back-off long enough that the replica's Restarting state is seen, not skipped.
    settings = EngineSettings(replica_backoff_base_s=1.5)
    options = UpOptions(data_dir=tmp_path / "data", port=0, node_mode="simulate",
                        settings=settings)
    with running_local_cluster(options) as cluster, serving_web_view(
            cluster.client, WebOptions(system_namespace=settings.system_namespace)) as view:
        yield cluster.client, view, cluster.server.token


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    with chromium_page(tmp_path / "profile", viewport={"width": 1400, "height": 1000}) as made:
        yield made


def _in_order(seen: list[str | None], expected: list[str]) -> bool:
    """Whether `expected` appears in `seen` in this order (other values between allowed)."""
    remaining = iter(seen)
    return all(any(value == wanted for value in remaining) for wanted in expected)


def test_a_jobs_state_changes_reach_the_page_live_and_the_machine_marks_the_current_one(
    viewed: tuple[KubeClient, RunningWebView, str], page: Page, tmp_path: Path,
) -> None:
    client, view, token = viewed
    page.goto(view.login_link(token))
    assert page.url == view.url + "/"  # logged in, and the token is out of the address bar
    page.wait_for_selector("#live[data-state=on]", timeout=WAIT_MS)
    assert page.text_content("#jobs") == "No jobs you may list."

    client.create(PYTORCHJOBS, _job(), "default")
    page.click(f"#jobs a:text-is('{JOB}')", timeout=WAIT_MS)  # appeared without a reload
    page.wait_for_selector("#live[data-state=on]", timeout=WAIT_MS)
    page.evaluate(RECORDER)
    page.wait_for_function(
        "() => document.querySelector('#summary .state')?.textContent === 'Succeeded'",
        timeout=WAIT_MS)
    seen: list[dict[str, Any]] = page.evaluate("window.seen")

    assert page.evaluate("window.sameDocument") is True  # never reloaded
    assert _in_order([s["job"] for s in seen], ["Running", "Succeeded"]), seen
    # Restarting lasts only until the failed pod is deleted (too short to be sure of a
    # redraw); its event says it, and the back-off after it is long enough to be seen.
    assert _in_order([s["replica"] for s in seen],
                     ["Running", "Pending", "Running", "Succeeded"]), seen
    assert _in_order([s["restarts"] for s in seen], ["0", "1"]), seen
    events = [s["events"] for s in seen]
    assert events == sorted(events) and len(set(events)) >= 3, seen  # listed as they came
    listed = page.text_content("#events") or ""
    assert "exited with code 137" in listed
    assert "job browsed is restarting because Worker replica(s) failed." in listed
    assert "Worker-0 runs again in pod browsed-worker-0 (restart 1)." in listed
    for state in seen:  # the drawn machine marks the job's state whenever it is known
        if state["drawn"] is not None:
            assert state["drawn"] == f"job/s/{state['job']}", seen
    assert seen[-1]["drawn"] == "job/s/Succeeded", seen
    assert page.text_content("#live") == "live"
    # The path is drawn again as it grows: the current state ends up on it.
    page.wait_for_selector(
        f'#machine g.node.current[data-current="job"] > [stroke="{ON_PATH_COLOUR}"]',
        timeout=WAIT_MS)

    screenshot = page.screenshot()
    (tmp_path / "web-view.png").write_bytes(screenshot)
    if os.environ.get(SCREENSHOT_ENV):
        Path(os.environ[SCREENSHOT_ENV]).write_bytes(screenshot)
