"""Protobuf wire format, decoded for exactly the messages the record readers need (stdlib only).

W&B (``wandb/proto/wandb_internal.proto``): ``Record{num=1, history=2, run=17, exit=18}``,
``HistoryRecord{item=1}``, ``HistoryItem{key=1, nested_key=2, value_json=16}`` (and the typed values 3-8 some
writers use: none, boolean, integer (sint64), number (double), text, json), ``RunRecord{config=4, display_name=8,
start_time=17}``, ``ConfigRecord{update=1}``, ``ConfigItem{key=1, nested_key=2, value_json=16}``,
``RunExitRecord{exit_code=1, runtime=2}``, ``Timestamp{seconds=1, nanos=2}``.

TensorBoard (``tensorboard/compat/proto``): ``Event{wall_time=1, step=2, summary=5}``, ``Summary{value=1}``,
``Summary.Value{tag=1, simple_value=2, tensor=8}``, ``TensorProto{dtype=1, tensor_shape=2, tensor_content=4,
float_val=5, double_val=6, int_val=7, int64_val=10, bool_val=11, half_val=13}``, ``TensorShapeProto{dim=2}``,
``Dim{size=1}``.

Other fields are skipped by their wire type, as protobuf does. Malformed bytes raise :class:`WireError`. The tests
check these decoders against the libraries' own classes on files the libraries wrote.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any

_DOUBLE = struct.Struct("<d").unpack_from
_FLOAT = struct.Struct("<f").unpack_from


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


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


# ----------------------------------------------------------------------------------------------------------- W&B

def _item(buf: bytes, i: int, end: int) -> tuple[bytes, bytes]:
    """One HistoryItem / ConfigItem: (key, value as JSON text); the key's parts joined with ``/``."""
    key = b""
    parts: list[bytes] = []
    value = b"null"
    for num, wire, a, b in fields(buf, i, end):
        if num == 2 and wire == 2:
            parts.append(buf[a:b])
        elif num in (16, 8) and wire == 2:  # value_json, json
            value = buf[a:b]
        elif num == 7 and wire == 2:  # text
            value = json.dumps(buf[a:b].decode("utf-8", "replace")).encode()
        elif num == 1 and wire == 2:
            key = buf[a:b]
        elif num == 4 and wire == 0:
            value = b"true" if varint(buf, a)[0] else b"false"
        elif num == 5 and wire == 0:
            z = varint(buf, a)[0]
            value = str((z >> 1) ^ -(z & 1)).encode()
        elif num == 6 and wire == 1:
            x = _DOUBLE(buf, a)[0]
            value = repr(x).encode() if x == x and abs(x) != float("inf") else (
                b"NaN" if x != x else (b"Infinity" if x > 0 else b"-Infinity"))
    return (b"/".join(parts) if parts else key), value


def history_items(buf: bytes, i: int, end: int) -> list[tuple[bytes, bytes]]:
    """The items of a HistoryRecord at ``buf[i:end]``: [(key, value JSON)]."""
    out: list[tuple[bytes, bytes]] = []
    append = out.append
    while i < end:
        if buf[i] != 0x0A:  # (step, _info: not needed, the row carries _step)
            key, i = varint(buf, i)
            i = skip(buf, i, key & 7)
            continue
        n = buf[i + 1]
        if n < 0x80:
            a = i + 2
        else:
            n, a = varint(buf, i + 1)
        b = a + n
        if b > end:
            raise WireError("history item runs past its record")
        # the usual item: nested_key parts (field 2) then value_json (field 16), every length under 128
        j = a
        parts = []
        while j < b and buf[j] == 0x12 and buf[j + 1] < 0x80:
            k = j + 2 + buf[j + 1]
            parts.append(buf[j + 2 : k])
            j = k
        if parts and j + 3 <= b and buf[j] == 0x82 and buf[j + 1] == 0x01 and buf[j + 2] < 0x80 \
                and j + 3 + buf[j + 2] == b:
            append((parts[0] if len(parts) == 1 else b"/".join(parts), buf[j + 3 : b]))
        else:
            append(_item(buf, a, b))
        i = b
    if i != end:
        raise WireError("history record ends inside a field")
    return out


