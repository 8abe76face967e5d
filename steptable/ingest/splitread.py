"""A big JSONL's first one-shot read (``summary``) split across two processes: this one parses the file up to a
block boundary while a forked child parses the rest; the child's chunks are then added to the run's store by the
same source, parser and store as a read in one process adds them, so every rule of ``steptable.ingest`` (resumes,
arms, placements, second writers, bad and stepless lines, line numbers) applies as it does there.

Why it is the same: the lines a read hands its parser depend only on the tail's position (where the unfinished line
starts, its bytes, no over-long line being skipped) and the bytes after it, and what the parser makes of them only
on its :meth:`~steptable.ingest.readers.jsonl.JsonlParser.state` (row counts and last steps aside). The child starts
from a guess of both: the tail at the cut as this process's will be, the parser after the file's first chunk and the
chunk before the cut (read twice, as a chunk of a shape the parser knows). Its chunks are taken only when this
process, at the cut, is in exactly that position and state, the file has a step key, the child met no bad, stepless
or over-long line (which would need the line numbers and the last step of the part before), and the file only grew
(a live run's writer appends): the same file, at least as long as the child read, holding the bytes read where they
were sampled (FileTail.holds_read, the test a follower tells an append from a rewrite by); what was appended past
the child's end is then read here. Else the rest is read here as if no child had been (correct first, fast where
that is proven). A child that dies or does not answer in time (steptable.ingest.forkgate) is killed and the rest
read here.

Only where forking is safe and a second core is free (steptable.ingest.forkgate), for files of at least
:data:`MIN_BYTES`: the numeric columns come back as raw doubles and int64s in memory shared with the child (packed
there as the child parses: nothing to copy through a pipe once it is done), the rest pickled, through a pipe.
"""

from __future__ import annotations

import fcntl
import gc
import mmap
import os
import pickle
import selectors
import struct
import time
from array import array
from functools import lru_cache
from typing import Any, NamedTuple

from steptable.ingest import forkgate
from steptable.ingest.files.tail import FileTail, Lines
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.source import Source, TailSource

#: files under this many bytes are read in one process: measured (read alone, a core free, medians of 7) 8 MB:
#: 0.124 s split against 0.126 s, 16 MB: 0.140 against 0.150, 32 MB: 0.172 against 0.199, each split for 14-27%
#: more CPU (the fork, the child's guess and packing, the pipe)
MIN_BYTES = 16 * 1024 * 1024
#: the part of the file this process parses itself: this process also adds its rows to the store as it parses (the
#: child only packs them), and adds the child's after; with the child's numbers in shared memory, 0.48 measured ~6-9
#: ms faster than 0.5 on the 148 MB run (summary, interleaved, medians of 14)
SHARE = 0.48
#: bytes before the cut searched for the newline the child starts after (a longer line: one process)
LOOK_BACK = 64 * 1024
#: the shared memory the child packs its numbers into, per byte of its part of the file: a number takes 8 bytes
#: there and at least 5 in the file (``"":0,``); past that (a file grown during the read) the child gives up
RAW_PER_BYTE = 2
_STEPS_COL = "="  # (the chunk's steps are its step key's column, as the parser makes them)


def first_read(src: Source) -> bool:
    """``src.poll()``, with a big JSONL's first one-shot read split across two processes where that is safe and
    pays (see the module docstring). Returns whether the source's runs changed."""
    cut = _cut(src)
    if cut is None:
        return src.poll()
    assert isinstance(src, TailSource)
    return _split(src, *cut)


def _cut(src: Source) -> tuple[int, tuple[int, int, int, int]] | None:
    """(the block boundary the read is cut at, the file's identity and size and time) for a split first read of
    ``src``; None for a read in one process."""
    if not isinstance(src, TailSource) or src.cand.kind != "jsonl" or not isinstance(src.parser, JsonlParser):
        return None
    tail = src.tail
    if tail.opened or tail.offset or tail.stop is not None or len(src.store):
        return None
    ident = _ident(src)
    if ident is None or ident[2] < MIN_BYTES or not forkgate.forkable() or forkgate.free_cores() < 2:
        return None
    size = ident[2]
    stop = round(size * SHARE / tail.block) * tail.block
    if not 2 * tail.block <= stop < size - tail.block:
        return None
    return stop, ident


def _split(src: TailSource, stop: int, ident: tuple[int, int, int, int]) -> bool:
    """Fork the child of [cut, end), read [0, ``stop``) here, then take the child's chunks or read on here."""
    try:  # (anonymous and shared: pages are only made where the child writes)
        shared = mmap.mmap(-1, RAW_PER_BYTE * (ident[2] - stop) + mmap.PAGESIZE,
                           flags=mmap.MAP_SHARED | getattr(mmap, "MAP_NORESERVE", 0))
    except (OSError, ValueError, OverflowError):
        return src.poll()
    try:
        return _split_into(src, stop, ident, shared)
    finally:
        try:
            shared.close()
        except BufferError:  # (an array view still held by an interruption's traceback: freed with it)
            pass


