"""One `pods/exec` session over an upgraded WebSocket: the client's input, terminal sizes and
end of input relayed to the command, its output back on the client's channels, and at the
end one Status on the error channel before the WebSocket closes.

The first message is an empty one on the lowest channel the client reads, as kube-apiserver's
stream translator sends to say the connection is up. With a terminal, the command starts once
the client's first terminal size has come (kubectl sends it at once), so the command sees its
size from the start; the empty message waits for that size too. client-go reads the socket
before it has made its streams, and drops (and logs as `Unknown stream id 1`) a message that
comes before them; its first size is sent once they exist. A client that goes away kills the
command.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web
from loguru import logger

from engine.cluster.apiserver.exec.channels import (
    ERROR,
    RESIZE,
    STDERR,
    STDIN,
    STDOUT,
    Closed,
    Data,
    Malformed,
    SizeDecoder,
    TerminalSize,
    exit_status,
    frame,
    parse,
    status_frame,
    success_status,
)
from engine.cluster.apiserver.exec.process import ExecProcess, Streams, read_chunk

Start = Callable[[TerminalSize | None], Awaitable[ExecProcess]]

# How long a terminal session waits for the client's first size before starting anyway.
FIRST_SIZE_WAIT_S = 1.0
# How long the output of an ended command may still take to drain (a process that escaped
# the command's group can hold it open).
OUTPUT_DRAIN_S = 2.0
_INPUT_QUEUE = 16

_log = logger.bind(component="apiserver.exec")


class StartError(Exception):
    """The command could not be started; carries the Status the client gets."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status


class Session:
    """Relays between one WebSocket and one command."""

    def __init__(self, ws: web.WebSocketResponse, protocol: str, streams: Streams) -> None:
        self._ws = ws
        self._protocol = protocol
        self._streams = streams
        self._send_lock = asyncio.Lock()
        self._input: asyncio.Queue[bytes | None] = asyncio.Queue(_INPUT_QUEUE)
        self._sizes = SizeDecoder()
        self._size: TerminalSize | None = None
        self._first_size = asyncio.Event()
        self._closed: set[int] = set()
        self._process: ExecProcess | None = None

    async def run(self, start: Start) -> int | None:
        """Start the command and relay until it ends; its exit code, or None when it did not
        start or the client left first."""
        receiving = asyncio.create_task(self._receive())
        try:
            if self._streams.tty:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._first_size.wait(), FIRST_SIZE_WAIT_S)
            await self._send(self._first_channel(), b"")
            size = self._size
            try:
                self._process = await _started(start(size))
            except StartError as exc:
                await self._send_status(exc.status)
                return None
            if self._size != size and self._size is not None:
                self._process.resize(self._size)  # it changed while the command started
            code = await self._relay(self._process, receiving)
            if code is not None:
                await self._send_status(success_status() if code == 0 else exit_status(code))
            return code
        finally:
            # Killed first: awaiting below may be cut short by a cancellation.
            if self._process is not None:
                self._process.kill()
            receiving.cancel()
            await asyncio.gather(receiving, return_exceptions=True)
            if self._process is not None:
                self._process.close()
            await self._ws.close()

    def _first_channel(self) -> int:
        if self._streams.stdout:
            return STDOUT
        return STDERR if self._streams.stderr else ERROR

    async def _send(self, channel: int, data: bytes) -> None:
        await self._send_message(frame(channel, data))

    async def _send_status(self, status: dict[str, Any]) -> None:
        await self._send_message(status_frame(status))

    async def _send_message(self, message: bytes) -> None:
        """Send unless the client has gone (then the receiving side ends the session)."""
        async with self._send_lock:
            if self._ws.closed:
                return
            try:
                await self._ws.send_bytes(message)
            except ConnectionError:
                _log.debug("the client went away while the command's output was sent")

    async def _relay(self, process: ExecProcess, receiving: asyncio.Task[None]) -> int | None:
        feeding = asyncio.create_task(self._feed(process))
        pumps = [asyncio.create_task(self._pump(channel, reader))
                 for channel, reader in process.outputs.items()]
        waiting = asyncio.create_task(process.wait())
        try:
            await asyncio.wait({waiting, receiving}, return_when=asyncio.FIRST_COMPLETED)
            left = not waiting.done()
            if left:
                _log.debug("the client left; killing the command")
                process.kill()
            code = await waiting  # at once when killed
            if pumps:  # the output read to its end (sent, or dropped once the client left)
                await asyncio.wait(pumps, timeout=OUTPUT_DRAIN_S)
            return None if left else code
        finally:
            for task in (feeding, waiting, *pumps):
                task.cancel()
            await asyncio.gather(feeding, waiting, *pumps, return_exceptions=True)

    async def _receive(self) -> None:
        """Read the client's messages, binary and text alike, until it closes the WebSocket
        or sends a close signal kube-apiserver would stop reading at."""
        async for message in self._ws:
            if message.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                continue
            incoming = parse(message.data, self._protocol)
            if isinstance(incoming, Malformed):
                _log.warning("closing the exec connection: {}", incoming.reason)
                return
            if isinstance(incoming, Closed):
                await self._close(incoming.channel)
            elif isinstance(incoming, Data) and incoming.channel not in self._closed:
                await self._take(incoming)

    async def _close(self, channel: int) -> None:
        """The client's end of a channel is closed; what comes on it later is dropped, and a
        second close is nothing (as a closed pipe is to wsstream)."""
        if channel in self._closed:
            return
        self._closed.add(channel)
        if channel == STDIN:
            await self._input.put(None)

    async def _take(self, incoming: Data) -> None:
        if incoming.channel == STDIN and self._streams.stdin:
            await self._input.put(incoming.data)
        elif incoming.channel == RESIZE:
            for size in self._sizes.feed(incoming.data):
                self._resize(size)

    def _resize(self, size: TerminalSize) -> None:
        self._size = size
        self._first_size.set()
        if self._process is not None:
            self._process.resize(size)

    async def _feed(self, process: ExecProcess) -> None:
        while (data := await self._input.get()) is not None:
            await process.write(data)
        process.close_stdin()

    async def _pump(self, channel: int, reader: asyncio.StreamReader) -> None:
        while chunk := await read_chunk(reader):
            await self._send(channel, chunk)


async def _started(starting: Awaitable[ExecProcess]) -> ExecProcess:
    """The started command; one whose session is cancelled while it starts is killed as soon
    as it has started, instead of being left behind."""
    task = asyncio.ensure_future(starting)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_kill_when_started)
        raise


def _kill_when_started(task: asyncio.Future[ExecProcess]) -> None:
    if not task.cancelled() and task.exception() is None:
        process = task.result()
        process.kill()
        process.close()
