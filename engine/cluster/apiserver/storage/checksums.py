"""A CRC-32C on every stored line, so a flipped byte stops the start instead of loading.

A damaged byte inside a JSON string still parses: without a checksum the
damaged object would load, and the start-up compaction would copy it into the
new snapshot, erasing the evidence. Each line of the snapshot and journal (a
JSON object) therefore ends with `"crc":N`, the CRC-32C (Castagnoli, as etcd's
WAL uses) of the line written without that field. The field is last, so it is
found with one search from the end, whatever the object holds.
"""

from __future__ import annotations

import re

from crc32c import crc32c

SEALED = re.compile(rb',"crc":(\d{1,10})\}\s*$')
"""The checksum field at the end of a sealed line."""


class ChecksumMismatchError(ValueError):
    """A sealed line whose bytes are not the ones its checksum was computed over."""


def seal(line: bytes) -> bytes:
    """`line` (one JSON object, no newline) with its checksum as a last field."""
    return line[:-1] + b',"crc":%d}' % crc32c(line)


def unseal(line: bytes) -> bytes | None:
    """The line as it was before `seal`, once its checksum matches; None for a line without
    one (written before lines were sealed). Raises ChecksumMismatchError."""
    found = SEALED.search(line)
    if found is None:
        return None
    original = line[: found.start()] + b"}"
    if crc32c(original) != int(found[1]):
        raise ChecksumMismatchError("checksum mismatch")
    return original
