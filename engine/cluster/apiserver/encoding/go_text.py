"""Go's `strconv.Quote` (`%q`), for the texts the server writes as Go would.

Warning headers, Pod Security messages and the downward API's annotation files
all quote values as kube-apiserver and the kubelet do, so control characters a
client sent never break a header or a line, and messages read word for word
like upstream's.
"""

from __future__ import annotations

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def go_quote(value: str) -> str:
    """`value` double-quoted with Go's escapes; printable Unicode is kept as it is."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
