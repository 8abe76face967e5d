"""The W&B reader's chunk walk in C (csrc/wandbwalk/, the module steptable.ingest.readers._wandbwalk) reads every
file as the loop in Python reads it without the walk: the same rows (each row's keys in the order the file first
showed them), run facts and reports, on runs wandb wrote (hostile keys and values, records over several blocks, a
run read live), on damaged copies of them, and on records of layouts wandb's writer does not make, built with
wandb's own classes. Its CRC-32 is zlib's."""

from __future__ import annotations

import random
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptable.ingest import recordsource
from steptable.ingest.files.follow import Follower
from steptable.ingest.readers import wandb as reader
from steptable.ingest.readers import wandblog
from tests.ingest import writers
from tests.ingest.writers import copy_dir, read_once, rows_of, wandb_file

pytest.importorskip("wandb")
walkmod = pytest.importorskip("steptable.ingest.readers._wandbwalk", reason="the C walk is not built here")


STEPS = 400


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run logged by wandb with what makes a history record hard to read, each in steps of its own (see
    :func:`_left_to_python`): 70 keys, each left out now and then (records of different key sets, each in a new
    order), a quote, a backslash, a tab or non-ASCII in a key, text with escapes, booleans and None among the
    values, nested dicts, NaN and inf, ints past int64, lists long enough to span several 32 KiB blocks, a
    wandb.Table now and then, a key first logged late, steps logged in two calls; it ends with exit code 3."""
    root = tmp_path_factory.mktemp("hostile")
    writers.run_writer(f"""
        import math, random, wandb
        rng = random.Random(7)
        run = wandb.init(project="p", name="hostile", config={{"lr": 1e-3, "note": 'say "hi"'}})
        keys = [f"k{{i:02d}}/metric" for i in range(70)]
        odd_keys = {{1: 'say "hi"', 2: "back\\\\slash", 3: "tab\\tkey", 4: "é/unicode"}}
        for i in range({STEPS}):
            row = {{k: rng.gauss(0, 1) * 10 ** rng.randint(-8, 8) for k in keys if rng.random() > 0.1}}
            row["ints"] = i * 1000003
            if i % 7 in odd_keys:
                row[odd_keys[i % 7]] = i
            if i % 11 == 0:
                row["text"] = f'step {{i}} "quoted" \\\\ \\n line é'
            if i % 13 == 0:
                row["nested"] = {{"a": i, "b": {{"c": math.nan}}}}
            if i % 17 == 0:
                row["inf"] = math.inf if i % 2 else -math.inf
            if i % 19 == 0:
                row["big"] = 2 ** 63 + i
            if i % 23 == 0:
                row.update({{"flag": True, "none": None}})
            if i % 50 == 0:
                row["long"] = [rng.random() for _ in range(4000)]
            if i >= 200:
                row["late"] = i
            if i % 100 == 0:
                row["samples"] = wandb.Table(columns=["a"], data=[["x"]])
            if i % 9 == 0:
                run.log({{"half": i}}, step=i, commit=False)
            run.log(row, step=i)
        run.finish(exit_code=3)
    """, {"WANDB_DIR": str(root)}, timeout=240)
    return root


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run logged by wandb with keys a JSON decoder can type (no quote or backslash in one): 40 keys, each left
    out now and then, one first logged late."""
    root = tmp_path_factory.mktemp("plain")
    writers.run_writer(f"""
        import random, wandb
        rng = random.Random(5)
        run = wandb.init(project="p", name="plain")
        for i in range({STEPS}):
            row = {{f"g{{i % 3}}/k{{j:02d}}": rng.random() for j in range(40) if rng.random() > 0.05}}
            if i >= 250:
                row["late"] = i
            run.log(row, step=i)
        run.finish()
    """, {"WANDB_DIR": str(root)}, timeout=240)
    return root


