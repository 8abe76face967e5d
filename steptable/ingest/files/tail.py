"""FileTail: read a growing file from a byte offset, complete lines only, and notice when it is no longer the same file.

A poll stats the file and reads only when (device, inode, size, mtime) changed. It is a *reset* (start again from
byte 0; the caller rebuilds the run from the new content) when the size is below our offset (truncation; verl
truncates on every launch), or bytes we already read changed (the first up to 512 bytes, the 64 bytes just before
our offset, or the 64 bytes before where each of the last 16 polls ended: a rewrite that grew past our offset between
two polls), or the inode changed to a file that does not hold those same bytes (rotation: rename + new file; delete +
recreate). A file renamed away within its directory, or copied beside it before a truncation (logrotate's
copytruncate), is read to its end first, and the new content then continues the same run (no reset). A new inode
that does hold them is the same log grown (rsync and other copiers write a new file and rename it over the old one):
reading goes on from our offset. Where neither holds the rest, ``Lost`` says so before the reset, and files made at
our path after our last read and renamed away before we opened them (rotated twice between two polls) are read whole
first, as the run's continuation. A partial last line is kept until its newline arrives.
A line of ``max_line`` bytes or more is reported and skipped while reading on in bounded blocks, never held whole.
The file is opened per poll, never kept open, so renames, deletions and many runs cost no descriptors.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import BinaryIO

from steptable.ingest.files import rotated
from steptable.ingest.files.tailevents import RESET as RESET
from steptable.ingest.files.tailevents import RESET_IN_PLACE as RESET_IN_PLACE
from steptable.ingest.files.tailevents import Lines as Lines
from steptable.ingest.files.tailevents import Lost as Lost
from steptable.ingest.files.tailevents import Reset as Reset
from steptable.ingest.files.tailevents import TailEvent as TailEvent
from steptable.ingest.parse import BadLine

BLOCK = 256 * 1024
MAX_LINE = 8 * 1024 * 1024
HEAD = 512
TAIL = 64
#: bytes remembered from the ends of this many earlier polls, to tell a copy of the file (plus more) from a new file
SAMPLES = 16


def _newlines(fd: int, start: int, end: int) -> int:
    n = 0
    while start < end and (block := os.pread(fd, min(end - start, 1 << 20), start)):
        n += block.count(b"\n")
        start += len(block)
    return n


def open_binary(path: Path) -> BinaryIO:
    """The one place a tailed file is opened (tests replace it to simulate an unreadable file)."""
    return open(path, "rb")


class FileTail:
    """One tailed file (see the module docstring): :meth:`poll` yields its new complete lines, bad lines and resets."""

    def __init__(self, path: str | Path, label: str | None = None, *, block: int = BLOCK,
                 max_line: int = MAX_LINE) -> None:
        if block >= max_line:
            raise ValueError("block must be smaller than max_line")
        self.path = Path(path)
        self.label = label if label is not None else str(path)
        self.block = block
        self.max_line = max_line
        self.missing = False  # it existed and is gone now
        #: read no further than this byte (None: to the end): a one-shot read whose rest another process reads
        #: (steptable.ingest.splitread); a poll that stopped there leaves the file to be read on by the next one
        self.stop: int | None = None
        self.error: str | None = None  # the file-level problem last reported (reported once until it changes)
        self._restart()
        self._ident: tuple[int, int] | None = None
        self._sig: tuple[int, int, int, int] | None = None
        self._reading: BinaryIO | None = None  # the file a read is under way in (lines are counted there)

    def _restart(self) -> None:
        self.offset = 0  # bytes read, including a pending partial line
        self._start = 0  # offset of the first byte after the last complete (or skipped) line
        self._mark = (0, 0)  # (offset, lines before it): where the line count is known
        self._pending = b""
        self._skipping = False
        self._skip_lineno = 0
        self._head = b""
        self._tail = b""
        self._samples: deque[tuple[int, bytes]] = deque(maxlen=SAMPLES)  # (offset, the TAIL bytes before it)

    @property
    def lineno(self) -> int:
        """Complete lines consumed so far."""
        return self.line_at(self._start)

    def line_at(self, offset: int) -> int:
        """Lines before byte ``offset`` (a line start already read). Counted lazily from the last known point:
        counting newlines costs as much as a tenth of the parse, and only reports need it."""
        mark_off, mark_line = self._mark
        if offset < mark_off:
            mark_off, mark_line = 0, 0
        if offset > mark_off:
            mark_line += self._count(mark_off, offset)
            self._mark = (offset, mark_line)
        return mark_line

    def _count(self, start: int, end: int) -> int:
        """Newlines in bytes [``start``, ``end``) of the file a read is under way in (a moved file's rest, a copy),
        else of the file at the path."""
        try:
            if self._reading is not None:  # (pread: the read's own position stays where it is)
                return _newlines(self._reading.fileno(), start, end)
            with open_binary(self.path) as f:
                return _newlines(f.fileno(), start, end)
        except OSError:
            return 0

    def position(self) -> tuple[int, int, bytes, bytes, bool]:
        """(bytes read, where the unfinished line starts, its bytes read so far, the last bytes read, whether an
        over-long line is being skipped): what the next read's lines depend on besides the file's bytes after it."""
        return self.offset, self._start, self._pending, self._tail, self._skipping

    def carry_on(self, offset: int, start: int, pending: bytes, tail: bytes) -> None:
        """Go on as if this tail had read up to ``offset`` itself, its unfinished line (``pending``) starting at
        ``start``, ``tail`` the bytes just before ``offset`` (a read of the file's rest apart:
        steptable.ingest.splitread). Lines already counted stay counted; the rest are counted when asked for."""
        self.offset, self._start, self._pending, self._tail, self._skipping = offset, start, pending, tail, False
        if tail and (not self._samples or self._samples[-1][0] != offset):
            self._samples.append((offset, tail))

    def holds_read(self, offset: int, tail: bytes) -> bool:
        """The file at the path is the one this tail read (its device and inode), at least ``offset`` bytes long,
        and holds the bytes read where they were sampled and ``tail`` just before ``offset`` (read on past this
        tail's own reads by another process: steptable.ingest.splitread): what :meth:`poll` tells an append from a
        rewrite by."""
        try:
            with open_binary(self.path) as f:
                st = os.fstat(f.fileno())
                if (st.st_dev, st.st_ino) != self._ident or st.st_size < offset or not self._same_bytes(f):
                    return False
                f.seek(offset - len(tail))
                return f.read(len(tail)) == tail
        except OSError:
            return False

    @property
    def pending(self) -> int:
        """Bytes of a partial last line waiting for their newline."""
        return len(self._pending)

    def final_line(self) -> Lines | None:
        """The partial last line as if its newline had come (for one-shot reads of a file that will not grow;
        some writers never end the file with a newline). Nothing is consumed: a follower keeps waiting."""
        if not self._pending or self._skipping or not self._pending.strip():
            return None
        return Lines(self._pending + b"\n", self._start, self)

    @property
    def opened(self) -> bool:
        """The file has been opened and read at least once."""
        return self._ident is not None

    def poll(self) -> Iterator[TailEvent]:
        """New complete lines since the last poll (a ``RESET`` first when the file must be re-read from 0)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._ident is not None:
                self.missing = True
                yield from self._drain_moved()  # renamed away, its successor not made yet: read it to its end now
            return
        except OSError as e:
            yield from self._fail(f"cannot stat: {e.strerror or e}")
            return
        if not stat.S_ISREG(st.st_mode):
            yield from self._fail("not a regular file")
            return
        sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if sig == self._sig:
            return
        try:
            f = open_binary(self.path)
        except FileNotFoundError:
            return
        except OSError as e:
            yield from self._fail(f"unreadable ({e.strerror or e})")
            return
        with f:
            # the file opened, not the one stat saw: a rotation in between must read as one, not as a rewrite
            st = os.fstat(f.fileno())
            sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            ident = (st.st_dev, st.st_ino)
            known = self._ident is not None
            if known and ident != self._ident and (st.st_size < self.offset or not self._same_bytes(f)):
                # A new file at the path. Renamed away (logrotate's metrics.jsonl -> metrics.jsonl.1) the old one is
                # still beside it: read it to its end first, then the new one from its start, as the same run.
                moved = yield from self._drain_moved()
                if not moved:  # deleted or replaced: what a copy of it holds is read, what came after may be lost
                    moved = yield from self._drain_copy()
                    if self.offset:
                        yield Lost(self.offset, "deleted or replaced")
                # files made at the path after our last read and rotated away before we opened them
                made = yield from self._drain_unseen(ident)
                self._restart()
                if not (moved or made):  # deleted, or replaced by another file: the run is read again from the new one
                    yield RESET
            elif known and (st.st_size < self.offset or not self._same_bytes(f)):
                in_place = st.st_size >= self.offset
                copied = yield from self._drain_copy()  # logrotate's copytruncate: the rest is in the copy
                if self.offset:  # (rows written between the copy and the truncation are in neither)
                    yield Lost(self.offset, "truncated or rewritten")
                self._restart()
                if not copied:  # truncated with no copy beside it (verl's relaunch): the run is read again
                    yield RESET_IN_PLACE if in_place else RESET
            self._ident = ident
            self.missing = False
            self.error = None
            f.seek(self.offset)
            yield from self._read(f)
            if len(self._head) < HEAD and self.offset > len(self._head):
                f.seek(0)
                self._head = f.read(min(self.offset, HEAD))
            if self._tail and (not self._samples or self._samples[-1][0] != self.offset):
                self._samples.append((self.offset, self._tail))
        if self.stop is None:  # (stopped early: the next poll reads on, whatever the file's stat says)
            self._sig = sig

    def _drain_moved(self) -> Generator[TailEvent, None, bool]:
        """Read the rest of the file we were reading if it was renamed within its directory
        (steptable.ingest.files.rotated.moved); True (the generator's value) when it was found."""
        if self._ident is None:
            return False
        return (yield from self._drain(rotated.moved(self.path, self._ident, self.offset, self._same_bytes,
                                                     open_binary)))

    def _drain_copy(self) -> Generator[TailEvent, None, bool]:
        """Read the rest of the file we were reading from a copy of it beside it (logrotate's copytruncate:
        steptable.ingest.files.rotated.copy_of); True (the generator's value) when one was found."""
        if self._ident is None or not self.offset:
            return False
        return (yield from self._drain(rotated.copy_of(self.path, self.offset, self._same_bytes, open_binary)))

    def _drain(self, f: BinaryIO | None) -> Generator[TailEvent, None, bool]:
        """Read ``f`` on from our offset and close it; False for no file."""
        if f is None:
            return False
        with f:
            f.seek(self.offset)
            yield from self._read(f)
        return True

    def _drain_unseen(self, new: tuple[int, int]) -> Generator[TailEvent, None, bool]:
        """Read whole, oldest first, the files a writer made at our path after we last read it and that were renamed
        away before we ever opened them (steptable.ingest.files.rotated.made_since); True (the generator's value)
        when one was read."""
        if self._sig is None:
            return False
        made = rotated.made_since(self.path, self._sig[3], new, self._same_bytes, open_binary)
        try:
            for f in made:
                self._restart()
                f.seek(0)
                yield from self._read(f)
        finally:
            for f in made:
                f.close()
        return bool(made)

    def _fail(self, reason: str) -> Iterator[BadLine]:
        if reason != self.error:
            self.error = reason
            yield BadLine(self.label, 0, reason)

    def _same_bytes(self, f: BinaryIO) -> bool:
        """Does ``f`` hold the bytes we read where we looked? (The same file, or a copy of it that may be longer.)"""
        if self._head:
            f.seek(0)
            if f.read(len(self._head)) != self._head:
                return False
        for end, sample in (*self._samples, (self.offset, self._tail)):
            if sample:
                f.seek(end - len(sample))
                if f.read(len(sample)) != sample:
                    return False
        return True

    def _read(self, f: BinaryIO) -> Iterator[TailEvent]:
        self._reading = f
        try:
            yield from self._read_in(f)
        finally:
            self._reading = None

    def _read_in(self, f: BinaryIO) -> Iterator[TailEvent]:
        while True:
            data = f.read(self.block if self.stop is None else max(0, min(self.block, self.stop - self.offset)))
            if not data:
                return
            base = self.offset  # file offset of data[0]
            self.offset += len(data)
            self._tail = data[-TAIL:] if len(data) >= TAIL else (self._tail + data)[-TAIL:]
            if self._skipping:  # inside an over-long line: drop bytes up to its newline
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                self._skipping = False
                self._line_done(base + nl + 1, self._skip_lineno)
                data, base = data[nl + 1 :], base + nl + 1
            if not self._pending and data[:1] == b"\0":
                # A run of NULs where a line starts: the hole a writer without O_APPEND leaves after a copytruncate
                # rotation (it goes on at its old offset). Not part of the next line, however long the hole.
                kept = data.lstrip(b"\0")
                base += len(data) - len(kept)
                data = kept
                self._start = base
                if not data:
                    continue
            if self._pending:
                nl = data.find(b"\n")
                if nl < 0:
                    if len(self._pending) + len(data) >= self.max_line:
                        yield self._skip_long()
                    else:
                        self._pending += data
                    continue
                if len(self._pending) + nl >= self.max_line:
                    lineno = self.line_at(self._start) + 1
                    yield self._too_long(lineno)
                    self._pending = b""
                    self._line_done(base + nl + 1, lineno)
                    data, base = data[nl + 1 :], base + nl + 1
                else:
                    base -= len(self._pending)
                    data = self._pending + data
                    self._pending = b""
            end = data.rfind(b"\n") + 1
            pending_at = None
            if end < len(data):
                # NULs where the unfinished line starts: a copytruncate hole that begins inside this block
                self._pending = data[end:].lstrip(b"\0")
                pending_at = base + len(data) - len(self._pending)
                data = data[:end]
            if data:
                yield Lines(data, base, self)
                self._start = base + len(data)
            if pending_at is not None:
                self._start = pending_at

    def _line_done(self, offset: int, lineno: int) -> None:
        """A skipped line ends just before ``offset``; it was line ``lineno``."""
        self._start = offset
        self._mark = (offset, lineno)

    def _too_long(self, lineno: int) -> BadLine:
        mib = self.max_line / (1024 * 1024)
        size = f"{mib:g} MiB" if mib >= 1 else f"{self.max_line} bytes"
        return BadLine(self.label, lineno, f"line of {size} or more skipped")

    def _skip_long(self) -> BadLine:
        self._pending = b""
        self._skipping = True
        self._skip_lineno = self.line_at(self._start) + 1
        return self._too_long(self._skip_lineno)