_VARINT = rb"[\x80-\xff]*+[\x00-\x7f]"
#: no control character, quote or backslash (JSON string text as it is); possessive, so nothing is tried twice: it
#: stops at the next part's tag (\x12) and at value_json's (\x82\x01), the only byte it holds that may start one
_KEY_PART = rb'(?:[^\x00-\x1f"\\\x82]++|\x82(?!\x01))*+'
#: the usual HistoryItem: nested_key parts (field 2) and value_json (field 16: JSON text, which holds no control
#: character). Lengths are not checked: a part or a value is bounded by the control characters that start the next
#: field, so on this layout the match is the decode.
_ITEM = (rb"\x0a" + _VARINT + rb"\x12" + _VARINT + _KEY_PART + rb"(?:\x12[\x00-\x7f]" + _KEY_PART + rb")*+"
         + rb"\x82\x01" + _VARINT + rb"[^\x00-\x1f]*+")
_ITEMS = re.compile(rb"(?:" + _ITEM + rb")++", re.DOTALL)
#: what may follow the items: HistoryRecord.step (field 2: HistoryStep{num=1}), _info (field 200)
_TAIL = re.compile(rb"(?:\x12[\x00-\x7f](?:\x08" + _VARINT + rb")?)?(?:\xc2\x0c.*)?", re.DOTALL)
# on matched items, in this order: each item's start -> `,"`; value_json's tag and length -> `":`; part -> `/`
_ITEM_START = re.compile(rb"\x0a" + _VARINT + rb"\x12" + _VARINT)
_VALUE_START = re.compile(rb"\x82\x01" + _VARINT)
_PART_SEP = re.compile(rb"\x12[\x00-\x7f]")  # (parts of 128 bytes or more: the general walk)


def history_line(buf: bytes, i: int, end: int) -> bytes | None:
    """A HistoryRecord of the usual layout as one JSON object line ``{"key":value,...}`` (key parts joined with
    ``/``), rewritten by regular expressions in C; None for any other layout (read it with :func:`history_items`)."""
    m = _ITEMS.match(buf, i, end)
    if m is None or (m.end() != end and _TAIL.fullmatch(buf, m.end(), end) is None):
        return None
    body = _VALUE_START.sub(b'":', _ITEM_START.sub(b',"', buf[i : m.end()]))
    if b"\x12" in body:  # keys of several parts (nested dicts)
        body = _PART_SEP.sub(b"/", body)
    return b"{" + body[1:] + b"}"


#: a record's start (the 0 byte put before each) and its first item's start
_FIRST = re.compile(rb"\x00" + _ITEM_START.pattern)
#: the step after a record's items (HistoryRecord.step), before the next record's start (or the 0 byte at the end)
_STEP_AT_END = re.compile(rb"\x12[\x00-\x7f](?:\x08" + _VARINT + rb")?(?=\x00|\}\n\{)")
_TEXT = bytes(b for b in range(0x20, 0x100) if b not in b'"\\')  # (deleted: control characters, quotes, \ left)
_MARKS = re.compile(rb'(?:\n"\x04*+"\r(?:\t"\x04*+"\r)*+)*+\x00')


def history_lines(records: list[bytes]) -> bytes | None:
    """HistoryRecords of the usual layout with neither quote nor backslash in a key or value (numbers: most runs)
    as :func:`history_line` reads each (JSON whitespace aside), one JSON object per line (joined by newlines, none
    at the end); None when any record is not one (read each with :func:`history_line` then).

    All at once, in a few passes in C: each record's start, each item's start (tag and length, its key's tag and
    length), each value's tag and length and each further key part's tag and length become the JSON text that
    stands there with a control character to mark it: ``}\\n{"``, ``,\\t"``, ``":\\r``, ``\\x04/``; the step after
    the items goes. The marks and quotes put there must then be all the control characters, quotes and
    backslashes left, in the order ``\\n " \\x04* " \\r`` for a record's first item, ``\\t " \\x04* " \\r`` for
    each next: the keys and values between them are text as the layout's regular expression reads it (none of
    those characters), so the lines are what it makes. Tab and carriage return are JSON whitespace (they stay); a
    key part's mark is deleted."""
    n = len(records)
    s = b"\x00" + b"\x00".join(records) + b"\x00"
    s, firsts = _FIRST.subn(b'}\n{"', s)
    s, items = _ITEM_START.subn(b',\t"', s)
    s, values = _VALUE_START.subn(b'":\r', s)
    s = _STEP_AT_END.sub(b"", s)
    parts = 0
    if b"\x12" in s:  # keys of several parts (nested dicts)
        s, parts = _PART_SEP.subn(b"\x04/", s)
    if firsts != n or firsts + items != values:  # (each record starts with an item, each item has one value)
        return None
    marks = s.translate(None, _TEXT)
    if len(marks) != n + items + 3 * values + parts + 1:  # (a mark byte or quote that was in a key or value: more)
        return None
    if parts:
        if _MARKS.fullmatch(marks) is None:
            return None
        s = s.translate(None, b"\x04")
    elif marks.replace(b'\t""\r', b"") != b'\n""\r' * n + b"\x00":
        return None
    return s[2:-1] + b"}"