def _left_to_python(step: int) -> bool:
    """The hostile run's records the walk leaves to the loop in Python: a quote, backslash or tab in a key, a
    nested key (of several parts), a media value; it writes the rest (text, non-ASCII keys, records over several
    blocks among them)."""
    return step % 7 in (1, 2, 3) or step % 13 == 0 or step % 100 == 0


class _Counted:
    """The C walk, counting its calls and the rows it wrote (a read must have used it for the comparison to mean
    anything)."""

    calls = 0
    steps: ClassVar[list[int]] = []  # (of the rows it wrote)

    def __init__(self) -> None:
        self._walker = walkmod.Walker()

    def order(self, keys: list[bytes]) -> None:
        self._walker.order(keys)

    def walk(self, *args: Any) -> tuple[int, bytes, int, int]:
        got = self._walker.walk(*args)
        _Counted.calls += 1
        _Counted.steps += [int(s) for s in re.findall(rb'"_step":(\d+)', got[1])]
        return got  # type: ignore[no-any-return]


def _facts(f: Follower) -> list[Any]:
    """What a read gives: each run's name, steps, rows (their keys in order; str: NaN == NaN), meta (its paths
    under the root read) and reports."""
    (root,) = f.roots
    return [(s.arm, list(s.steps), str(rows_of(s)), str(s.meta).replace(str(root), "<root>"),
             [b.reason for b in s.bad]) for s in f.stores.values()] + [sorted(f.errors)]


