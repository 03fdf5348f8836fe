"""Base64 values of `[]byte` fields (Secret data, ConfigMap binaryData), read as Go reads them.

kube-apiserver decodes these with Go's `base64.StdEncoding`: padded standard
base64, line breaks skipped, anything else an error naming the byte where it
stopped. The server stores the canonical encoding of the decoded bytes (what
Go writes back), so every size limit counts decoded bytes.
"""

from __future__ import annotations

import base64

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")
_PAD = ord("=")


class Base64Error(ValueError):
    """A value Go's decoder refuses, worded as its `CorruptInputError`."""


def decode(text: str) -> bytes:
    """The bytes a base64 value stands for; Base64Error where Go's decoder would fail."""
    data = text.encode()
    position = _corrupt_at(data)
    if position is not None:
        raise Base64Error(f"illegal base64 data at input byte {position}")
    return base64.b64decode(bytes(b for b in data if b not in _NEWLINES))


def encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def decoded_size(canonical: str) -> int:
    """How many bytes a canonical (padded, unbroken) base64 value decodes to."""
    return len(canonical) // 4 * 3 - canonical[-2:].count("=")


def _corrupt_at(data: bytes) -> int | None:
    """The offset Go's `StdEncoding.Decode` reports as corrupt, or None when it decodes."""
    at = 0
    while at < len(data):
        seen = 0  # characters of the current four-character quantum, line breaks excluded
        while seen < 4:
            if at == len(data):
                return at - seen if seen else None
            byte = data[at]
            at += 1
            if byte in _ALPHABET:
                seen += 1
            elif byte not in _NEWLINES:
                return _after_padding(data, at, seen) if byte == _PAD and seen >= 2 else at - 1
    return None


def _after_padding(data: bytes, at: int, seen: int) -> int | None:
    """Padding ends the input: "xx==" needs its second "=", and only line breaks may follow."""
    if seen == 2:
        at = _skip_newlines(data, at)
        if at == len(data):
            return at
        if data[at] != _PAD:
            return at - 1
        at += 1
    at = _skip_newlines(data, at)
    return at if at < len(data) else None


def _skip_newlines(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in _NEWLINES:
        at += 1
    return at
