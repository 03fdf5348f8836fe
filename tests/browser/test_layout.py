"""The web view in headless Chromium on a desktop (1440x900) and a phone (390x844): what a
reader sees is true, readable and fits.

One local cluster in process mode runs three PyTorchJobs from start to end: one that
fails while its Master still runs (examples/pytorch-fails.yaml: the clean-pod policy
deletes the Master's pod), one that succeeds, and one whose worker prints a line every
tenth of a second for a while. On both screens: the page never scrolls sideways, the
machine's text is at least 11 px at the default zoom, a log box keeps where the user
scrolled it while lines are appended, and a finished job shows no replica `Running`
without a live pod. On the phone the picture opens centred on the job's current state and
stays there while the stream redraws it.

With JOBMACHINE_WEB_VIEW_SCREENSHOTS=DIR the pages' screenshots are written there
(docs/images/web-view-*.png are made so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import Page

from engine.app.up import UpOptions, running_local_cluster
from engine.app.web import RunningWebView, WebOptions, serving_web_view
from engine.settings import EngineSettings
from tests.browser.chromium import NEEDS_CHROMIUM, WAIT_MS, chromium_page
from tests.integration.app.support import job_status, wait_until, workers_job
from tests.kinds import PYTORCHJOBS

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS_ENV = "JOBMACHINE_WEB_VIEW_SCREENSHOTS"
SCREENS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
CHATTY = "chatty"
SUCCEEDS = "pytorch-succeeds"
FAILS = "pytorch-fails"
MIN_TEXT_PX = 11

pytestmark = NEEDS_CHROMIUM

# The smallest text of the machine's picture as drawn: font size in the SVG's units times
# the drawn size of one unit.
SMALLEST_TEXT_PX = """() => {
  const svg = document.querySelector('#machine .picture svg');
  const unit = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const sizes = [...svg.querySelectorAll('text')]
    .map((t) => parseFloat(t.getAttribute('font-size')));
  return Math.min(...sizes) * unit;
}"""
PAGE_OVERFLOW_PX = ("() => document.documentElement.scrollWidth - "
                    "document.documentElement.clientWidth")


def _chatty() -> dict[str, Any]:
    job = workers_job(CHATTY, workers=1, annotations={})
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "command"] = ["python3", "-c", (
            "import time\nfor n in range(3000):\n    print(f'step {n}: loss {1 / (n + 1):.4f}', "
            "flush=True)\n    time.sleep(0.1)\n")]
    return job


def _example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / "examples" / f"{name}.yaml").read_text())
    return loaded


@pytest.fixture(scope="module")
def viewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningWebView, str]]:
    home = tmp_path_factory.mktemp("layout")
    settings = EngineSettings()
    options = UpOptions(data_dir=home / "data", port=0, node_mode="process", settings=settings)
    with running_local_cluster(options) as cluster, serving_web_view(
            cluster.client, WebOptions(system_namespace=settings.system_namespace)) as view:
        for job in (_example(FAILS), _example(SUCCEEDS), _chatty()):
            cluster.client.create(PYTORCHJOBS, job, "default")
        for name, state in ((FAILS, "Failed"), (SUCCEEDS, "Succeeded")):
            wait_until(lambda name=name: job_status(cluster.client, name).get("phase"),
                       lambda seen, state=state: seen == state, what=f"{name} {state}")
        yield view, cluster.server.token


@pytest.fixture(params=list(SCREENS))
def screen(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def page(tmp_path: Path, screen: str, viewed: tuple[RunningWebView, str]) -> Iterator[Page]:
    view, token = viewed
    with chromium_page(tmp_path / "profile", viewport=SCREENS[screen],
                       is_mobile=screen == "phone", has_touch=screen == "phone") as page:
        page.goto(view.login_link(token))
        yield page


def _job_page(page: Page, view: RunningWebView, name: str) -> None:
    page.goto(f"{view.url}/jobs/default/pytorchjobs.kubeflow.org/{name}")
    page.wait_for_selector("#live[data-state=on]", timeout=WAIT_MS)
    page.wait_for_selector("#machine .picture svg", timeout=WAIT_MS)


def _screenshot(page: Page, name: str, screen: str) -> None:
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder, f"web-view-{name}-{screen}.png").write_bytes(page.screenshot())


def test_the_list_fits_the_screen_with_counts_and_strong_states(
    page: Page, viewed: tuple[RunningWebView, str], screen: str,
) -> None:
    page.wait_for_selector("#live[data-state=on]", timeout=WAIT_MS)
    assert page.evaluate(PAGE_OVERFLOW_PX) <= 0
    assert "All 3" in (page.text_content("#counts") or "")
    failed = page.locator('#jobs .state[data-state="Failed"]')
    assert failed.evaluate("e => getComputedStyle(e).color") == "rgb(255, 255, 255)"
    assert page.locator("#jobs time.age").count() == 3
    _screenshot(page, "jobs", screen)
    page.select_option("form.filters select[name=state]", "Failed")
    page.wait_for_url("**/?state=Failed", timeout=WAIT_MS)
    assert page.locator("#jobs tbody tr").count() == 1


def test_a_job_page_fits_the_screen_and_its_picture_reads_at_the_default_zoom(
    page: Page, viewed: tuple[RunningWebView, str], screen: str,
) -> None:
    _job_page(page, viewed[0], FAILS)
    assert page.evaluate(PAGE_OVERFLOW_PX) <= 0
    assert page.evaluate(SMALLEST_TEXT_PX) >= MIN_TEXT_PX
    # on every screen the picture comes before the tables
    picture = page.locator("#machine").bounding_box()
    replicas = page.locator("#replicas").bounding_box()
    assert picture is not None and replicas is not None and picture["y"] < replicas["y"]
    page.click(".machine .tools button[data-zoom=in]")
    assert page.evaluate(SMALLEST_TEXT_PX) > MIN_TEXT_PX
    _screenshot(page, "failed-job", screen)


# Where the job's current state is drawn, against the picture's box: how far its centre is
# from the box's centre on each axis, unless the box is scrolled as far as it goes that way,
# and whether it is wholly inside the box.
CURRENT_IN_VIEW = """() => {
  const picture = document.querySelector('#machine .picture');
  const box = picture.getBoundingClientRect();
  const at = document.querySelector('#machine g.current[data-current="job"]')
    .getBoundingClientRect();
  const off = (centre, middle, scrolled, most) =>
    scrolled <= 0 || scrolled >= most - 1 ? 0 : Math.abs(centre - middle);
  return {
    x: off(at.left + at.width / 2, box.left + box.width / 2, picture.scrollLeft,
           picture.scrollWidth - picture.clientWidth),
    y: off(at.top + at.height / 2, box.top + box.height / 2, picture.scrollTop,
           picture.scrollHeight - picture.clientHeight),
    inside: at.left >= box.left && at.right <= box.right && at.top >= box.top
            && at.bottom <= box.bottom,
    scrolled: [picture.scrollLeft, picture.scrollTop],
    wider: picture.scrollWidth > picture.clientWidth};
}"""


def test_the_picture_opens_centred_on_the_jobs_current_state_on_a_phone(
    tmp_path: Path, viewed: tuple[RunningWebView, str],
) -> None:
    view, token = viewed
    with chromium_page(tmp_path / "profile", viewport=SCREENS["phone"], is_mobile=True,
                       has_touch=True) as page:
        page.goto(view.login_link(token))
        _job_page(page, view, FAILS)
        where = page.evaluate(CURRENT_IN_VIEW)
        # The picture is wider than a phone: it opens where the job is (Failed, at the
        # bottom of the job machine), not at its top-left corner.
        assert where["wider"] and where["scrolled"] != [0, 0], where
        assert where["inside"], where
        assert where["x"] <= 2 and where["y"] <= 2, where
        # the stream's updates redraw the picture: the view stays where it opened
        page.wait_for_timeout(3000)
        assert page.evaluate(CURRENT_IN_VIEW) == where


def test_a_finished_job_shows_no_replica_running_without_a_live_pod(
    page: Page, viewed: tuple[RunningWebView, str],
) -> None:
    _job_page(page, viewed[0], FAILS)
    rows = page.locator("#replicas tbody tr").all()
    shown = {row.get_attribute("data-replica"): (row.locator(".state").text_content(),
                                                 row.locator("td").nth(4).text_content())
             for row in rows}
    assert shown["Master-0"][0] == "Running, stopped at job end (pod deleted)", shown
    assert shown["Worker-0"][0] == "Failed", shown
    for state, phase in shown.values():
        assert state != "Running" or phase == "Running", shown


def test_a_log_box_keeps_the_users_scroll_position_while_lines_are_appended(
    page: Page, viewed: tuple[RunningWebView, str], screen: str,
) -> None:
    _job_page(page, viewed[0], CHATTY)
    box = page.locator('#logs .log[data-pod="chatty-worker-0"] pre.lines')
    box.wait_for(timeout=WAIT_MS)
    # following: the box sticks to the bottom as lines come
    page.wait_for_function("""() => {
      const pre = document.querySelector('#logs pre.lines');
      return pre && pre.textContent.split('\\n').length > 60;
    }""", timeout=WAIT_MS)
    assert box.evaluate("p => p.scrollTop + p.clientHeight >= p.scrollHeight - 4")
    # the user scrolls up to a line; more lines come; the same line stays in view
    box.evaluate("p => { p.scrollTop = 40; p.dispatchEvent(new Event('scroll')); }")
    before = (box.text_content() or "").splitlines()
    page.wait_for_function(f"""() => document.querySelector('#logs pre.lines')
      .textContent.split('\\n').length > {len(before) + 10}""", timeout=WAIT_MS)
    assert box.evaluate("p => p.scrollTop") == 40
    after = (box.text_content() or "").splitlines()
    assert after[:len(before)] == before  # appended: what was shown is still there, in place
    # search within the box
    page.fill('#logs .log[data-pod="chatty-worker-0"] input.find', before[5])
    assert (box.text_content() or "").splitlines() == [before[5]]
    _screenshot(page, "logs", screen)
