"""TensorBoard events (``tensorboard/compat/proto``) decoded from the wire (stdlib only): ``Event{wall_time=1,
step=2, summary=5}``, ``Summary{value=1}``, ``Summary.Value{tag=1, simple_value=2, tensor=8}``,
``TensorProto{dtype=1, tensor_shape=2, tensor_content=4, float_val=5, double_val=6, int_val=7, string_val=8,
int64_val=10, bool_val=11, half_val=13}``, ``TensorShapeProto{dim=2}``, ``Dim{size=1}``.

Other fields are skipped by their wire type, as protobuf does. Malformed bytes raise
:class:`~.protowire.WireError`. The tests check these decoders against tensorboard's own classes on files
SummaryWriter wrote.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from steptable.ingest.readers.protowire import fields, signed, varint

_DOUBLE = struct.Struct("<d").unpack_from
_FLOAT = struct.Struct("<f").unpack_from


_PACKED = {5: ("f", 4), 6: ("d", 8), 7: ("i", 0), 10: ("q", 0), 11: ("?", 0), 13: ("e", 0)}
#: tensorflow DataType -> (struct format of one element of tensor_content, the repeated field of its values)
DTYPES = {1: ("<f", 5), 2: ("<d", 6), 3: ("<i", 7), 9: ("<q", 10), 19: ("<e", 13), 10: ("<?", 11), 4: ("<B", 7),
          6: ("<b", 7)}
_DT_STRING = 7


def tb_event(buf: bytes) -> tuple[float, int, list[tuple[str, float | int | bool]]] | None:
    """(wall_time, step, scalar values by tag) of an Event with a summary; None for an event without one."""
    fast = _tb_simple(buf)
    return fast if fast is not None else _tb_event(buf)


def _tb_simple(buf: bytes) -> tuple[float, int, list[tuple[str, float | int | bool]]] | None:
    """The usual scalar event (SummaryWriter.add_scalar: wall_time, step, simple values with short tags), read
    without the general walk; None for any other layout (the general walk reads it)."""
    n = len(buf)
    if n < 12 or buf[0] != 0x09:
        return None
    i, step = 9, 0
    if buf[i] == 0x10:
        step, i = varint(buf, i + 1)
    if i + 2 > n or buf[i] != 0x2A or buf[i + 1] >= 0x80 or i + 2 + buf[i + 1] != n:
        return None
    j = i + 2
    values: list[tuple[str, float | int | bool]] = []
    while j < n:
        if buf[j] != 0x0A or buf[j + 1] >= 0x80 or buf[j + 2] != 0x0A or buf[j + 3] >= 0x80:
            return None
        end = j + 2 + buf[j + 1]
        tag_end = j + 4 + buf[j + 3]
        if tag_end + 5 != end or buf[tag_end] != 0x15:
            return None
        values.append((buf[j + 4 : tag_end].decode("utf-8", "replace"), _FLOAT(buf, tag_end + 1)[0]))
        j = end
    return _DOUBLE(buf, 1)[0], signed(step), values


def _tb_event(buf: bytes) -> tuple[float, int, list[tuple[str, float | int | bool]]] | None:
    head = _event_summary(buf)
    if head is None:
        return None
    wall, step, summary = head
    values = []
    for tag, parts in _summary_values(buf, summary):
        value: float | int | bool | None = None
        for n2, w2, c, d in parts:
            if n2 == 2 and w2 == 5:
                value = _FLOAT(buf, c)[0]
            elif n2 == 8 and w2 == 2:
                value = _tensor_scalar(buf, c, d)
        if value is not None:
            values.append((tag, value))
    return wall, step, values


def tb_texts(buf: bytes) -> tuple[int, list[tuple[str, str]]] | None:
    """(step, text by tag) of an Event whose summary holds string tensors (``SummaryWriter.add_text``: the text
    plugin's DT_STRING tensor; several elements are joined by a blank line); None for one that holds none."""
    head = _event_summary(buf)
    if head is None:
        return None
    _, step, summary = head
    out = []
    for tag, parts in _summary_values(buf, summary):
        strings: list[str] | None = None
        for n2, w2, c, d in parts:
            if n2 == 8 and w2 == 2:
                strings = _strings(buf, c, d)
        if strings:
            out.append((tag, "\n\n".join(strings)))
    return (step, out) if out else None


def _event_summary(buf: bytes) -> tuple[float, int, tuple[int, int]] | None:
    """(wall_time, step, where its summary is) of an Event; None for one without a summary."""
    wall = 0.0
    step = 0
    summary: tuple[int, int] | None = None
    for num, wire, a, b in fields(buf, 0, len(buf)):
        if num == 1 and wire == 1:
            wall = _DOUBLE(buf, a)[0]
        elif num == 2 and wire == 0:
            step = signed(varint(buf, a)[0])
        elif num == 5 and wire == 2:
            summary = (a, b)
    return None if summary is None else (wall, step, summary)


def _summary_values(buf: bytes, summary: tuple[int, int]) -> Iterator[tuple[str, list[tuple[int, int, int, int]]]]:
    """(tag, its other fields) of each ``Summary.Value`` of the summary at ``summary``."""
    for num, wire, a, b in fields(buf, *summary):
        if num != 1 or wire != 2:
            continue
        tag = ""
        parts = []
        for n2, w2, c, d in fields(buf, a, b):
            if n2 == 1 and w2 == 2:
                tag = buf[c:d].decode("utf-8", "replace")
            else:
                parts.append((n2, w2, c, d))
        yield tag, parts


def _strings(buf: bytes, i: int, end: int) -> list[str] | None:
    """The elements of a DT_STRING TensorProto (``string_val``, field 8), else None."""
    dtype = 0
    got = []
    for num, wire, a, b in fields(buf, i, end):
        if num == 1 and wire == 0:
            dtype = varint(buf, a)[0]
        elif num == 8 and wire == 2:
            got.append(buf[a:b].decode("utf-8", "replace"))
    return got if dtype == _DT_STRING else None


def _tensor_scalar(buf: bytes, i: int, end: int) -> float | int | bool | None:
    """The value of a scalar (rank 0, or one element) numeric TensorProto, else None."""
    dtype = 0
    content: bytes | None = None
    vals: dict[int, list[Any]] = {}
    for num, wire, a, b in fields(buf, i, end):
        if num == 1 and wire == 0:
            dtype = varint(buf, a)[0]
        elif num == 2 and wire == 2:
            for n2, w2, c, d in fields(buf, a, b):
                if n2 == 2 and w2 == 2:
                    size = 0  # (a Dim without its size field: size 0)
                    for n3, w3, e, _ in fields(buf, c, d):
                        if n3 == 1 and w3 == 0:
                            size = signed(varint(buf, e)[0])
                    if size != 1:
                        return None
        elif num == 4 and wire == 2:
            content = buf[a:b]
        elif num in _PACKED:
            vals.setdefault(num, []).extend(_repeated(buf, num, wire, a, b))
    spec = DTYPES.get(dtype)
    if spec is None:
        return None
    fmt, field = spec
    if content:
        if len(content) != struct.calcsize(fmt):
            return None
        x: float | int | bool = struct.unpack(fmt, content)[0]
        return x
    got = vals.get(field, [])
    if len(got) != 1:
        return None
    if field == 13:  # half_val holds the float16's bits
        h: float = struct.unpack("<e", struct.pack("<H", got[0] & 0xFFFF))[0]
        return h
    return got[0]  # type: ignore[no-any-return]


def _repeated(buf: bytes, num: int, wire: int, a: int, b: int) -> list[Any]:
    """The values of one occurrence of a repeated scalar field: packed (wire 2) or one value."""
    fmt, width = _PACKED[num]
    if wire == 2 and width:
        return list(struct.unpack(f"<{(b - a) // width}{fmt}", buf[a : a + (b - a) // width * width]))
    out: list[Any] = []
    if wire == 2:
        i = a
        while i < b:
            x, i = varint(buf, i)
            out.append(x)
    elif wire == 0:
        out.append(varint(buf, a)[0])
    elif wire == 5:
        out.append(_FLOAT(buf, a)[0])
    elif wire == 1:
        out.append(_DOUBLE(buf, a)[0])
    if num == 7:
        out = [(x + (1 << 31)) % (1 << 32) - (1 << 31) for x in out]
    elif num == 10:
        out = [signed(x) for x in out]
    elif num == 11:
        out = [bool(x) for x in out]
    return out
