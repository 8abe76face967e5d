"""W&B records (``wandb/proto/wandb_internal.proto``) decoded from the wire (stdlib only): ``Record{num=1,
history=2, run=17, exit=18}``, ``HistoryRecord{item=1}``, ``HistoryItem{key=1, nested_key=2, value_json=16}`` (and
the typed values 3-8 some writers use: none, boolean, integer (sint64), number (double), text, json),
``RunRecord{project=3, config=4, display_name=8, start_time=17}``, ``ConfigRecord{update=1}``, ``ConfigItem{key=1,
nested_key=2, value_json=16}``, ``RunExitRecord{exit_code=1, runtime=2}``, ``Timestamp{seconds=1, nanos=2}``,
``Record.metric=12``: ``MetricRecord{name=1, glob_name=2, step_metric=4}`` (what ``define_metric`` wrote).

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
#: the usual HistoryItem: one nested_key part (field 2) and value_json (field 16: JSON text, which holds no control
#: character). Lengths are not checked: the key and the value are bounded by the control characters that start the
#: next field, so on this layout the match is the decode. A key of several parts (a nested dict) is not matched:
#: only the parts' lengths tell a further part's tag from a 0x12 in a key, and the general walk reads them.
_ITEM = rb"\x0a" + _VARINT + rb"\x12" + _VARINT + _KEY_PART + rb"\x82\x01" + _VARINT + rb"[^\x00-\x1f]*+"
_ITEMS = re.compile(rb"(?:" + _ITEM + rb")++", re.DOTALL)
#: what may follow the items: HistoryRecord.step (field 2: HistoryStep{num=1}), _info (field 200)
_TAIL = re.compile(rb"(?:\x12[\x00-\x7f](?:\x08" + _VARINT + rb")?)?(?:\xc2\x0c.*)?", re.DOTALL)
# on matched items, in this order: each item's start -> `,"`; value_json's tag and length -> `":`
_ITEM_START = re.compile(rb"\x0a" + _VARINT + rb"\x12" + _VARINT)
_VALUE_START = re.compile(rb"\x82\x01" + _VARINT)


def history_line(buf: bytes, i: int, end: int) -> bytes | None:
    """A HistoryRecord of the usual layout (every key of one part) as one JSON object line ``{"key":value,...}``,
    rewritten by regular expressions in C; None for any other layout (read it with :func:`history_items`)."""
    m = _ITEMS.match(buf, i, end)
    if m is None or (m.end() != end and _TAIL.fullmatch(buf, m.end(), end) is None):
        return None
    body = _VALUE_START.sub(b'":', _ITEM_START.sub(b',"', buf[i : m.end()]))
    return b"{" + body[1:] + b"}"


#: deleted to leave the marks: ASCII text but quotes and backslashes (control characters and bytes of 128 or more left)
_ASCII_TEXT = bytes(b for b in range(0x20, 0x80) if b not in b'"\\')
#: the marks of one record: per item a quote, the key's bytes of 128 or more, a quote and the value's length (one
#: control character: the value is under 32 bytes, ASCII as JSON without quotes is), each next item after a tab;
#: records end with the 0 byte
_RECORD = rb'"[\x80-\xff]*+"[\x01-\x1f](?:\t"[\x80-\xff]*+"[\x01-\x1f])*+'
_MARKS = re.compile(_RECORD + rb"(?:\x00" + _RECORD + rb")*+\x00")
#: all control characters (the marks, the values' lengths) go, the 0 byte between records becomes a newline
_DROP = bytes(range(1, 0x20))
_NEWLINE = bytes.maketrans(b"\x00", b"\n")


def _key_start(rec: bytes) -> int:
    """Where the key of a HistoryRecord's first item starts (past the item's tag and length and its first key
    part's tag and length); -1 when the record does not start with such an item."""
    if rec[0] != 0x0A:
        return -1
    i = 1
    while rec[i] > 0x7F:
        i += 1
    if rec[i + 1] != 0x12:
        return -1
    i += 2
    while rec[i] > 0x7F:
        i += 1
    return i + 1


