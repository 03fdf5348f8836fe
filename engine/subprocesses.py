"""Stopping a child process of jobmachine's (`up`'s engine and node) the way Kubernetes
stops a container: SIGTERM, its grace to finish what it started, then SIGKILL."""

from __future__ import annotations

import signal
import subprocess

from loguru import logger


def stop_gracefully(process: subprocess.Popen[bytes], grace_s: float, what: str) -> None:
    """SIGTERM `process` (unless it has exited), wait up to `grace_s` seconds, then SIGKILL
    it, saying so: `what` names it in that warning."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        logger.warning(f"{what} did not stop within {grace_s:g}s: killing it")
        process.kill()
        process.wait()
