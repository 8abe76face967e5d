"""The stdlib W&B wire decoder reads the same records as wandb's own protobuf classes, on files wandb wrote: every
Record (history items, run name, start, config, exit)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.readers.protowire import WireError, fields
from steptable.ingest.readers.wandbwire import history_line, history_lines, wandb_record
from tests.ingest.readers.helpers import wandb_records
from tests.ingest.writers import wandb_file


@pytest.mark.parametrize("fixture", ["wandb_run", "wandb_crashed"])
def test_wandb_records_decode_as_wandbs_classes_do(fixture: str, request: pytest.FixtureRequest) -> None:
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    records = wandb_records(wandb_file(request.getfixturevalue(fixture)))
    kinds = {"history": 0, "run": 0, "exit": 0}
    lines = flat = 0
    for raw in records:
        rec = pb.Record.FromString(raw)
        which = rec.WhichOneof("record_type")
        kind, got = wandb_record(raw)
        if which not in kinds:
            assert kind == "other"
            continue
        kinds[which] += 1
        assert kind == which
        if which == "history":
            want = [("/".join(it.nested_key) or it.key, it.value_json) for it in rec.history.item]
            assert [(k.decode(), v.decode()) for k, v in got] == want
            fast = wandb_record(raw, lines=True)
            if fast[0] == "line":  # the regular-expression path: the same object
                lines += 1
                assert str(json.loads(fast[1])) == str({k: json.loads(v) for k, v in want})
            if all(len(it.nested_key) == 1 for it in rec.history.item):
                flat += 1
            else:  # (keys of several parts: only the general walk reads their lengths)
                assert fast[0] == "history"
        elif which == "run":
            assert got["name"] == rec.run.display_name and got["project"] == rec.run.project == "p"
            assert got["start"] == rec.run.start_time.seconds + rec.run.start_time.nanos / 1e9
            assert [(k.decode(), v.decode()) for k, v in got["config"]] == \
                [("/".join(it.nested_key) or it.key, it.value_json) for it in rec.run.config.update]
        else:
            assert got == (rec.exit.exit_code, rec.exit.runtime)
    assert kinds["history"] >= 3 and kinds["run"] >= 1 and kinds["exit"] == 1
    assert lines >= flat - 1  # (all but the record of a wandb.Table, whose `_type` key says media)


def test_wandb_typed_history_values_decode_as_json() -> None:
    """Items written with typed values (not value_json) by wandb's own classes."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    rec = pb.Record(history=pb.HistoryRecord(item=[
        pb.HistoryItem(key="a", integer=-7), pb.HistoryItem(key="b", number=math.inf),
        pb.HistoryItem(nested_key=["c", "d"], boolean=True), pb.HistoryItem(key="e", text='say "hi"'),
        pb.HistoryItem(key="f", number=0.25), pb.HistoryItem(key="k" * 200, value_json="1.5")]))
    _, got = wandb_record(rec.SerializeToString())
    assert [(k.decode(), v.decode()) for k, v in got] == [
        ("a", "-7"), ("b", "Infinity"), ("c/d", "true"), ("e", '"say \\"hi\\""'), ("f", "0.25"), ("k" * 200, "1.5")]


def test_history_line_nested_keys_and_other_layouts() -> None:
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    rec = pb.Record(history=pb.HistoryRecord(item=[
        pb.HistoryItem(nested_key=["a"], value_json="1"), pb.HistoryItem(nested_key=["é"], value_json="NaN"),
        pb.HistoryItem(nested_key=["s"], value_json='"x\\ny"')], step=pb.HistoryStep(num=3)))
    kind, line = wandb_record(rec.SerializeToString(), lines=True)
    assert kind == "line" and line == '{"a":1,"é":NaN,"s":"x\\ny"}'.encode()
    # keys whose UTF-8 holds the byte 0x82 that starts value_json's tag (₂ is e2 82 82)
    subscript = pb.Record(history=pb.HistoryRecord(item=[
        pb.HistoryItem(nested_key=["norm₂"], value_json="2.5"), pb.HistoryItem(nested_key=["x₂y₂"], value_json="1")]))
    kind, line = wandb_record(subscript.SerializeToString(), lines=True)
    assert kind == "line" and line == '{"norm₂":2.5,"x₂y₂":1}'.encode()
    # keys of several parts (nested dicts), and keys holding the part tag's byte 0x12 before a character that would
    # pass for a part's length: the general walk reads each part by its length
    nested = pb.Record(history=pb.HistoryRecord(item=[
        pb.HistoryItem(nested_key=["a", "b", "c"], value_json="1"),
        pb.HistoryItem(nested_key=["x₂y", "₂"], value_json="2"),
        pb.HistoryItem(nested_key=["a\x12bc"], value_json="3"),
        pb.HistoryItem(nested_key=["a\x12\x01b"], value_json="4"),
        pb.HistoryItem(nested_key=["p\x12\x01q", "r"], value_json="5")], step=pb.HistoryStep(num=4)))
    kind, items = wandb_record(nested.SerializeToString(), lines=True)
    assert kind == "history" and items == [(b"a/b/c", b"1"), ("x₂y/₂".encode(), b"2"), (b"a\x12bc", b"3"),
                                           (b"a\x12\x01b", b"4"), (b"p\x12\x01q/r", b"5")]
    raw = _history_field(nested.SerializeToString())
    assert history_lines([raw]) is None and history_line(raw, 0, len(raw)) is None
    quoted = pb.Record(history=pb.HistoryRecord(item=[pb.HistoryItem(nested_key=['say "hi"'], value_json="2")]))
    kind, items = wandb_record(quoted.SerializeToString(), lines=True)  # (a quote in a key: the general walk)
    assert kind == "history" and items == [(b'say "hi"', b"2")]