def wandb_record(buf: bytes, lines: bool = False) -> tuple[str, Any]:
    """The kind of a Record and what the readers need of it: ("history", items), ("run", {name, start, config}),
    ("exit", (exit_code, runtime)), or (other, None). ``lines``: a history record of the usual layout comes as
    ("line", its JSON object line) (:func:`history_line`)."""
    for num, wire, a, b in fields(buf, 0, len(buf)):
        if wire != 2:
            continue
        if num == 2:
            line = history_line(buf, a, b) if lines else None
            return ("line", line) if line is not None else ("history", history_items(buf, a, b))
        if num == 17:
            return "run", _run(buf, a, b)
        if num == 18:
            code = runtime = 0
            for n2, w2, c, _ in fields(buf, a, b):
                if w2 == 0 and n2 in (1, 2):
                    v = _signed(varint(buf, c)[0])
                    v = (v + (1 << 31)) % (1 << 32) - (1 << 31)  # int32
                    if n2 == 1:
                        code = v
                    else:
                        runtime = v
            return "exit", (code, runtime)
        if num not in (16, 19, 200):  # (control, uuid, _info sit beside the record's one kind)
            return "other", None
    return "other", None


def _run(buf: bytes, i: int, end: int) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "", "start": 0.0, "config": []}
    for num, wire, a, b in fields(buf, i, end):
        if wire != 2:
            continue
        if num == 8:
            out["name"] = buf[a:b].decode("utf-8", "replace")
        elif num == 17:
            secs = nanos = 0
            for n2, w2, c, _ in fields(buf, a, b):
                if w2 == 0 and n2 == 1:
                    secs = _signed(varint(buf, c)[0])
                elif w2 == 0 and n2 == 2:
                    nanos = varint(buf, c)[0]
            out["start"] = secs + nanos / 1e9
        elif num == 4:
            out["config"] = [_item(buf, c, d) for n2, w2, c, d in fields(buf, a, b) if n2 == 1 and w2 == 2]
    return out


# ---------------------------------------------------------------------------------------------------- TensorBoard

_PACKED = {5: ("f", 4), 6: ("d", 8), 7: ("i", 0), 10: ("q", 0), 11: ("?", 0), 13: ("e", 0)}
#: tensorflow DataType -> (struct format of one element of tensor_content, the repeated field of its values)
DTYPES = {1: ("<f", 5), 2: ("<d", 6), 3: ("<i", 7), 9: ("<q", 10), 19: ("<e", 13), 10: ("<?", 11), 4: ("<B", 7),
          6: ("<b", 7)}


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
    return _DOUBLE(buf, 1)[0], _signed(step), values


def _tb_event(buf: bytes) -> tuple[float, int, list[tuple[str, float | int | bool]]] | None:
    wall = 0.0
    step = 0
    summary: tuple[int, int] | None = None
    for num, wire, a, b in fields(buf, 0, len(buf)):
        if num == 1 and wire == 1:
            wall = _DOUBLE(buf, a)[0]
        elif num == 2 and wire == 0:
            step = _signed(varint(buf, a)[0])
        elif num == 5 and wire == 2:
            summary = (a, b)
    if summary is None:
        return None
    values = []
    for num, wire, a, b in fields(buf, *summary):
        if num != 1 or wire != 2:
            continue
        tag = ""
        value: float | int | bool | None = None
        for n2, w2, c, d in fields(buf, a, b):
            if n2 == 1 and w2 == 2:
                tag = buf[c:d].decode("utf-8", "replace")
            elif n2 == 2 and w2 == 5:
                value = _FLOAT(buf, c)[0]
            elif n2 == 8 and w2 == 2:
                value = _tensor_scalar(buf, c, d)
        if value is not None:
            values.append((tag, value))
    return wall, step, values


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
                            size = _signed(varint(buf, e)[0])
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
        out = [_signed(x) for x in out]
    elif num == 11:
        out = [bool(x) for x in out]
    return out
