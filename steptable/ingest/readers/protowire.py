"""Protobuf wire format: the pieces every record reader's decoder shares (stdlib only).

Each format's messages are decoded in its own module (:mod:`.wandbwire`, :mod:`.tbwire`), for exactly the fields its
reader needs; other fields are skipped by their wire type, as protobuf does. Malformed bytes raise
:class:`WireError`.
"""

from __future__ import annotations

from typing import Any


class WireError(ValueError):
    """Bytes that are not the message they should be."""


def varint(buf: bytes, i: int) -> tuple[int, int]:
    """(value, next offset) of the varint at ``buf[i]``."""
    b = buf[i]
    if b < 0x80:
        return b, i + 1
    x, shift = b & 0x7F, 7
    while True:
        i += 1
        if shift > 63:
            raise WireError("varint longer than 10 bytes")
        b = buf[i]
        x |= (b & 0x7F) << shift
        if b < 0x80:
            return x, i + 1
        shift += 7


def skip(buf: bytes, i: int, wire: int) -> int:
    """The offset past a field's value of wire type ``wire`` that starts at ``i``."""
    if wire == 0:
        return varint(buf, i)[1]
    if wire == 2:
        n, i = varint(buf, i)
        return i + n
    if wire == 1:
        return i + 8
    if wire == 5:
        return i + 4
    raise WireError(f"wire type {wire} (groups) not expected")


def fields(buf: bytes, i: int, end: int) -> Any:
    """(field number, wire type, value start, value end) of each field in ``buf[i:end]``; a length-delimited
    value's start and end bound its bytes, a varint's start is its offset (decode it with :func:`varint`)."""
    while i < end:
        key, i = varint(buf, i)
        wire, num = key & 7, key >> 3
        if wire == 2:
            n, i = varint(buf, i)
            j = i + n
        else:
            j = skip(buf, i, wire)
        if j > end:
            raise WireError("field runs past its message")
        yield num, wire, i, j
        i = j


def signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x
