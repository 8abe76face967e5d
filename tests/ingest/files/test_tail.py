"""steptable.ingest.files.tail: reading a growing file: partial lines, truncation, rotation, replacement,
deletion, copytruncate holes; no row lost or doubled, memory bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.files.tail as tail_mod
from steptable.ingest import Follower
from steptable.ingest.files.tail import RESET, RESET_IN_PLACE, FileTail, Lines, Lost
from tests.ingest.helpers import assert_rows, train_line


def line(step: int, **kw: float) -> bytes:
    return (json.dumps({"step": step, "loss": step / 10, **kw}) + "\n").encode()


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def follow(tmp_path: Path) -> tuple[Follower, Path]:
    run = tmp_path / "logs" / "armA"
    run.mkdir(parents=True)
    return Follower([tmp_path / "logs"]), run / "metrics.jsonl"


def steps(f: Follower) -> list[int]:
    return list(f.stores["armA/metrics.jsonl"].steps)


def test_partial_chunks_wait_for_their_newline(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    data = b"".join(line(i) for i in range(50))
    pieces = [data[i : i + 37] for i in range(0, len(data), 37)]  # cuts inside lines and inside numbers
    path.write_bytes(b"")
    for piece in pieces:
        append(path, piece)
        f.scan()
        n = len(steps(f))
        assert n == data[: data.index(piece) + len(piece)].count(b"\n")
    assert steps(f) == list(range(50)) and f.errors == []
    assert f.stores["armA/metrics.jsonl"].column("loss").tolist() == [i / 10 for i in range(50)]


def test_truncate_and_rewrite_resets(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(20)))
    f.scan()
    store = f.stores["armA/metrics.jsonl"]
    gen = store.generation
    path.write_bytes(b"".join(line(i, extra=1.0) for i in range(5, 8)))  # verl: truncated on launch
    assert f.scan() == {"armA/metrics.jsonl"}
    assert steps(f) == [5, 6, 7] and store.generation > gen and store.value(0, "extra") == 1.0


def test_rewrite_that_grows_past_offset_is_noticed(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(5)))
    f.scan()
    with open(path, "r+b") as fh:  # same inode, bigger, different first bytes
        fh.write(b"".join(line(i + 100) for i in range(10)))
    f.scan()
    assert steps(f) == list(range(100, 110))


def test_a_reset_says_whether_the_file_was_written_over_in_place(tmp_path: Path) -> None:
    """Written over itself (same file, no shorter: it may be part new, part old bytes) or truncated."""
    path = tmp_path / "m.csv"
    path.write_bytes(b"a,b\n1,2\n3,4\n")
    tail = FileTail(path)
    list(tail.poll())
    with open(path, "r+b") as fh:
        fh.write(b"a,b,c\n1,2,\n")
    events = list(tail.poll())
    assert events[1] is RESET_IN_PLACE and events[1].in_place, events
    path.write_bytes(b"a\n")
    events = list(tail.poll())
    assert events[1] is RESET and not events[1].in_place, events


def test_rotation_rename_and_new_file(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(10)))
    f.scan()
    path.rename(path.with_name("metrics.jsonl.1"))
    path.write_bytes(b"".join(line(i) for i in range(10, 13)))
    f.scan()
    assert steps(f) == list(range(13))  # the renamed file is the run's start (as tail -F reads on)
    append(path, line(13))
    f.scan()
    assert steps(f) == list(range(14))


def test_a_rotation_between_the_stat_and_the_open_loses_nothing_and_says_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """logrotate renames the file away and a new one is made at the path after the tail's stat and before its
    open: the rest of the old file and the new one are read, with no "lost" notice and no reset."""
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b"".join(line(i) for i in range(10)))
    t = FileTail(path)
    assert [e for e in t.poll() if not isinstance(e, Lines)] == []
    append(path, b"".join(line(i) for i in range(10, 12)))
    real_stat = os.stat

    def stat_then_rotate(p: Any, *a: Any, **kw: Any) -> os.stat_result:
        st = real_stat(p, *a, **kw)
        if Path(p) == path and not path.with_name("metrics.jsonl.1").exists():
            path.rename(path.with_name("metrics.jsonl.1"))
            path.write_bytes(b"".join(line(i) for i in range(12, 15)))
        return st

    monkeypatch.setattr(tail_mod.os, "stat", stat_then_rotate)
    events = list(t.poll()) + list(t.poll())
    monkeypatch.setattr(tail_mod.os, "stat", real_stat)
    events += list(t.poll())
    assert [e for e in events if not isinstance(e, Lines)] == []
    read = [json.loads(raw)["step"] for e in events if isinstance(e, Lines) for raw in e.data.splitlines()]
    assert read == list(range(10, 15))


@pytest.mark.parametrize("rotation", ["rename", "copytruncate"])
def test_a_bad_line_in_the_rest_of_a_rotated_file_is_numbered_in_that_file(tmp_path: Path, rotation: str) -> None:
    """A bad line read from the rest of a rotated file (renamed away, or logrotate's copy before a truncation) is
    numbered by its place in that file, not counted in the new file at the path (it was said to be line 4 of 12)."""
    f, path = follow(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(10)))
    f.scan()
    append(path, line(10) + b"{not json\n" + line(11))  # the bad line is the file's 12th
    rotated = path.with_name("metrics.jsonl.1")
    if rotation == "rename":
        path.rename(rotated)
        path.write_bytes(b"".join(line(i) for i in range(12, 14)))
    else:
        rotated.write_bytes(path.read_bytes())
        path.write_bytes(b"".join(line(i) for i in range(12, 14)))  # (truncated, then written on)
    f.scan()
    assert steps(f) == list(range(14))
    assert [e.split(": ")[0] for e in f.errors] == [f"{path}:12"]


def test_a_copy_renamed_over_the_file_goes_on_from_where_it_was(tmp_path: Path) -> None:
    """rsync (and other copiers) write a new file and rename it over the old one: the same rows and more. That is
    the log grown, not a new run: no reset (tail -f reprinted the whole history and repeated its alerts)."""
    f, path = follow(tmp_path)
    for stop in (10, 20, 30):  # three polls, so the file's history has samples from several points
        path.write_bytes(b"".join(line(i) for i in range(stop)))
        f.scan()
    store = f.stores["armA/metrics.jsonl"]
    gen = store.generation
    copy = path.with_name("metrics.jsonl.tmp")
    copy.write_bytes(b"".join(line(i) for i in range(35)))
    os.replace(copy, path)
    f.scan()
    assert steps(f) == list(range(35)) and store.generation == gen
    # a copy that differs inside what was read (one row changed, past the head) is another file: read again
    data = b"".join(line(i) for i in range(40)).replace(b'"loss": 2.9}', b'"loss": 2.8}', 1)
    assert len(data) == len(b"".join(line(i) for i in range(40))) and data.index(b"2.8}") > 512
    copy.write_bytes(data)
    os.replace(copy, path)
    f.scan()
    assert steps(f) == list(range(40)) and store.generation == gen + 1


def test_delete_and_recreate(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(10)))
    f.scan()
    path.unlink()
    f.scan()
    assert steps(f) == list(range(10))  # rows stay visible while the file is gone
    path.write_bytes(b"".join(line(i) for i in range(3)))
    f.scan()
    assert steps(f) == [0, 1, 2]
    append(path, line(3))
    f.scan()
    assert steps(f) == [0, 1, 2, 3] and f.errors == []


def test_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    path.write_bytes(line(0))
    assert f.scan() == {"armA/metrics.jsonl"}
    version = f.stores["armA/metrics.jsonl"].version
    assert f.scan() == set() and f.stores["armA/metrics.jsonl"].version == version


def test_filetail_events_and_long_line_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    tail = FileTail(path, block=1024, max_line=4096)
    assert list(tail.poll()) == []  # not there yet: nothing, no error
    long = b'{"s": "' + b"x" * 10_000 + b'"}\n'
    path.write_bytes(line(0) + long + line(2)[:10])
    events = list(tail.poll())
    assert tail.pending <= 4096
    assert [str(e) for e in events if not isinstance(e, Lines)] == [f"{path}:2: line of 4096 bytes or more skipped"]
    append(path, line(2)[10:] + line(3))
    events = list(tail.poll())
    assert [e.first_line() for e in events if isinstance(e, Lines)] == [3]
    assert tail.lineno == 4 and tail.offset == os.path.getsize(path)
    size = tail.offset
    path.write_bytes(line(9))  # rewritten shorter: the rest of what was there may be lost, then a reset
    assert list(tail.poll())[:2] == [Lost(size, "truncated or rewritten"), RESET]


def test_a_copytruncate_hole_of_any_size_loses_no_row(tmp_path: Path) -> None:
    """logrotate's copytruncate while the trainer writes without O_APPEND: the writer goes on at its old offset,
    so the file restarts with a hole of NULs as long as the old log (9 MiB here, past the 8 MiB line limit)."""
    f, path = follow(tmp_path)
    path.write_bytes(b"".join(line(i) for i in range(3)))
    f.scan()
    hole = 9 << 20
    with open(path, "r+b") as w:
        w.truncate(0)
        w.seek(hole)  # sparse: reads back as NULs
        w.write(line(3) + line(4))
    f.scan()
    assert steps(f) == [3, 4] and f.errors == []
    append(path, b"\0" * 5 + line(5))  # NULs before a line in a later chunk too
    f.scan()
    assert steps(f) == [3, 4, 5] and f.errors == []


def test_a_nul_hole_starting_inside_a_block_loses_no_row(tmp_path: Path) -> None:
    f, path = follow(tmp_path)
    path.write_bytes(line(1) + b"\0" * (9 << 20) + line(2) + line(3))
    f.scan()
    assert steps(f) == [1, 2, 3] and f.errors == []


def test_unreadable_file_is_reported_once_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs" / "arm" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(train_line(0) + train_line(1))
    real_open = tail_mod.open_binary

    def denied(p: Path) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tail_mod, "open_binary", denied)
    f = Follower([tmp_path / "runs"])
    f.scan()
    f.scan()
    store = f.stores["arm/metrics.jsonl"]
    assert len(store) == 0
    assert f.errors == [f"{path}: unreadable (Permission denied)"] and store.bad_count == 1
    monkeypatch.setattr(tail_mod, "open_binary", real_open)
    f.scan()
    assert_rows(store, [0, 1])


def test_a_read_stopped_early_reads_on_where_it_stopped(tmp_path: Path) -> None:
    """``stop``: a poll reads no further than that byte (the complete lines before it, the line it cuts waiting);
    the next poll reads on from there: the same lines as one poll, and a tail set by ``carry_on`` to where another
    reader's ``position`` was reads on the same way."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"".join(f'{{"step": {i}, "x": "{"y" * (i % 37)}"}}\n'.encode() for i in range(3000)))
    whole = b"".join(ev.data for ev in FileTail(path, block=4096, max_line=8192).poll() if isinstance(ev, Lines))
    t = FileTail(path, block=4096, max_line=8192)
    t.stop = 5 * 4096
    first = [ev for ev in t.poll() if isinstance(ev, Lines)]
    offset, start, pending, last, skipping = t.position()
    assert offset == 5 * 4096 and first[-1].offset + len(first[-1].data) == start and not skipping
    assert pending == whole[start:offset] and last == whole[offset - 64:offset]
    other = FileTail(path, block=4096, max_line=8192)
    other.carry_on(offset, start, pending, last)
    t.stop = None
    rest = [ev for ev in t.poll() if isinstance(ev, Lines)]
    assert b"".join(ev.data for ev in first + rest) == whole
    assert [(ev.offset, ev.data) for ev in other.poll() if isinstance(ev, Lines)] == [
        (ev.offset, ev.data) for ev in rest]
    assert rest[0].first_line() == whole[:start].count(b"\n") + 1  # (lines before counted when asked for)
    assert t.position()[:3] == other.position()[:3] == (path.stat().st_size, path.stat().st_size, b"")


def test_holds_read_tells_an_append_from_a_rewrite(tmp_path: Path) -> None:
    """``holds_read(offset, tail)``: another reader read on to ``offset``, ``tail`` its last bytes; the file still
    holds what both read where they sampled it only when it was appended to, as a poll judges it."""
    path = tmp_path / "m.jsonl"
    data = b"".join(f'{{"step": {i}, "x": {i / 7}}}\n'.encode() for i in range(2000))
    path.write_bytes(data)
    half = len(data) // 2
    t = FileTail(path, block=4096, max_line=8192)
    t.stop = half
    list(t.poll())
    end, tail = len(data), data[-64:]
    assert t.holds_read(end, tail)
    with open(path, "ab") as f:  # appended past the other reader's end
        f.write(b'{"step": 2000, "x": 1.0}\n')
    assert t.holds_read(end, tail)
    assert not t.holds_read(end, b"x" * 64)  # (not what the other reader read last)
    assert not t.holds_read(len(data) + 4096, tail)  # (shorter than the other reader read)
    changed = bytearray(data)
    changed[end - 10] ^= 1  # the other reader's last bytes rewritten in place, same size
    path.write_bytes(bytes(changed))
    assert not t.holds_read(end, tail)
    path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])  # this tail's first bytes rewritten
    assert not t.holds_read(end, tail)
    path.write_bytes(data[:half])  # truncated
    assert not t.holds_read(end, tail)
    other = tmp_path / "other.jsonl"
    other.write_bytes(data)
    os.replace(other, path)  # the same bytes in another file: replaced
    assert not t.holds_read(end, tail)
    path.unlink()
    assert not t.holds_read(end, tail)
