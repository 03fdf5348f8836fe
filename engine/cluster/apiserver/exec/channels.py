"""The channel protocol of `pods/exec` over WebSocket: framing, the close signal, terminal
sizes and the closing Status (pure).

Every message carries one channel's bytes behind a leading channel number: 0 stdin,
1 stdout, 2 stderr, 3 the error channel (one `metav1.Status` as JSON when the command has
ended; an exit code other than 0 is a `NonZeroExitCode` failure whose `ExitCode` cause holds
it), 4 terminal sizes (JSON `{"Width": W, "Height": H}` values, one after another).
`v5.channel.k8s.io` adds channel 255: the message `[255, N]` closes channel N (stdin's end of
input), which `v4.channel.k8s.io` cannot say. Both are what kube-apiserver's stream translator
and client-go's WebSocket executor speak (apimachinery's `util/remotecommand/constants.go`).
A client's message may come in a binary or a text frame: kube-apiserver's wsstream reads both
as the same bytes (a text frame's UTF-8), and the official Python client sends its input and
terminal sizes as text (`chr(0) + data`), kubectl as binary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

V5_PROTOCOL = "v5.channel.k8s.io"
V4_PROTOCOL = "v4.channel.k8s.io"
PROTOCOLS = (V5_PROTOCOL, V4_PROTOCOL)

STDIN = 0
STDOUT = 1
STDERR = 2
ERROR = 3
RESIZE = 4
CLOSE = 255


def negotiate(offered: Sequence[str]) -> str | None:
    """The first protocol the client offers that is served here, as wsstream picks it."""
    return next((protocol for protocol in offered if protocol in PROTOCOLS), None)


def offered_protocols(header: str) -> list[str]:
    """The subprotocols of a `Sec-WebSocket-Protocol` header, in the client's order."""
    return [part.strip() for part in header.split(",") if part.strip()]


def frame(channel: int, data: bytes) -> bytes:
    return bytes((channel,)) + data


@dataclass(frozen=True)
class Data:
    """Bytes the client sent on a channel."""

    channel: int
    data: bytes


@dataclass(frozen=True)
class Closed:
    """The client closed its end of a channel (v5 only)."""

    channel: int


@dataclass(frozen=True)
class Malformed:
    """A close signal kube-apiserver cannot follow: it stops reading and closes the WebSocket."""

    reason: str


# The channels kube-apiserver's stream translator opens for an exec, whatever the streams.
CHANNELS = 5


def parse(message: bytes | str, protocol: str) -> Data | Closed | Malformed | None:
    """What one message from the client says, from a binary frame (bytes) or a text frame
    (str, read as its UTF-8 bytes, as wsstream does); None for an empty one. Under v4,
    channel 255 is an ordinary (unknown) channel; under v5, a close signal must name exactly
    one of the exec's channels."""
    payload = message.encode() if isinstance(message, str) else message
    if not payload:
        return None
    channel, data = payload[0], payload[1:]
    if channel != CLOSE or protocol != V5_PROTOCOL:
        return Data(channel, data)
    if len(data) != 1:
        return Malformed(f"single channel byte should follow stream close signal, got "
                         f"{len(data)} bytes")
    if data[0] >= CHANNELS:
        return Malformed(f"close is targeted for a channel {data[0]} that is not valid")
    return Closed(data[0])


@dataclass(frozen=True)
class TerminalSize:
    width: int
    height: int


class SizeDecoder:
    """Terminal sizes from the resize channel: a stream of JSON objects that messages may
    split or join anywhere (client-go encodes each with a json.Encoder)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._decoder = json.JSONDecoder()

    def feed(self, data: bytes) -> list[TerminalSize]:
        self._buffer += data.decode("utf-8", errors="replace")
        sizes: list[TerminalSize] = []
        while True:
            text = self._buffer.lstrip()
            if not text:
                self._buffer = ""
                return sizes
            try:
                value, end = self._decoder.raw_decode(text)
            except json.JSONDecodeError:
                self._buffer = text
                return sizes
            self._buffer = text[end:]
            if isinstance(value, dict):
                sizes.append(TerminalSize(_dimension(value.get("Width")),
                                          _dimension(value.get("Height"))))


def _dimension(value: Any) -> int:
    """A size as the terminal takes it (uint16); a value that is not a number is 0."""
    return min(max(value, 0), 0xFFFF) if isinstance(value, int) else 0


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(code: int) -> dict[str, Any]:
    """The Status of a command that exited with `code` (not 0), as kube-apiserver's stream
    translator words it."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: command terminated with "
                   f"exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_error_status(cause: str) -> dict[str, Any]:
    """An error of the node's side (no such container, nothing to run), as kube-apiserver
    reports what the kubelet answered."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {cause}",
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    }


def bad_request_status(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": "BadRequest",
            "code": 400}


def status_frame(status: dict[str, Any]) -> bytes:
    return frame(ERROR, json.dumps(status, separators=(",", ":")).encode())
