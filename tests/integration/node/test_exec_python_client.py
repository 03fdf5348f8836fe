"""Exec with the official Python client's `stream()` against the embedded server and a process
node: the client sends stdin and terminal sizes as WebSocket text frames (`chr(0) + data`),
which kube-apiserver reads as it reads binary ones, so a command reads what was written."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes.stream import stream
from kubernetes.stream.ws_client import WSClient

from tests.integration.node.conftest import NS, Cluster, pod
from tests.polling import eventually

SLEEPER = {"name": "main", "image": "busybox", "command": ["sh", "-c", "exec sleep 3600"]}


def _running(cluster: Cluster, name: str) -> None:
    cluster.create(pod(name, SLEEPER))
    eventually(lambda: "running" in cluster.container(name).get("state", {}), timeout=30)


@contextmanager
def _exec(cluster: Cluster, name: str, command: list[str], **streams: Any
          ) -> Iterator[WSClient]:
    client: WSClient = stream(cluster.core.connect_get_namespaced_pod_exec, name, NS,
                              command=command, stdout=True, _preload_content=False, **streams)
    try:
        yield client
    finally:
        client.close()


def _stdout_until(client: WSClient, wanted: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    seen = ""
    while wanted not in seen:
        assert time.monotonic() < deadline, f"no {wanted!r} on stdout, only {seen!r}"
        seen += client.read_stdout(timeout=1)
    return seen


def _exit_code(client: WSClient) -> int | None:
    client.run_forever(timeout=20)
    code: int | None = client.returncode
    return code


def test_what_the_client_writes_to_stdin_is_what_cat_reads(processes: Cluster) -> None:
    _running(processes, "reader")
    text = "hello in a text frame, ünïcödé ✓\n"
    with _exec(processes, "reader", ["cat"], stdin=True, stderr=True, tty=False) as client:
        client.write_stdin(text)
        assert _stdout_until(client, text) == text
        client.write_stdin(b"and binary\n")  # bytes go as a binary frame: both are read
        assert _stdout_until(client, "and binary\n") == "and binary\n"
        client.close_channel(0)  # v5's end of input: cat ends, with 0
        assert _exit_code(client) == 0


def test_a_terminal_takes_its_size_from_a_text_frame(processes: Cluster) -> None:
    _running(processes, "sized")
    size = json.dumps({"Width": 101, "Height": 33})
    with _exec(processes, "sized", ["sh", "-c", "read line; stty size"], stdin=True,
               tty=True) as client:
        client.write_channel(4, size)
        client.write_stdin("go\n")
        assert "33 101" in _stdout_until(client, "33 101")
        assert _exit_code(client) == 0
