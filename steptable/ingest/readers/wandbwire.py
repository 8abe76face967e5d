"""W&B records (``wandb/proto/wandb_internal.proto``) decoded from the wire (stdlib only): ``Record{num=1,
history=2, run=17, exit=18}``, ``HistoryRecord{item=1}``, ``HistoryItem{key=1, nested_key=2, value_json=16}`` (and
the typed values 3-8 some writers use: none, boolean, integer (sint64), number (double), text, json),
``RunRecord{config=4, display_name=8, start_time=17}``, ``ConfigRecord{update=1}``, ``ConfigItem{key=1,
nested_key=2, value_json=16}``, ``RunExitRecord{exit_code=1, runtime=2}``, ``Timestamp{seconds=1, nanos=2}``.

Other fields are skipped by their wire type, as protobuf does. Malformed bytes raise :class:`WireError`. The tests
check these decoders against wandb's own classes on files wandb wrote.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any

from steptable.ingest.readers.protowire import WireError, fields, signed, skip, varint

_DOUBLE = struct.Struct("<d").unpack_from


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
                    v = signed(varint(buf, c)[0])
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
                    secs = signed(varint(buf, c)[0])
                elif w2 == 0 and n2 == 2:
                    nanos = varint(buf, c)[0]
            out["start"] = secs + nanos / 1e9
        elif num == 4:
            out["config"] = [_item(buf, c, d) for n2, w2, c, d in fields(buf, a, b) if n2 == 1 and w2 == 2]
    return out
