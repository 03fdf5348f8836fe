"""What `jobmachine apiserver` logs never holds a credential or a Secret's data.

A real server process handles a Secret, a ServiceAccount token and requests
that fail (refused, malformed, unknown), at the most talkative level; its whole
log is then searched for every credential and secret value it saw.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

_URL = re.compile(r"serving at (\S+)")
SECRET_VALUE = "pa55-Zq8vXw3-never-logged"
STRING_DATA_VALUE = "string-data-Kp2m-never-logged"


def _started(log: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not _URL.search(log.read_text(errors="replace")):
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {log.read_text()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the server did not start: {log.read_text()}")
        time.sleep(0.1)


def _exercise(core: client.CoreV1Api) -> list[str]:
    """Requests that carry secrets, some of them refused; the credentials seen, returned."""
    core.create_namespaced_secret("default", client.V1Secret(
        metadata=client.V1ObjectMeta(name="db"),
        data={"password": base64.b64encode(SECRET_VALUE.encode()).decode()},
        string_data={"user": STRING_DATA_VALUE},
    ))
    refusals = [
        lambda: core.create_namespaced_secret("default", {"apiVersion": "v1", "kind": "Secret",
                                              "metadata": {"name": "db"},
                                              "data": {"password": "not base64 " + SECRET_VALUE}}),
        lambda: core.patch_namespaced_secret("db", "default",
                                             [{"op": "replace", "path": "/data/x",
                                               "value": SECRET_VALUE}]),
        lambda: core.patch_namespaced_secret("db", "default",
                                             [{"op": "test", "path": "/data/password",
                                               "value": STRING_DATA_VALUE}]),
    ]
    for refused in refusals:
        with pytest.raises(ApiException):
            refused()
    token = core.create_namespaced_service_account_token("default", "default", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}}).status.token
    robot = client.Configuration()
    robot.host = core.api_client.configuration.host
    robot.ssl_ca_cert = core.api_client.configuration.ssl_ca_cert
    robot.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(robot) as api, pytest.raises(ApiException) as forbidden:
        client.CoreV1Api(api).read_namespaced_secret("db", "default")
    assert forbidden.value.status == 403
    forged = client.Configuration()
    forged.host, forged.ssl_ca_cert = robot.host, robot.ssl_ca_cert
    forged.api_key = {"authorization": f"Bearer {token}x"}
    with client.ApiClient(forged) as api, pytest.raises(ApiException) as refused:
        client.CoreV1Api(api).list_namespaced_secret("default")
    assert refused.value.status == 401
    return [token]


def test_no_token_or_secret_data_reaches_the_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    data_dir = tmp_path / "data"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "apiserver", "--port", "0",
             "--data-dir", str(data_dir)],
            stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "JOBMACHINE_LOG_LEVEL": "DEBUG"},
        )
        try:
            _started(log, process)
            api = config.new_client_from_config(config_file=str(data_dir / "kubeconfig"))
            try:
                seen = _exercise(client.CoreV1Api(api))
                admin = (data_dir / "token").read_text().strip()
            finally:
                api.close()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    text = log.read_text(errors="replace")
    assert "DEBUG" in text, "the server logged at DEBUG, so everything it logs was searched"
    # In the project's format (as `run` and `up` log), not loguru's default `| INFO     |`.
    assert re.search(r"^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO) ", text, re.MULTILINE), text[:500]
    assert " | DEBUG " not in text and " | INFO " not in text
    secrets = [SECRET_VALUE, STRING_DATA_VALUE,
               base64.b64encode(SECRET_VALUE.encode()).decode(), admin, *seen]
    for secret in secrets:
        assert secret not in text, f"the log holds a secret: {secret[:12]}..."