def _split_into(src: TailSource, stop: int, ident: tuple[int, int, int, int], shared: mmap.mmap) -> bool:
    r, w = os.pipe()
    try:  # (a pipe of 1 MiB where the system allows: the child's columns come through in fewer reads)
        fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass
    parent = os.getpid()
    try:
        pid = forkgate.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return src.poll()
    if pid == 0:  # the child: never returns (an interruption before its own ``finally`` included)
        try:
            os.close(r)
            _child(src, stop, ident, w, parent, shared)
        finally:
            os._exit(1)
    os.close(w)
    forked_at = time.monotonic()
    try:
        src.tail.stop = stop
        try:
            changed = src.poll()
        finally:
            src.tail.stop = None
        got = _receive(r, src, stop, forked_at, shared)
    finally:
        forkgate.end(pid, r)
    if got is None:
        return src.read_on() or changed
    view, packed, state, rows, last, fast, slow, position = got
    assert isinstance(src.parser, JsonlParser)
    src.tail.carry_on(*position)
    src.parser.carry_on(state, rows, last, fast, slow)
    with view:
        changed = src.carry_on(_unpack(p, view) for p in packed) or changed  # (each chunk's arrays as it is added)
    if (_size(src) or 0) > position[0]:  # appended since the child's end (a live run): read on from there
        changed = src.read_on() or changed
    return changed


def _receive(fd: int, src: TailSource, stop: int, forked_at: float, shared: mmap.mmap) -> tuple[Any, ...] | None:
    """A view of the child's raw numbers in ``shared``, its chunks as packed, its parser's end state and its tail's
    end position, when the child's start matches where this process is now and the file only grew since; else None
    (the rest is read here)."""
    frames = _Frames(fd, forkgate.deadline(forked_at))
    start = frames.next()
    if start is None:
        return None
    guess, pending = start
    position = src.tail.position()
    assert isinstance(src.parser, JsonlParser)
    if position[:3] != (stop, stop - len(pending), pending) or position[4] or src.parser.state() != guess:
        return None
    done = frames.next()
    if done is None:
        return None
    packed, *rest, size = done
    end, _, _, tail = rest[-1]
    if not src.tail.holds_read(end, tail):  # (rewritten or replaced since: not the bytes the child read)
        return None
    return (memoryview(shared)[:size], packed, *rest)


