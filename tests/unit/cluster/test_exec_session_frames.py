"""One exec session fed the way the official Python client feeds it (text frames), and the
close signals kube-apiserver's wsstream follows or hangs up at, over a real WebSocket with a
local command in place of a container."""

from __future__ import annotations

import aiohttp

from engine.cluster.apiserver.exec.channels import V4_PROTOCOL
from engine.cluster.apiserver.exec.process import Streams
from tests.unit.cluster.test_exec_session import Received, _on, _session, _status, _until

INPUT = Streams(stdin=True, stdout=True, stderr=False, tty=False)
TERMINAL = Streams(stdin=True, stdout=True, stderr=False, tty=True)


def test_stdin_in_text_frames_reaches_the_command() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_str("\x00héllo ")
        await ws.send_bytes(b"\x00world\n")
        await ws.send_bytes(b"\xff\x00")

    received = _session(["sh", "-c", "cat; echo end"], INPUT, client)
    assert _on(received, 1) == "héllo world\nend\n".encode()
    assert _status(received)["status"] == "Success"


def test_v4_reads_text_frames_too() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_str("\x00first line\nsecond\n")

    received = _session(["sh", "-c", "head -n 1"], INPUT, client, protocol=V4_PROTOCOL)
    assert _on(received, 1) == b"first line\n"


def test_a_terminal_is_resized_by_text_frames_until_the_channel_is_closed() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_str('\x04{"Width":101,"Height":33}')
        await _until(lambda: b"33 101" in _on(received, 1))
        await ws.send_bytes(b"\xff\x04")  # the resize channel closed: later sizes are dropped
        await ws.send_str('\x04{"Width":90,"Height":20}')
        await ws.send_str("\x00go\n")

    received = _session(["sh", "-c", "stty size; read a; stty size"], TERMINAL, client)
    lines = _on(received, 1).replace(b"\r", b"").decode().splitlines()
    assert lines == ["33 101", "go", "33 101"]


def test_input_after_the_close_signal_is_dropped_without_holding_up_what_follows() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_str("\x00kept\n")
        await ws.send_bytes(b"\xff\x00")
        for _ in range(40):  # more than the input queue holds
            await ws.send_str("\x00dropped\n")
        await ws.send_bytes(b"\xff\x00")  # a second close is nothing
        await _until(lambda: b"end" in _on(received, 1))
        await ws.send_bytes(b"\xff\x07")  # still read: kube-apiserver hangs up here

    received = _session(["sh", "-c", "cat; echo end; exec sleep 300"], INPUT, client)
    assert _on(received, 1) == b"kept\nend\n"
    assert _on(received, 3) == b""


def test_a_malformed_close_signal_ends_the_session_and_the_command() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await _until(lambda: b"ready" in _on(received, 1))
        await ws.send_bytes(b"\xff\x07")  # no channel 7: kube-apiserver hangs up

    received = _session(["sh", "-c", "echo ready; exec sleep 300"], INPUT, client)
    assert _on(received, 1) == b"ready\n"
    assert _on(received, 3) == b""  # no Status: the connection ended, not the command