def _both(read: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """``read()`` with the C walk, then with the loop in Python alone."""
    _Counted.calls = 0
    with monkeypatch.context() as m:
        m.setattr(reader, "Walker", _Counted)
        walked = read()
    assert _Counted.calls > 0  # (the walk took part)
    with monkeypatch.context() as m:
        m.setattr(reader, "Walker", None)
        alone = read()
    return walked, alone


@pytest.mark.parametrize("read_size", [recordsource.WANDB_READ, 5000, 777])
def test_runs_read_as_the_python_loop_reads_them(hostile: Path, plain: Path, wandb_run: Path, read_size: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recordsource, "WANDB_READ", read_size)
    for root in (hostile, plain, wandb_run):
        walked, alone = _both(lambda: _facts(read_once(root)), monkeypatch)  # noqa: B023
        assert walked == alone
    store = next(iter(read_once(hostile).stores.values()))
    assert list(store.steps) == list(range(STEPS)) and not store.bad
    assert "exit_code_3" in str(store.meta["runinfo"])


def test_the_walk_writes_the_records_it_can_and_leaves_the_rest(hostile: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _Counted.steps = []
    monkeypatch.setattr(reader, "Walker", _Counted)
    monkeypatch.setattr(reader, "WALK_REST", 0)  # (tried at every record it left, however many in a row)
    read_once(hostile)
    assert _Counted.steps == [s for s in range(STEPS) if not _left_to_python(s)]
    assert {s for s in _Counted.steps if s % 50 == 0} == {250, 350}  # (records over several blocks)


def test_key_order_is_the_first_seen_order(hostile: Path) -> None:
    """wandb writes each record's items in a new order; the rows come out with their keys in one order, the order
    the file first showed them (what lets the JSON decoder find each key where it looks first)."""
    store = next(iter(read_once(hostile).stores.values()))
    rows = rows_of(store)
    first: dict[str, int] = {}
    for r in rows:
        for k in r:
            first.setdefault(k, len(first))
    for r in rows:
        ranks = [first[k] for k in r]
        assert ranks == sorted(ranks)


def test_lines_come_in_the_decoders_key_order(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the JSON reader has a typed decoder, the walk writes each line's keys in its field order (the order it
    decodes fastest); a line holding a key it has no field for comes in its record's order (the rows may not have
    shown the key yet: see test_a_key_no_row_showed_comes_in_its_records_order)."""
    monkeypatch.setattr(reader, "WALK_REST", 0)
    data = wandb_file(plain).read_bytes()
    parser, at, checked = reader.WandbParser("plain"), 0, 0
    spy = _Counted()
    parser._walker = spy  # type: ignore[assignment]
    lines: list[bytes] = []
    spy.walk = lambda *a: (got := _Counted.walk(spy, *a), lines.append(got[1]))[0]  # type: ignore[method-assign]
    while True:
        order = parser.jsonl.key_order()
        lines.clear()
        used, _ = parser.parse(memoryview(data)[at:], at, final=True)
        at += used
        for line in b"\n".join(lines).split(b"\n") if order is not None else []:
            keys = [k.decode() for k in re.findall(rb'"([^"]*)":', line)] if line else []
            if all(k in order for k in keys):
                assert keys == sorted(keys, key=order.index)
                checked += 1
        if not (parser.more and used):
            break
    assert checked > STEPS // 2


def test_order_ranks_the_keys_given_first() -> None:
    w = walkmod.Walker()
    w.order([b"c", b"a"])
    with pytest.raises(TypeError):
        w.order(["not bytes"])


def _damaged(data: bytes, seed: int) -> bytes:
    rng = random.Random(seed)
    out = bytearray(data)
    how = seed % 4
    at = rng.randrange(len(wandblog.HEADER), len(out))
    if how == 0:  # one byte flipped
        out[at] ^= 1 << rng.randrange(8)
    elif how == 1:  # cut
        del out[at:]
    elif how == 2:  # a span zeroed (a preallocated block never written)
        out[at : at + rng.randrange(1, 3000)] = bytes(min(len(out) - at, rng.randrange(1, 3000)))
    else:  # a span repeated (a write retried)
        out[at:at] = out[at - rng.randrange(1, 2000) : at]
    return bytes(out)


@pytest.mark.parametrize("seed", range(48))
def test_damaged_copies_reported_as_the_python_loop_reports_them(hostile: Path, tmp_path: Path, seed: int,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    dst = copy_dir(hostile, tmp_path)
    dst.write_bytes(_damaged(wandb_file(hostile).read_bytes(), seed))
    walked, alone = _both(lambda: _facts(read_once(tmp_path)), monkeypatch)
    assert walked == alone


def test_live_run_read_as_the_python_loop_reads_it(hostile: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's file written in pieces of random sizes (cut inside records, inside chunk headers, across blocks):
    after every poll, the same steps; at the end, the same rows."""
    data = wandb_file(hostile).read_bytes()
    rng = random.Random(3)
    cuts = [*sorted(rng.sample(range(1, len(data)), 120)), len(data)]

    def live() -> tuple[list[list[int]], Any]:
        where = tmp_path / f"live{rng.random()}"
        dst = copy_dir(hostile, where)
        dst.write_bytes(b"")
        f = Follower([where])
        seen, done = [], 0
        for cut in cuts:
            with open(dst, "ab") as fh:
                fh.write(data[done:cut])
            done = cut
            f.scan()
            seen.append([list(s.steps) for s in f.stores.values()])
        f.finish()
        return seen, _facts(f)

    walked, alone = _both(live, monkeypatch)
    assert walked == alone
    assert walked[0][-1] == [list(range(STEPS))]


def _framed(records: list[bytes]) -> bytes:
    """Records in a run file's framing (the LevelDB log wandb writes: 32 KiB blocks, chunks of FULL, FIRST, MIDDLE,
    LAST with zlib's CRC-32 over type and data), after the file header."""
    out = bytearray(wandblog.HEADER)
    for rec in records:
        first = True
        while True:
            left = wandblog.BLOCK - len(out) % wandblog.BLOCK
            if left < wandblog.CHUNK_HEADER:
                out += bytes(left)
                continue
            part, rec = rec[: left - wandblog.CHUNK_HEADER], rec[left - wandblog.CHUNK_HEADER :]
            kind = ((wandblog.FULL if not rec else wandblog.FIRST) if first
                    else (wandblog.LAST if not rec else wandblog.MIDDLE))
            out += struct.pack("<IHB", zlib.crc32(part, zlib.crc32(bytes([kind]))), len(part), kind) + part
            first = False
            if not rec:
                break
    return bytes(out)


def _records(pb: Any) -> Iterator[bytes]:
    """History records of layouts wandb's writer does not make (built with its classes), between usual ones."""
    def rec(*items: Any, step: int | None = None, num: int = 1) -> bytes:
        h = pb.HistoryRecord(item=list(items))
        if step is not None:
            h.step.num = step
        return bytes(pb.Record(num=num, history=h).SerializeToString())

    def item(key: str, value: str) -> Any:
        return pb.HistoryItem(nested_key=key.split("|"), value_json=value)

    many = [f"m{i:04d}" for i in range(1000)]
    yield rec(*(item(k, str(i)) for i, k in enumerate(many)), item("_step", "0"), step=0)
    for s in range(1, 60):
        yield rec(item("_step", str(s)), item(many[999 - s], "1.5"), item(many[s], "-2"), step=s)  # (sparse ranks)
        yield rec(item("_step", str(s)), *(item(k, str(s)) for k in reversed(many[:80])), step=s)
    odd = [rec(pb.HistoryItem(key="a", value_json="1"), item("_step", "60"), step=60),  # key field 1
           rec(item("_step", "61"), item("b", "2")),  # no step field
           rec(item("_step", "62"), item("b", "2"), step=2 ** 62),
           rec(item("_step", "63"), item("b", "")),  # an empty value
           rec(item("_step", "64"), item("b", "1"), item("b", "2"), step=64),  # a key twice
           rec(item("_step", "65"), item("c|d", "2"), step=65),  # a key of two parts
           rec(item("_step", "66"), pb.HistoryItem(key="t", number=2.5), step=66),  # a typed value
           rec(item("_step", "67"), item("x/_type", '"table-file"'), step=67),
           rec(item("_step", "67"), item("xy/_type", "1"), item("xy/cell", "2"), item("xyz", "3"), step=67),
           rec(item("_step", "68"), item("bad", "1,2"), step=68),  # value_json that is no JSON
           rec(item("_step", "69"), item("v", "[1, 2, 3]"), step=69),
           rec(step=70),  # no item
           rec(item("_step", "71"), item("b", "3"), step=71) + b"\xc2\x0c\x02\x08\x01",  # _info after the record
           rec(item("_step", "73"), item("k" * 300, "1" * 200), step=73),  # two-byte lengths
           rec(item("_step", "74"), item("b", "4"), step=74, num=2 ** 40),
           rec(item("_step", "75"), item("ké", "1"), item("k\x7f", "2"), item("d", '"\x7f é"'), step=75),
           rec(item("_step", "76"), item("s", '"say \\"hi\\" \\\\ é"'), item("o", '{"a/_type":1}'), step=76),
           rec(item("_step", "77"), item("a/_type/b", "1"), item("q", '"x/_type\\":"'), step=77)]
    yield from odd
    # bytes that are no UTF-8 in a key and in a value (a writer's bug: the checksums pass)
    for key, value in (("k\u00e9x", "1"), ("k", '"\u00e9"')):
        raw = rec(item("_step", "78"), item(key, value), step=78)
        yield raw.replace("é".encode(), b"\xff\xfe")
    items = bytes(pb.HistoryRecord(item=[item("_step", "72"), item("b", "3")]).SerializeToString())
    short = items + b"\x12\x05\x08\x48"  # a step whose length says more bytes than follow
    yield b"\x08\x01\x12" + bytes([len(short)]) + short
    h = pb.HistoryRecord(item=[item("_step", "79"), item("b", "5")])
    h.step.num = 79
    raw = bytes(h.SerializeToString()) + item("late", "6").SerializeToString()  # an item after the step
    yield b"\x08\x01\x12" + bytes([len(raw)]) + raw


def test_layouts_wandb_does_not_write_read_as_the_python_loop_reads_them(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    path = tmp_path / "wandb" / "offline-run-20260101_000000-abc" / "run-abc.wandb"
    path.parent.mkdir(parents=True)
    path.write_bytes(_framed(list(_records(pb))))
    for size in (recordsource.WANDB_READ, 4096):
        monkeypatch.setattr(recordsource, "WANDB_READ", size)
        walked, alone = _both(lambda: _facts(read_once(tmp_path)), monkeypatch)
        assert walked == alone
    store = next(iter(read_once(tmp_path).stores.values()))
    rows = rows_of(store)
    assert len(rows[0]) >= 1000 and rows[1]["m0998"] == 1.5
    # value_json that is no JSON (step 68), reported without the decoder's position in the line made of the record
    # (it would read as a byte of the file)
    malformed = [b.reason for b in store.bad if "JSON" in b.reason]
    assert malformed and not any(re.search(r"\(byte \d+\)", r) for r in malformed), store.bad


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=5000), st.integers(0, 2**32 - 1), st.integers(0, 15))
def test_crc32_is_zlibs(data: bytes, value: int, skew: int) -> None:
    view = memoryview(bytes(skew) + data)[skew:]  # (at every alignment)
    assert walkmod.crc32(view, value) == zlib.crc32(data, value)


