"""One exec session over a real WebSocket, with a local command in place of a container (no
API server, no node): what the client receives on each channel, for v5 and v4."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from engine.cluster.apiserver.exec.channels import V4_PROTOCOL, V5_PROTOCOL, TerminalSize
from engine.cluster.apiserver.exec.entry import Entry
from engine.cluster.apiserver.exec.process import (
    ExecProcess,
    Streams,
    _TerminalOutput,
    read_chunk,
    start,
)
from engine.cluster.apiserver.exec.session import Session, StartError
from tests.processes import alive

Received = list[tuple[int, bytes]]
Client = Callable[[aiohttp.ClientWebSocketResponse, Received], Awaitable[None]]


def _session(command: Sequence[str] | None, streams: Streams, client: Client,
             protocol: str = V5_PROTOCOL, failure: dict[str, Any] | None = None
             ) -> Received:
    """Serve one session running `command` (or failing to start with `failure`), let `client`
    talk to it (seeing what came so far), and return every (channel, bytes) message the
    client received, in order."""
    received: Received = []
    ended = asyncio.Event()

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=(protocol,))
        await ws.prepare(request)

        async def begin(size: TerminalSize | None) -> ExecProcess:
            if failure is not None:
                raise StartError(failure)
            assert command is not None
            return await start(Entry([], dict(os.environ)), command, streams, size)

        try:
            await Session(ws, protocol, streams).run(begin)
        finally:
            ended.set()
        return ws

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/exec", handle)
        async with TestServer(app) as server, aiohttp.ClientSession() as http, \
                http.ws_connect(server.make_url("/exec"), protocols=(protocol,)) as ws:
            reading = asyncio.create_task(_read_all(ws, received))
            await client(ws, received)
            await asyncio.wait_for(reading, 20)
            await asyncio.wait_for(ended.wait(), 20)

    asyncio.run(main())
    return received


async def _read_all(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
    async for message in ws:
        if message.type == aiohttp.WSMsgType.BINARY:
            received.append((message.data[0], message.data[1:]))


async def _nothing(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
    return None


async def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "the command did not get there"
        await asyncio.sleep(0.02)


def _on(received: Received, channel: int) -> bytes:
    return b"".join(data for number, data in received if number == channel)


def _status(received: Received) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(_on(received, 3))
    return decoded


OUTPUTS = Streams(stdin=False, stdout=True, stderr=True, tty=False)


def test_output_comes_on_its_channels_after_an_empty_first_message_then_success() -> None:
    received = _session(["sh", "-c", "echo out; echo err >&2"], OUTPUTS, _nothing)
    assert received[0] == (1, b"")
    assert (_on(received, 1), _on(received, 2)) == (b"out\n", b"err\n")
    assert received[-1][0] == 3
    assert _status(received) == {"metadata": {}, "status": "Success"}


def test_an_exit_code_ends_the_session_as_a_non_zero_exit_code_status() -> None:
    received = _session(["sh", "-c", "exit 3"], OUTPUTS, _nothing)
    status = _status(received)
    assert (status["status"], status["reason"]) == ("Failure", "NonZeroExitCode")
    assert status["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}


def test_a_death_by_signal_is_128_plus_the_signal() -> None:
    received = _session(["sh", "-c", "kill -9 $$"], OUTPUTS, _nothing)
    assert _status(received)["details"]["causes"][0]["message"] == "137"


def test_without_stdout_the_first_message_is_on_stderr_and_stdout_is_not_sent() -> None:
    streams = Streams(stdin=False, stdout=False, stderr=True, tty=False)
    received = _session(["sh", "-c", "echo out; echo err >&2"], streams, _nothing)
    assert received[0] == (2, b"")
    assert (_on(received, 1), _on(received, 2)) == (b"", b"err\n")


def test_a_command_that_cannot_start_gets_the_failures_status() -> None:
    failure = {"metadata": {}, "status": "Failure", "message": "no", "reason": "BadRequest",
               "code": 400}
    received = _session(None, OUTPUTS, _nothing, failure=failure)
    assert received == [(1, b""), (3, json.dumps(failure, separators=(",", ":")).encode())]


INPUT = Streams(stdin=True, stdout=True, stderr=False, tty=False)


def test_v5_input_ends_with_the_close_signal() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_bytes(b"\x00hello ")
        await ws.send_bytes(b"\x00world\n")
        await ws.send_bytes(b"\xff\x00")

    received = _session(["sh", "-c", "cat; echo end"], INPUT, client)
    assert _on(received, 1) == b"hello world\nend\n"
    assert _status(received)["status"] == "Success"


def test_v4_input_has_no_end_but_the_command_may_stop_reading() -> None:
    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_bytes(b"\x00first line\nsecond\n")
        await ws.send_bytes(b"\xff\x00")  # not a close signal in v4: ignored

    received = _session(["sh", "-c", "head -n 1"], INPUT, client, protocol=V4_PROTOCOL)
    assert _on(received, 1) == b"first line\n"
    assert _status(received)["status"] == "Success"


def test_a_terminal_has_the_clients_first_size_and_follows_resizes() -> None:
    streams = Streams(stdin=True, stdout=True, stderr=False, tty=True)

    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await ws.send_bytes(b'\x04{"Width":101,"Height":33}\n')
        await _until(lambda: b"33 101" in _on(received, 1))
        await ws.send_bytes(b'\x04{"Width":90,"Height":20}\n')
        await ws.send_bytes(b"\x00go\n")

    received = _session(["sh", "-c", "tty; stty size; read a; stty size"], streams, client)
    lines = _on(received, 1).replace(b"\r", b"").decode().splitlines()
    assert lines[0].startswith("/dev/pts/")
    assert lines[1:] == ["33 101", "go", "20 90"]  # "go" is the terminal's echo
    assert _on(received, 2) == b""
    assert _status(received)["status"] == "Success"


def test_a_terminal_session_sends_nothing_before_the_clients_first_size() -> None:
    """client-go reads before it has made its streams and drops (logging `Unknown stream
    id 1`) what comes earlier; its first size says they exist, so the empty first message
    waits for it."""
    streams = Streams(stdin=True, stdout=True, stderr=False, tty=True)
    before: Received = []

    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await asyncio.sleep(0.5)
        before.extend(received)
        await ws.send_bytes(b'\x04{"Width":80,"Height":24}\n')

    received = _session(["sh", "-c", "stty size"], streams, client)
    assert before == []
    assert received[0] == (1, b"")
    assert _on(received, 1).replace(b"\r", b"") == b"24 80\n"


def test_a_client_that_leaves_kills_the_command_and_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"

    def started() -> list[int]:
        return [int(pid) for pid in pids.read_text().split()] if pids.exists() else []

    async def client(ws: aiohttp.ClientWebSocketResponse, received: Received) -> None:
        await _until(lambda: len(started()) == 2)
        await ws.close()
        await _until(lambda: not any(alive(pid) for pid in started()))

    _session(["sh", "-c", f"sleep 300 & echo $! $$ > {pids}.new; mv {pids}.new {pids}; wait"],
             OUTPUTS, client)
    assert len(started()) == 2


def test_a_terminals_last_output_is_read_before_its_end() -> None:
    """A terminal whose command has ended reads as an I/O error; output the command wrote
    just before is still buffered and must be read first (a quick `stty size` lost its
    line whenever its end came before the session read it)."""

    async def read_all() -> list[bytes]:
        reader = asyncio.StreamReader()
        protocol = _TerminalOutput(reader)
        protocol.data_received(b"24 80\r\n")
        protocol.connection_lost(OSError(errno.EIO, "Input/output error"))
        return [await read_chunk(reader), await read_chunk(reader)]

    assert asyncio.run(read_all()) == [b"24 80\r\n", b""]
