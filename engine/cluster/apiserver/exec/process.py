"""The process of one exec: started inside the container (exec_entry.py) with pipes, or with a
pseudo-terminal as its controlling terminal; its output read, its input written, its terminal
resized, and its process group killed when it ends.

The command runs in a session and process group of its own, so that when it exits (or the
client goes away) whatever it left running is killed with it, as the node kills a
container's group when its main process ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import pty
import shutil
import signal
import struct
import termios
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

from engine.cluster.apiserver.exec.channels import STDERR, STDOUT, TerminalSize
from engine.cluster.apiserver.exec.entry import Entry

_READ_CHUNK = 32 * 1024


@dataclass(frozen=True)
class Streams:
    """Which standard streams the client asked for."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


class Input(Protocol):
    """Where a command's input is written: a pipe's stream writer, or a terminal."""

    def is_closing(self) -> bool: ...

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class ExecProcess:
    """A started command: `outputs` maps channels to what the command writes on them."""

    def __init__(self, process: asyncio.subprocess.Process, *,
                 stdin: Input | None,
                 outputs: dict[int, asyncio.StreamReader], terminal: int | None = None,
                 terminal_output: asyncio.BaseTransport | None = None) -> None:
        self._process = process
        self._stdin = stdin
        self.outputs = outputs
        self._terminal = terminal
        self._terminal_output = terminal_output

    async def write(self, data: bytes) -> None:
        if self._stdin is None or self._stdin.is_closing():
            return
        with contextlib.suppress(OSError):  # the command has closed its input, or ended
            self._stdin.write(data)
            await self._stdin.drain()

    def close_stdin(self) -> None:
        """The end of input. A terminal has no end of input but the one typed (Ctrl-D)."""
        if self._stdin is not None and self._terminal is None:
            self._stdin.close()

    def resize(self, size: TerminalSize) -> None:
        if self._terminal is not None:
            with contextlib.suppress(OSError):
                _set_size(self._terminal, size)

    async def wait(self) -> int:
        """The exit code (128 + N for a death by signal N); what the command left running in
        its group is killed."""
        code = await self._process.wait()
        self.kill()
        return 128 - code if code < 0 else code

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self._process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Release the input and the terminal (once the output has been read)."""
        if self._stdin is not None:
            self._stdin.close()
        if self._terminal_output is not None:
            self._terminal_output.close()
        if self._terminal is not None:
            with contextlib.suppress(OSError):
                os.close(self._terminal)
            self._terminal = None


async def start(entry: Entry, command: Sequence[str], streams: Streams,
                size: TerminalSize | None) -> ExecProcess:
    """Run `command` inside the container; with a terminal of `size` when `streams.tty`."""
    argv = [*entry.prefix, *command]
    try:
        if streams.tty:
            return await _start_on_terminal(entry, argv, size)
        return await _start_with_pipes(entry, argv, streams)
    finally:
        entry.close()


async def _start_with_pipes(entry: Entry, argv: list[str], streams: Streams) -> ExecProcess:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if streams.stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE if streams.stdout else asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE if streams.stderr else asyncio.subprocess.DEVNULL,
        env=entry.env, pass_fds=entry.fds, start_new_session=True, limit=_READ_CHUNK,
    )
    outputs = {channel: reader for channel, reader in
               ((STDOUT, process.stdout), (STDERR, process.stderr)) if reader is not None}
    return ExecProcess(process, stdin=process.stdin, outputs=outputs)


async def _start_on_terminal(entry: Entry, argv: list[str], size: TerminalSize | None
                             ) -> ExecProcess:
    """The command with a new pseudo-terminal as its controlling terminal and its standard
    streams (stderr goes to the terminal too, as with the kubelet): `setsid --ctty` makes
    the session and takes the terminal before entering the container."""
    setsid = shutil.which("setsid")
    if setsid is None:
        raise OSError("setsid (util-linux) is not installed on this machine")
    main, secondary = pty.openpty()
    try:
        if size is not None:
            _set_size(main, size)
        process = await asyncio.create_subprocess_exec(
            setsid, "--ctty", *argv, stdin=secondary, stdout=secondary, stderr=secondary,
            env=entry.env, pass_fds=entry.fds, limit=_READ_CHUNK,
        )
    except BaseException:
        os.close(main)
        raise
    finally:
        os.close(secondary)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_CHUNK)
    output, _ = await loop.connect_read_pipe(lambda: _TerminalOutput(reader),
                                             _file(os.dup(main), "rb"))
    return ExecProcess(process, stdin=_TerminalInput(loop, os.dup(main)),
                       outputs={STDOUT: reader}, terminal=main, terminal_output=output)


class _TerminalInput:
    """What is typed into a terminal: written to its main side as the fd takes it.

    Not a write-pipe transport: uvloop's reads from its fd to notice the other end closing,
    which on a terminal takes the command's output from the terminal's reader.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        os.set_blocking(fd, False)
        self._loop = loop
        self._fd: int | None = fd
        self._pending = bytearray()

    def is_closing(self) -> bool:
        return self._fd is None

    def write(self, data: bytes) -> None:
        """Queue `data`; OSError once the terminal is gone (the command has ended)."""
        self._pending += data
        self._flush()

    async def drain(self) -> None:
        """Wait until the terminal has taken everything queued."""
        while self._pending and self._fd is not None:
            ready = self._loop.create_future()
            self._loop.add_writer(self._fd, ready.set_result, None)
            try:
                await ready
            finally:
                if self._fd is not None:
                    self._loop.remove_writer(self._fd)
            self._flush()

    def close(self) -> None:
        if self._fd is not None:
            self._loop.remove_writer(self._fd)
            os.close(self._fd)
            self._fd = None

    def _flush(self) -> None:
        if self._fd is None:
            raise BrokenPipeError(errno.EPIPE, "the terminal is closed")
        with contextlib.suppress(BlockingIOError):
            while self._pending:
                del self._pending[:os.write(self._fd, self._pending)]


class _TerminalOutput(asyncio.StreamReaderProtocol):
    """A terminal's output: the I/O error its reading ends with once the command's side has
    closed is the end of the output, not a failure.

    Handed on as an error, the reader would raise it at the next read even while output the
    command wrote just before it ended is still buffered: a quick command's output (`stty
    size`) was lost whenever its end came before the session read it.
    """

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, OSError) and exc.errno == errno.EIO:
            exc = None
        super().connection_lost(exc)


def _set_size(terminal: int, size: TerminalSize) -> None:
    """The terminal's size; the kernel tells its foreground process group (SIGWINCH)."""
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0))


def _file(fd: int, mode: str) -> IO[Any]:
    return os.fdopen(fd, mode, buffering=0)


async def read_chunk(reader: asyncio.StreamReader) -> bytes:
    """The next output bytes; b"" at the end, or once the output cannot be read (a
    terminal's end, its I/O error, is made an end by `_TerminalOutput`)."""
    try:
        return await reader.read(_READ_CHUNK)
    except OSError:
        return b""
