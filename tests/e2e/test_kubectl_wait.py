"""kubectl wait for a condition set through the status subresource, and for deletion."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import configmap, widget

pytestmark = pytest.mark.e2e

READY = '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Built"}]}}'


def _later(seconds: float, action: Callable[[], object]) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_wait_for_a_condition_set_later_through_status(kubectl: Kubectl, widget_crd: str) -> None:
    kubectl.apply(widget("slow"))
    setter = _later(
        1.5,
        lambda: kubectl(
            "patch", "widget", "slow", "--subresource=status", "--type=merge", "-p", READY
        ),
    )
    out = kubectl(
        "wait", "--for=condition=Ready", "widget/slow", "--timeout=30s", timeout=60
    ).stdout
    setter.join(timeout=30)
    assert "widget.e2e.jobmachine.dev/slow condition met" in out


def test_status_is_only_written_through_the_subresource(kubectl: Kubectl, widget_crd: str) -> None:
    kubectl.apply(widget("guarded"))
    kubectl("patch", "widget", "guarded", "--type=merge", "-p", READY)
    assert "status" not in kubectl.get_json("widget", "guarded")
    result = kubectl.run("wait", "--for=condition=Ready", "widget/guarded", "--timeout=2s")
    assert result.returncode != 0
    assert "timed out" in result.stderr


def test_wait_for_delete(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("doomed", {"a": "1"}))
    deleter = _later(1.5, lambda: kubectl("delete", "cm", "doomed", "--timeout=30s"))
    out = kubectl("wait", "--for=delete", "configmap/doomed", "--timeout=30s", timeout=60).stdout
    deleter.join(timeout=30)
    assert "configmap/doomed condition met" in out
