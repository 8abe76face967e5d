"""A big JSONL's first one-shot read (``summary``) split across two processes: this one parses the file up to a
block boundary while a forked child parses the rest; the child's chunks are then added to the run's store by the
same source, parser and store as a read in one process adds them, so every rule of ``steptable.ingest`` (resumes,
arms, placements, second writers, bad and stepless lines, line numbers) applies as it does there.

Why it is the same: the lines a read hands its parser depend only on the tail's position (where the unfinished line
starts, its bytes, no over-long line being skipped) and the bytes after it, and what the parser makes of them only
on its :meth:`~steptable.ingest.readers.jsonl.JsonlParser.state` (row counts and last steps aside). The child starts
from a guess of both: the tail at the cut as this process's will be, the parser after the file's first chunk and the
chunk before the cut (read twice, as a chunk of a shape the parser knows). Its chunks are taken only when this
process, at the cut, is in exactly that position and state, the file kept its size and time, the file has a step key
and the child met no bad, stepless or over-long line (which would need the line numbers and the last step of the
part before); else the rest is read here as if no child had been (correct first, fast where that is proven). A child
that dies or does not answer in time (steptable.ingest.forkgate) is killed and the rest read here.

Only where forking is safe and a second core is free (steptable.ingest.forkgate), for files of at least
:data:`MIN_BYTES`: the numeric columns come back as raw doubles and int64s, the rest pickled, through a pipe.
"""

from __future__ import annotations

import gc
import os
import pickle
import selectors
import signal
import struct
import time
from array import array
from typing import Any

from steptable.ingest import forkgate
from steptable.ingest.files.tail import FileTail, Lines
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.source import Source, TailSource

#: files under this many bytes are read in one process: below it the fork and the child's chunks added here cost
#: about what the child saves (measured: bench/README.md, "summary's read split across two processes")
MIN_BYTES = 16 * 1024 * 1024
#: the part of the file this process parses itself: it also adds the child's chunks to the store afterwards, so an
#: even split would leave the child waiting
SHARE = 0.42
#: bytes before the cut searched for the newline the child starts after (a longer line: one process)
LOOK_BACK = 64 * 1024
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
    try:
        st = os.stat(src.cand.path)
    except OSError:
        return None
    if st.st_size < MIN_BYTES or not forkgate.forkable() or forkgate.free_cores() < 2:
        return None
    stop = round(st.st_size * SHARE / tail.block) * tail.block
    if not 2 * tail.block <= stop < st.st_size - tail.block:
        return None
    return stop, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _split(src: TailSource, stop: int, ident: tuple[int, int, int, int]) -> bool:
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return src.poll()
    if pid == 0:  # the child: never returns
        os.close(r)
        _child(src, stop, ident, w)
    os.close(w)
    forked_at = time.monotonic()
    try:
        src.tail.stop = stop
        try:
            changed = src.poll()
        finally:
            src.tail.stop = None
        got = _receive(r, src, stop, ident, forked_at)
    finally:
        _end(pid, r)
    if got is None:
        return src.read_on() or changed
    parts, state, rows, last, fast, slow, position = got
    assert isinstance(src.parser, JsonlParser)
    src.tail.carry_on(*position)
    src.parser.carry_on(state, rows, last, fast, slow)
    return src.carry_on(parts) or changed


def _end(pid: int, fd: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)  # (done or not: its pid is ours until waited for)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # (reaped already: SIGCHLD ignored by whoever embeds this)
        pass
    os.close(fd)


def _receive(fd: int, src: TailSource, stop: int, ident: tuple[int, int, int, int],
             forked_at: float) -> tuple[Any, ...] | None:
    """The child's chunks, its parser's end state and its tail's end position, when the child's start matches where
    this process is now and the file did not change; else None (the rest is read here)."""
    frames = _frames(fd, forkgate.deadline(forked_at))
    start = next(frames, None)
    if start is None:
        return None
    guess, pending = start
    position = src.tail.position()
    assert isinstance(src.parser, JsonlParser)
    if position[:3] != (stop, stop - len(pending), pending) or position[4] or src.parser.state() != guess:
        return None
    done = next(frames, None)
    if done is None or done[0] != ident or _ident(src) != ident:
        return None
    _, packed, *rest = done
    return ([_unpack(p) for p in packed], *rest)


def _ident(src: TailSource) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(src.cand.path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _frames(fd: int, deadline: float) -> Any:
    """The child's frames (8-byte length, pickle) as they come, until the pipe ends or ``deadline`` passes."""
    buf = bytearray()
    at = 0
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            while at + 8 <= len(buf) and at + 8 + (n := int.from_bytes(buf[at:at + 8], "little")) <= len(buf):
                yield pickle.loads(memoryview(buf)[at + 8:at + 8 + n])
                at += 8 + n
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            buf += chunk


def _child(src: TailSource, stop: int, ident: tuple[int, int, int, int], out: int) -> None:
    """The child's life: guess the state the parent's parser will be in at the cut, say it, parse the rest from
    there and send the chunks; then exit without running the parent's exit handlers or flushing its buffers. Any bad
    line, a file without a step key, an over-long line or a file that changed: no chunks (exit 1)."""
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
        packed = []
        for ev in tail.poll():
            if not isinstance(ev, Lines):
                return
            parsed = parser.parse(ev.data, 0)
            if parsed.bad:
                return
            packed.append(_pack(parsed))
        st = os.stat(path)
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != ident:
            return
        _send(out, (ident, packed, parser.state(), parser.ordinal - rows, parser.last_step,
                    parser.fast_chunks - fast, parser.slow_chunks - slow, tail.position()[:4]))
        status = 0
    finally:  # (KeyboardInterrupt and SystemExit too)
        os._exit(status)


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def _pack(p: Parsed) -> tuple[Any, ...]:
    """A chunk for the pipe: the typed columns the fast path made (tuples of floats, or of ints: msgspec gives
    those no other type) as raw doubles and int64s where every cell is one, the rest as it is."""
    cols = None
    if p.cols is not None:
        ints = p.int_keys or frozenset()
        cols = {k: _raw(v, k in ints) if p.int_keys is not None and type(v) is tuple else v
                for k, v in p.cols.items()}
    same = p.cols is not None and p.step_key is not None and p.steps is p.cols.get(p.step_key)
    return _STEPS_COL if same else p.steps, p.rows, cols, p.int_keys, p.bad, p.step_key, p.meta


def _raw(col: tuple[Any, ...], ints: bool) -> Any:
    code = "q" if ints else "d"
    try:
        return code, struct.pack(f"{len(col)}{code}", *col)  # (None, text, MISSING or an int past int64: as is)
    except (struct.error, OverflowError):
        return col


def _unpack(packed: tuple[Any, ...]) -> Parsed:
    steps, rows, cols, int_keys, bad, step_key, meta = packed
    if cols is not None:
        for k, v in cols.items():
            if type(v) is tuple and len(v) == 2 and type(v[1]) is bytes and v[0] in ("d", "q"):
                a = array(v[0])
                a.frombytes(v[1])
                cols[k] = a
    if type(steps) is str:
        steps = cols[step_key]
    return Parsed(steps=steps, rows=rows, cols=cols, int_keys=int_keys, bad=bad, step_key=step_key, meta=meta)