def _items_end(rec: bytes) -> int:
    """Where the items of a HistoryRecord end: before its step field (``\x12 len [\x08 varint]``) if it ends with
    one, else at its end (anything else there is a mark the check finds); -1 for a record that cannot end so."""
    e = len(rec)
    if rec[e - 1] == 0 and rec[e - 2] == 0x12:  # (step 0: an empty HistoryStep)
        return e - 2
    j = e - 1
    if rec[j] > 0x7F:
        return -1
    while rec[j - 1] > 0x7F:  # (the step's varint: its bytes before the last have the high bit; rec[0] has not)
        j -= 1
    if rec[j - 1] == 0x08 and rec[j - 2] == e - j + 1 and rec[j - 3] == 0x12:
        return j - 3
    return e


def history_lines(records: list[bytes]) -> bytes | None:
    """HistoryRecords of the usual layout with neither quote nor backslash in a key or value and every value under
    32 bytes (numbers: most runs) as :func:`history_line` reads each, one JSON object per line (joined by newlines,
    none at the end); None when any record is not one (read each with :func:`history_line` then).

    Each record's step field and first item's start are cut here (a few byte tests a record); then over all of
    them in C: each next item's start (tag, length, key tag and length) becomes ``,\t"``, each value's tag
    ``\x82\x01`` becomes ``":`` (its length byte stays), records are joined by ``}\x00{"``. The control characters,
    quotes and backslashes left must then be exactly those marks and the value lengths, in the layout's order and as
    many as were put there: keys and values hold none of them, each tag replaced was a tag (a tag or length byte not
    replaced is a control character or a byte of 128 or more outside a key's quotes), every key is of one part (a
    further part's tag is a control character left), and each value is under 32 bytes (its length one control
    character). The marks and lengths are then deleted and each 0 byte becomes a
    newline."""
    parts = []
    for rec in records:
        try:
            i = _key_start(rec)
            e = _items_end(rec)
        except IndexError:
            return None
        if i < 0 or e <= i:
            return None
        parts.append(rec[i:e])
    s = b'{"' + b'}\x00{"'.join(parts) + b"}\x00"
    s, items = _ITEM_START.subn(b',\t"', s)
    if s.count(b"\x82\x01") != items + len(parts):  # (one value an item: else a key's quote could pass for its mark)
        return None
    s = s.replace(b"\x82\x01", b'":')
    if not _marked(s, len(parts), items):
        return None
    return s.translate(_NEWLINE, _DROP)[:-1]


def _marked(s: bytes, records: int, items: int) -> bool:
    """The marks of ``s`` are in the layout's order, and as many as were put there (a tab or 0 byte in a key or
    value would otherwise stand for one; a value's length can be a tab, and is followed by no quote)."""
    marks = s.translate(None, _ASCII_TEXT)
    return _MARKS.fullmatch(marks) is not None and marks.count(b"\x00") == records and marks.count(b'\t"') == items


def wandb_record(buf: bytes, lines: bool = False) -> tuple[str, Any]:
    """The kind of a Record and what the readers need of it: ("history", items), ("run", {name, project, start,
    config}), ("exit", (exit_code, runtime)), ("metric", (name or glob, step metric or "")), or (other, None).
    ``lines``: a history record of the usual layout comes as ("line", its JSON object line) (:func:`history_line`)."""
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
        if num == 12:
            return "metric", _metric(buf, a, b)
        if num not in (16, 19, 200):  # (control, uuid, _info sit beside the record's one kind)
            return "other", None
    return "other", None


def _run(buf: bytes, i: int, end: int) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "", "project": "", "start": 0.0, "config": []}
    for num, wire, a, b in fields(buf, i, end):
        if wire != 2:
            continue
        if num == 8:
            out["name"] = buf[a:b].decode("utf-8", "replace")
        elif num == 3:
            out["project"] = buf[a:b].decode("utf-8", "replace")
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


def _metric(buf: bytes, i: int, end: int) -> tuple[str, str]:
    """A MetricRecord: (its name, or its glob name: ``eval/*``; the step metric it is charted against, or "")."""
    name = step = ""
    for num, wire, a, b in fields(buf, i, end):
        if wire == 2 and num in (1, 2):
            name = buf[a:b].decode("utf-8", "replace")
        elif wire == 2 and num == 4:
            step = buf[a:b].decode("utf-8", "replace")
    return name, step