def _history_field(raw: bytes) -> bytes:
    """The HistoryRecord inside a Record's bytes."""
    (got,) = [raw[a:b] for num, wire, a, b in fields(raw, 0, len(raw)) if num == 2 and wire == 2]
    return got


def _as_one_by_one(records: list[bytes]) -> bytes | None:
    """What :func:`history_lines` must give: each record's :func:`history_line`, or None if any has none."""
    lines = [history_line(r, 0, len(r)) for r in records]
    return None if None in lines else b"\n".join(lines)  # type: ignore[arg-type]


def _lines(records: list[bytes]) -> bytes | None:
    """:func:`history_lines` without the JSON whitespace it leaves (tabs, carriage returns: none in a key or value
    of the records it reads)."""
    got = history_lines(records)
    return None if got is None else got.translate(None, b"\t\r")


def test_history_lines_read_what_history_line_reads(wandb_run: Path) -> None:
    """All at once, a run's history records (nested keys, NaN, inf) read as one by one; the record of a
    wandb.Table (text values: quotes) is left to them, alone or with the others."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    records = [_history_field(raw) for raw in wandb_records(wandb_file(wandb_run))
               if pb.Record.FromString(raw).WhichOneof("record_type") == "history"]
    media = [r for r in records if b"_type" in r]
    assert len(media) >= 1 and history_lines(records) is None and history_lines(media) is None
    # (the run's keys of several parts, "nested/b/c", are read record by record by the general walk; here they
    # are rewritten as keys of one part by wandb's classes)
    plain = [_one_part(pb, r) for r in records if r not in media]
    assert len(plain) >= 3
    assert _lines(plain) == _as_one_by_one(plain) is not None
    assert b"nested/b/c" in _lines(plain)  # type: ignore[operator]
    for r in plain:
        assert _lines([r]) == history_line(r, 0, len(r))


def _one_part(pb: Any, raw: bytes) -> bytes:
    """A HistoryRecord (bytes) with each key of several parts rewritten by wandb's classes as one part
    (``a``, ``b`` -> ``a/b``)."""
    h = pb.HistoryRecord.FromString(raw)
    for it in h.item:
        if len(it.nested_key) > 1:
            it.nested_key[:] = ["/".join(it.nested_key)]
    return bytes(h.SerializeToString())


def test_history_lines_only_where_every_record_is_of_the_usual_layout() -> None:
    """Records history_line reads (UTF-8 keys holding the value tag's byte, NaN, steps past 127 and the value
    tag's bytes inside the step, values whose length byte is a tab, newline, carriage return, the part tag or a
    mark, steps 0 and none) come out as it reads them; any other (a key of several parts, a quote or control
    character in a key or value -- the part tag's byte too --, typed values, no items, a field after the step, an
    item of two values beside one of a typed value, an item's marks inside a value, a value of 32 bytes or more:
    its length is no control character, or is two bytes, the second one) makes the group None, never other
    lines."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")

    def rec(*items: Any, step: int | None = None) -> bytes:
        h = pb.HistoryRecord(item=list(items))
        if step is not None:
            h.step.num = step
        return bytes(h.SerializeToString())

    def item(key: str, value: str) -> Any:
        return pb.HistoryItem(nested_key=key.split("|"), value_json=value)

    good = [rec(item("a", "1"), item("b/c", "2.5"), step=3), rec(item("é", "NaN"), item("norm₂", "-1e-05")),
            rec(item("x₂y₂", "1"), item("k" * 127, "3"), step=300), rec(item("_step", "7"), step=2 ** 40),
            rec(item("v", "[1, 2]"), item("w", "{}"), item("t", "true")), rec(item("a", "1"), step=130),
            rec(item("t", "0.1234567"), item("n", "0.12345678"), item("r", "0.12345678901"), step=0),
            rec(item("p", "0.1234567890123456"), item("x", "1e-5"), item("y", "-1.2345678901234567e-300")),
            rec(item("z", "1" * 31), step=10)]
    assert _lines(good) == _as_one_by_one(good) is not None
    assert _lines(good).count(b"\n") == len(good) - 1  # type: ignore[union-attr]
    assert [json.loads(line) for line in history_lines(good).split(b"\n")] == [  # type: ignore[union-attr]
        json.loads(line) for line in _as_one_by_one(good).split(b"\n")]  # type: ignore[union-attr]
    bad = [rec(item('say "hi"', "1")), rec(item("s", '"text"')), rec(item("back\\slash", "1")),
           rec(item("a\tb", "1")), rec(item("c", "1\r")), rec(item("c", "1\x04")),
           rec(pb.HistoryItem(key="a", number=1.5)), rec(item("c", "1\x01x\x022")),
           rec(), rec(item("a\nb", "1")), rec(item("c", "1\x122")), rec(item("z", "1" * 50)),
           rec(item("l", "[" + ",".join(["1"] * 99) + "]")), rec(item("l", "[" + "1," * 63 + "11]")),
           rec(item("l", "[1" + ",1" * 15 + "]"), step=4),
           rec(item("a", "1"), step=5) + b"\xc2\x0c\x02\x08\x01", rec(item("b|c", "2.5")),
           rec(item("a\x12bc", "1")), rec(item("a\x12\x01b", "1"), item("x", "2"))]
    # an item of two value_json fields (two messages merged: the last one counts) beside one of a typed value
    # whose 8 bytes are text: as many value tags as items, quotes as many as they put, in another order
    printable = struct.unpack("<d", b"ABCDEFGH")[0]
    for key in ("a", "a|x"):
        twice = (item(key, "1").SerializeToString() + pb.HistoryItem(value_json="2").SerializeToString())
        typed = pb.HistoryItem(nested_key=["b"], number=printable).SerializeToString()
        bad.append(b"\x0a" + bytes([len(twice)]) + twice + b"\x0a" + bytes([len(typed)]) + typed)
    bad.append(rec(item("c", '1\t""\r2')))  # (the marks of an item, in a value)
    for b in bad:
        assert history_lines([b]) is None, b
        assert history_lines([good[0], b, good[1]]) is None, b
    assert wandb_record(b"\x12" + bytes([len(bad[-2])]) + bad[-2])[1][0] == (b"a/x", b"2")


