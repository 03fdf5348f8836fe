"""The client's exec messages as kube-apiserver's wsstream reads them: a text frame is its
UTF-8 bytes, read exactly as a binary frame is (the official Python client sends stdin and
terminal sizes as text, `chr(0) + data`), and v5's close signal is `[255, N]` with N one of
the exec's five channels, anything else ending the connection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.exec.channels import (
    CHANNELS,
    CLOSE,
    RESIZE,
    STDIN,
    V4_PROTOCOL,
    V5_PROTOCOL,
    Closed,
    Data,
    Malformed,
    SizeDecoder,
    TerminalSize,
    parse,
)

protocols = st.sampled_from((V4_PROTOCOL, V5_PROTOCOL))


@given(text=st.text(), protocol=protocols)
def test_a_text_frame_says_what_its_utf8_bytes_say(text: str, protocol: str) -> None:
    assert parse(text, protocol) == parse(text.encode(), protocol)


@given(data=st.text(), protocol=protocols)
def test_the_python_clients_stdin_is_data_on_channel_0(data: str, protocol: str) -> None:
    assert parse(chr(STDIN) + data, protocol) == Data(STDIN, data.encode())


@given(channel=st.integers(0, 254), data=st.binary(), protocol=protocols)
def test_a_message_is_its_first_byte_then_the_rest(channel: int, data: bytes,
                                                   protocol: str) -> None:
    assert parse(bytes((channel,)) + data, protocol) == Data(channel, data)


@given(channel=st.integers(0, CHANNELS - 1))
def test_v5_closes_any_of_the_exec_channels(channel: int) -> None:
    assert parse(bytes((CLOSE, channel)), V5_PROTOCOL) == Closed(channel)


@given(channel=st.integers(CHANNELS, 255))
def test_v5_closing_a_channel_the_exec_has_not_is_malformed(channel: int) -> None:
    assert isinstance(parse(bytes((CLOSE, channel)), V5_PROTOCOL), Malformed)


@given(rest=st.binary().filter(lambda rest: len(rest) != 1))
def test_v5_close_with_other_than_one_channel_byte_is_malformed(rest: bytes) -> None:
    assert isinstance(parse(bytes((CLOSE,)) + rest, V5_PROTOCOL), Malformed)


@given(data=st.binary())
def test_v4_has_no_close_signal_so_255_is_an_unknown_channel(data: bytes) -> None:
    assert parse(bytes((CLOSE,)) + data, V4_PROTOCOL) == Data(CLOSE, data)


@pytest.mark.parametrize("protocol", [V4_PROTOCOL, V5_PROTOCOL])
def test_an_empty_message_of_either_kind_says_nothing(protocol: str) -> None:
    assert parse("", protocol) is None
    assert parse(b"", protocol) is None


def test_a_close_signal_in_a_text_frame_is_no_close_signal() -> None:
    # chr(255) is two bytes in UTF-8 (c3 bf): wsstream sees channel 0xc3, no close.
    assert parse(chr(CLOSE) + chr(STDIN), V5_PROTOCOL) == Data(0xC3, b"\xbf\x00")


def test_terminal_sizes_in_text_frames_resize() -> None:
    incoming = parse(chr(RESIZE) + '{"Width": 120, "Height": 40}', V5_PROTOCOL)
    assert isinstance(incoming, Data) and incoming.channel == RESIZE
    assert SizeDecoder().feed(incoming.data) == [TerminalSize(120, 40)]