def _ident(src: TailSource) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(src.cand.path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _size(src: TailSource) -> int | None:
    got = _ident(src)
    return None if got is None else got[2]


class _Frames:
    """What the child sends through the pipe, read until it ends or ``deadline`` passes: frames (8-byte length,
    pickle), each read into a buffer of its size (its raw numbers are in the shared memory, not here)."""

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd, self.deadline = fd, deadline

    def next(self) -> Any:
        head = self.read(8)
        data = self.read(int.from_bytes(head, "little")) if head is not None else None
        return pickle.loads(data) if data is not None else None

    def read(self, n: int) -> bytearray | None:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        with selectors.DefaultSelector() as sel:
            sel.register(self.fd, selectors.EVENT_READ)
            while got < n:
                left = self.deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                k = os.readv(self.fd, [view[got:]])
                if not k:
                    return None
                got += k
        return buf


def _child(src: TailSource, stop: int, ident: tuple[int, int, int, int], out: int, parent: int,
           shared: mmap.mmap) -> None:
    """The child's life: guess the state the parent's parser will be in at the cut, say it, parse the rest from
    there and send the chunks; then exit without running the parent's exit handlers or flushing its buffers. Any bad
    line, a file without a step key, an over-long line, a file that changed or a parent that is gone (killed alone:
    the child would parse on, holding its stdout open): no chunks (exit 1)."""
    status = 1
    try:
        gc.disable()  # (a collection would touch, and so copy, every object of the parent's)
        path, label, block = src.cand.path, src.tail.label, src.tail.block
        with open(path, "rb") as f:
            before = os.pread(f.fileno(), LOOK_BACK, stop - LOOK_BACK)
            first = os.pread(f.fileno(), block, 0)
            nl = before.rfind(b"\n")
            if nl < 0 or len(before) != LOOK_BACK:
                return
            pending = before[nl + 1:]
            mid = stop - len(pending)
            last = os.pread(f.fileno(), block, mid - block)  # (mid > 2 blocks - LOOK_BACK: _cut)
        parser = JsonlParser(label)
        last = last[last.find(b"\n") + 1:]  # (twice: the second time as a chunk the parser's shape already fits)
        for chunk in (first[:first.rfind(b"\n") + 1], last, last):
            if chunk and parser.parse(chunk, 0).bad:
                return
        if parser.step_key is None:  # (rows numbered by position: the parent's count is not known here)
            return
        _send(out, (parser.state(), pending))
        tail = FileTail(path, label, block=block, max_line=src.tail.max_line)
        tail.carry_on(stop, mid, pending, before[-64:])
        rows, fast, slow = parser.ordinal, parser.fast_chunks, parser.slow_chunks
        packed: list[tuple[Any, ...]] = []
        raw = _Out(shared)
        for ev in tail.poll():
            if not isinstance(ev, Lines) or os.getppid() != parent:
                return
            parsed = parser.parse(ev.data, 0)
            if parsed.bad:
                return
            packed.append(_pack(parsed, raw))
            if raw.full:
                return
        now = _ident(src)
        if now is None or now[:2] != ident[:2]:  # (another file at the path: the rows read are not the run's)
            return
        _send(out, (packed, parser.state(), parser.ordinal - rows, parser.last_step,
                    parser.fast_chunks - fast, parser.slow_chunks - slow, tail.position()[:4], raw.size))
        status = 0
    finally:  # (KeyboardInterrupt and SystemExit too)
        os._exit(status)


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    _write(fd, len(data).to_bytes(8, "little") + data)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _pack(p: Parsed, raw: _Out) -> tuple[Any, ...]:
    """A chunk for the pipe: the typed columns the fast path made (tuples of floats, or of ints: msgspec gives
    those no other type) as raw doubles or int64s added to ``raw`` where every cell is one, the rest as it is
    (:class:`_Cols` says which is which)."""
    cols = None
    if p.cols is not None:
        ints = p.int_keys if p.int_keys is not None else frozenset()
        n, start = len(p.steps), raw.size
        codes, others = [], []
        for k, v in p.cols.items():
            code = _raw(v, k in ints, n, raw) if p.int_keys is not None and type(v) is tuple else None
            if code is None:
                others.append(v)
            codes.append(code or "-")
        cols = _Cols(raw.shape(tuple(p.cols)), "".join(codes), start, n, others)
    same = p.cols is not None and p.step_key is not None and p.steps is p.cols.get(p.step_key)
    return _STEPS_COL if same else p.steps, p.rows, cols, p.int_keys, p.bad, p.step_key, p.meta


class _Cols(NamedTuple):
    """A chunk's columns as sent: its keys in order, a type code each (``d``, ``q``: raw numbers, ``n`` of them,
    one column after another from ``start`` in the shared memory; ``-``: the next of ``others``, as it is). (One
    per chunk: a tuple a column pickles ten times slower.)"""

    keys: tuple[str, ...]
    codes: str
    start: int
    n: int
    others: list[Any]


class _Out:
    """The raw bytes of a child's columns, packed in order into the memory it shares with its parent: their length
    so far, and whether one did not fit (``full``: the child gives up)."""

    def __init__(self, mem: mmap.mmap) -> None:
        self.mem = mem
        self.size = 0
        self.full = False
        self._shapes: dict[tuple[str, ...], tuple[str, ...]] = {}

    def shape(self, keys: tuple[str, ...]) -> tuple[str, ...]:
        """``keys``, as the same tuple for every chunk of those keys (pickled once, then referred to)."""
        return self._shapes.setdefault(keys, keys)


def _raw(col: tuple[Any, ...], ints: bool, n: int, out: _Out) -> str | None:
    """``col`` packed into ``out``: its type code; None where it stays as it is (a cell that is no double or int64:
    None, text, MISSING, an int past int64; not ``n`` cells)."""
    code = "q" if ints else "d"
    packer = _packer(code, len(col))
    if len(col) != n:
        return None
    if out.size + packer.size > len(out.mem):
        out.full = True
        return None
    try:
        packer.pack_into(out.mem, out.size, *col)
    except (struct.error, OverflowError):
        return None
    out.size += packer.size
    return code


@lru_cache(maxsize=64)
def _packer(code: str, n: int) -> struct.Struct:
    return struct.Struct(f"{n}{code}")


def _unpack(packed: tuple[Any, ...], raw: memoryview) -> Parsed:
    steps, rows, sent, int_keys, bad, step_key, meta = packed
    cols = None
    if sent is not None:
        cols, at, size, others = {}, sent.start, 8 * sent.n, iter(sent.others)
        for k, code in zip(sent.keys, sent.codes, strict=True):
            if code == "-":
                cols[k] = next(others)
                continue
            a = cols[k] = array(code)
            a.frombytes(raw[at:at + size])
            at += size
    if type(steps) is str:
        assert cols is not None
        steps = cols[step_key]
    return Parsed(steps=steps, rows=rows, cols=cols, int_keys=int_keys, bad=bad, step_key=step_key, meta=meta)