def test_walk_refuses_a_start_outside_the_bytes() -> None:
    w = walkmod.Walker()
    for i in (-1, 11):
        with pytest.raises(ValueError):
            w.walk(b"0123456789", i, 0, 10, 10)
    assert w.walk(b"0123456789", 10, 0, 10, 10) == (10, b"", 0, 1)


def _history(pb: Any, *items: Any, step: int | None = None, tail: bytes = b"") -> bytes:
    """A Record holding a HistoryRecord of ``items`` (``tail``: bytes after its fields, inside it)."""
    h = pb.HistoryRecord(item=list(items))
    if step is not None:
        h.step.num = step
    raw = bytes(h.SerializeToString()) + tail
    return b"\x08\x01\x12" + _varint(len(raw)) + raw


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def _read_both(tmp_path: Path, records: list[bytes], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    path = tmp_path / "wandb" / "offline-run-20260101_000000-abc" / "run-abc.wandb"
    path.parent.mkdir(parents=True)
    path.write_bytes(_framed(records))
    return _both(lambda: _facts(read_once(tmp_path)), monkeypatch)  # type: ignore[no-any-return]


def _item(pb: Any, key: str, value: str) -> Any:
    return pb.HistoryItem(nested_key=[key], value_json=value)


@pytest.mark.parametrize("layout", ["key in field 1", "media mark in a value", "_info without a step"])
def test_records_the_loop_reads_item_by_item_are_left_to_it(tmp_path: Path, layout: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Records the loop in Python does not write as they are (its item-by-item path writes keys as JSON of their
    text, so invalid UTF-8 in a key is replaced unreported there, and keeps the clock of the last row that had one):
    the walk leaves them to it, so the reports and the run's end are the loop's."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    run = pb.RunRecord(display_name="arm")
    run.start_time.seconds = 1000
    first = _history(pb, _item(pb, "_step", "0"), _item(pb, "_timestamp", "1100.5"), _item(pb, "a", "1"), step=0)
    last = {"key in field 1": _history(pb, _item(pb, "_step", "1"), pb.HistoryItem(key="kXX", value_json="2"),
                                       step=1),
            "media mark in a value": _history(pb, _item(pb, "_step", "1"), _item(pb, "kXX", '{"a/_type":1}'),
                                              step=1),
            "_info without a step": _history(pb, _item(pb, "_step", "1"), _item(pb, "kXX", "2"),
                                             tail=b"\xc2\x0c\x00")}[layout]
    exit_ = bytes(pb.Record(num=9, exit=pb.RunExitRecord(exit_code=0, runtime=50)).SerializeToString())
    records = [bytes(pb.Record(num=1, run=run).SerializeToString()), first,
               last.replace(b"kXX", b"k\xff\xfe"), exit_]  # (no UTF-8: a writer's bug the checksums pass)
    walked, alone = _read_both(tmp_path, records, monkeypatch)
    assert walked == alone
    assert "1100.5" in walked[0][3]  # (the run ended at the last clock a row gave)


@pytest.mark.parametrize("first", ["a key twice", "no JSON", "no JSON object", "no JSON, ranks far apart"])
def test_a_key_no_row_showed_comes_in_its_records_order(tmp_path: Path, first: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A key of a record whose line the JSON decoder refuses (or that the walk leaves: a key twice) is shown by no
    row: where a later record shows it with a key new too, the two come in that record's order, as the loop in
    Python writes them (the store's columns are in the order the rows first show them)."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    p = {"a key twice": [_item(pb, "p", "1"), _item(pb, "p", "1,2")], "no JSON": [_item(pb, "p", "1,2")],
         "no JSON object": [_item(pb, "p", "1}")], "no JSON, ranks far apart": [_item(pb, "p", "1,2")]}[first]
    many = [_item(pb, f"k{i:03d}", "0") for i in range(100 if "far" in first else 2)]  # (ranks: sorted, not placed)
    records = [_history(pb, _item(pb, "_step", "0"), *many, step=0), _history(pb, _item(pb, "_step", "1"), *p, step=1),
               _history(pb, _item(pb, "_step", "2"), _item(pb, "z", "1"), many[-1], _item(pb, "p", "2"), many[0],
                        step=2)]
    walked, alone = _read_both(tmp_path, records, monkeypatch)
    assert walked == alone
    last = walked[0][2].split("{'_step': 2")[1]
    assert last.index("'z': 1") < last.index("'p': 2")


@pytest.mark.parametrize("last", ['{"_timestamp":7}', "[" * 5000 + "]" * 5000], ids=["a clock in a value", "too deep"])
def test_the_runs_end_is_its_last_rows_clock(tmp_path: Path, last: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run ended at its last row's ``_timestamp``, not at one a value of the row holds (which the walk, writing
    the keys in the JSON decoder's order, may write first); a last row the JSON reader refuses (nested too deep)
    gives no clock (the run's start and runtime tell the end) and stops nothing."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    run = pb.RunRecord(display_name="arm")
    run.start_time.seconds = 1000
    records = [bytes(pb.Record(num=1, run=run).SerializeToString()),
               _history(pb, _item(pb, "_step", "0"), _item(pb, "obj", last), _item(pb, "_timestamp", "1000.5"),
                        step=0)]
    records += [_history(pb, _item(pb, "_step", str(s)), _item(pb, "_timestamp", str(1000.5 + s)),
                         _item(pb, "obj", '{"_timestamp":7}'), step=s) for s in range(1, 200)]
    records += [_history(pb, _item(pb, "_step", "200"), _item(pb, "_timestamp", "1200.5"), _item(pb, "obj", last),
                         step=200),
                bytes(pb.Record(num=9, exit=pb.RunExitRecord(exit_code=0, runtime=50)).SerializeToString())]
    walked, alone = _read_both(tmp_path, records, monkeypatch)
    assert walked == alone
    assert "'closed': 1200.5" in walked[0][3] if last.startswith("{") else "'closed': 1050.0" in walked[0][3]


def test_metric_records_are_left_to_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A metric record (define_metric's: the step the rows are keyed by) is read by the loop in Python, also where
    it holds no ``_info`` before its kind (the walk passes over the other kinds of its range: summary, stats...)."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    records = [bytes(pb.Record(num=1, metric=pb.MetricRecord(name="it")).SerializeToString()),
               bytes(pb.Record(num=2, metric=pb.MetricRecord(glob_name="*", step_metric="it")).SerializeToString())]
    records += [_history(pb, _item(pb, "_step", str(s)), _item(pb, "it", str(5 * s)), _item(pb, "x", "1"), step=s)
                for s in range(10)]
    walked, alone = _read_both(tmp_path, records, monkeypatch)
    assert walked == alone
    assert walked[0][1] == [5 * s for s in range(10)]
