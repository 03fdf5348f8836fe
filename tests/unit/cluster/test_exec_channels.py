"""The exec channel protocol: framing, v5's close signal, terminal sizes and the closing
Status, as client-go's WebSocket executor reads and writes them."""

from __future__ import annotations

import json

import pytest

from engine.cluster.apiserver.exec.channels import (
    V4_PROTOCOL,
    V5_PROTOCOL,
    Closed,
    Data,
    Malformed,
    SizeDecoder,
    TerminalSize,
    exit_status,
    frame,
    internal_error_status,
    negotiate,
    offered_protocols,
    parse,
    status_frame,
    success_status,
)


def test_the_clients_first_served_protocol_wins() -> None:
    assert negotiate(offered_protocols("v5.channel.k8s.io")) == V5_PROTOCOL
    assert negotiate(offered_protocols("v4.channel.k8s.io, v5.channel.k8s.io")) == V4_PROTOCOL
    assert negotiate(offered_protocols("base64.channel.k8s.io,v5.channel.k8s.io")) == V5_PROTOCOL
    assert negotiate(offered_protocols("channel.k8s.io, v3.channel.k8s.io")) is None
    assert negotiate(offered_protocols("")) is None


def test_a_frame_is_the_channel_number_then_the_bytes() -> None:
    assert frame(1, b"out") == b"\x01out"
    assert frame(2, b"") == b"\x02"


@pytest.mark.parametrize("protocol", [V4_PROTOCOL, V5_PROTOCOL])
def test_a_message_is_data_on_its_channel(protocol: str) -> None:
    assert parse(b"\x00hi\n", protocol) == Data(0, b"hi\n")
    assert parse(b"\x04{}", protocol) == Data(4, b"{}")
    assert parse(b"\x00", protocol) == Data(0, b"")
    assert parse(b"", protocol) is None


def test_v5_closes_a_channel_with_255_and_its_number() -> None:
    assert parse(b"\xff\x00", V5_PROTOCOL) == Closed(0)
    assert isinstance(parse(b"\xff", V5_PROTOCOL), Malformed)  # kube-apiserver hangs up


def test_v4_has_no_close_signal() -> None:
    assert parse(b"\xff\x00", V4_PROTOCOL) == Data(255, b"\x00")


def test_terminal_sizes_are_json_values_split_or_joined_anywhere() -> None:
    decoder = SizeDecoder()
    assert decoder.feed(b'{"Width":80,"Height":24}\n') == [TerminalSize(80, 24)]
    assert decoder.feed(b'{"Width":101,') == []
    assert decoder.feed(b'"Height":33}\n{"Width":1,"Height":2}') == [
        TerminalSize(101, 33), TerminalSize(1, 2)]
    assert decoder.feed(b'{"Width":-5,"Height":70000} {"Width":"x"}') == [
        TerminalSize(0, 65535), TerminalSize(0, 0)]


def _status(message: bytes) -> dict[str, object]:
    assert message[0] == 3
    decoded: dict[str, object] = json.loads(message[1:])
    return decoded


def test_success_is_a_status_without_a_code() -> None:
    assert _status(status_frame(success_status())) == {"metadata": {}, "status": "Success"}


def test_an_exit_code_is_a_non_zero_exit_code_failure_with_its_cause() -> None:
    assert _status(status_frame(exit_status(3))) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: command terminated with exit "
                   "code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }


def test_a_node_side_error_is_an_internal_error() -> None:
    status = internal_error_status('unable to upgrade connection: container not found ("main")')
    assert status["message"] == ('Internal error occurred: unable to upgrade connection: '
                                 'container not found ("main")')
    assert (status["reason"], status["code"]) == ("InternalError", 500)
    assert status["details"] == {"causes": [{"message": 'unable to upgrade connection: '
                                                        'container not found ("main")'}]}