def test_history_lines_never_take_a_keys_quote_for_a_missing_values_mark() -> None:
    """An item without a value whose key ends in a quote and a control character (the marks a value leaves) is
    not read as ``{"key":...}`` with the key cut at its quote: the group is left to the records one by one."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    alone = pb.HistoryRecord(item=[pb.HistoryItem(nested_key=['},"\r'])])
    alone.step.num = 3
    beside = pb.HistoryRecord(item=[pb.HistoryItem(nested_key=['ā:"\n']),
                                    pb.HistoryItem(nested_key=["{"], value_json="2.5")])
    for h in (alone, beside):
        raw = bytes(h.SerializeToString())
        assert history_lines([raw]) is None, raw
        assert _as_one_by_one([raw]) is None  # (one by one, the general walk reads them: a null value)


def test_truncated_record_raises() -> None:
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    raw = pb.Record(history=pb.HistoryRecord(item=[pb.HistoryItem(key="a", value_json="1")])).SerializeToString()
    with pytest.raises((WireError, IndexError)):
        wandb_record(raw[:-2])


def test_metric_records_decode_as_wandbs_classes_do(tmp_path: Path) -> None:
    """define_metric's records: a name or a glob, with a step metric or none, its options (step_sync, hidden,
    summary) beside."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    from tests.ingest.writers import run_writer

    run_writer("""
        import wandb
        run = wandb.init(project="p")
        run.define_metric("train/step")
        run.define_metric("train/*", step_metric="train/step")
        run.define_metric("eval/step", hidden=True)
        run.define_metric("eval/*", step_metric="eval/step", step_sync=False, summary="min,max")
        run.define_metric("acc", step_metric="epoch")
        run.log({"train/step": 1, "train/loss": 0.5})
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    got, want = [], []
    for raw in wandb_records(wandb_file(tmp_path)):
        rec = pb.Record.FromString(raw)
        kind, decoded = wandb_record(raw)
        assert (kind == "metric") == (rec.WhichOneof("record_type") == "metric")
        if kind == "metric":
            got.append(decoded)
            want.append((rec.metric.name or rec.metric.glob_name, rec.metric.step_metric))
    assert got == want == [("train/step", ""), ("train/*", "train/step"), ("eval/step", ""),
                           ("eval/*", "eval/step"), ("acc", "epoch")]
