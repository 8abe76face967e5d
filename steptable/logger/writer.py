"""RunWriter: append raw rows to ``<run_dir>/metrics.jsonl`` as strict JSON, never raising into the training loop.

Each row is one line written with a single write call and flushed, so a crash leaves at most one partial last line.
Non-finite floats are written as ``null`` (RFC 8259 has no NaN). Rows that cannot be written (disk full, permission,
a vanished directory) are kept and retried on the next row and at close; the failure is reported once.

Whether the path still leads to the open file (a log rotation renamed it, someone deleted it) is a human-timescale
event, checked on a clock rather than at every row: at the first row written :data:`CHECK_S` seconds or more after
the last check (a monotonic clock read per row), at every (re)open (so after any write error, which closes the
file) and at close. A row written within that interval after a rotation or a deletion goes where the rows before it
went (into the renamed file, or with the deleted one); the first row after the check goes to the file at the path.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from time import monotonic
from typing import Any, BinaryIO

from steptable.ingest.files.tail import MAX_LINE
from steptable.logger.appendfile import dir_id, ends_line, moved, open_append, replaced
from steptable.logger.rowjson import encode_row
from steptable.table.formatting import sanitize


def error_text(e: BaseException) -> str:
    """An exception as a message says it: ``repr`` made inert (its text may quote a path or a value), or its type's
    name when even ``repr`` raises (a metric object's exception, handled where the loop must survive anything)."""
    try:
        return sanitize(repr(e))
    except Exception:
        return type(e).__name__


#: rows kept for retry while the file cannot be written; beyond this (or MAX_PENDING_BYTES) the oldest are dropped
MAX_PENDING = 100_000
MAX_PENDING_BYTES = 256 << 20
#: seconds between two checks that the path still leads to the open file: rotations and deletions are made by
#: people and cron jobs, and at most this much of the rows after one lands in the renamed (or deleted) file; the
#: check's stat (about 9 us in a training loop, its caches cold) is paid 4 times a second, 0.004% of the run.
CHECK_S = 0.25


def absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute (a later os.chdir in the training script must not move the file); a relative one as
    given where the working directory is gone (deleted under the job): nothing can be opened there, and the writer
    says so at the first row rather than the logger's constructor raising into the training script."""
    try:
        return Path(path).absolute()
    except OSError:
        return Path(path)


class RunWriter:
    """Appends rows to one JSONL file; reports I/O failures through ``warn`` once per failure episode."""

    def __init__(self, path: str | os.PathLike[str], warn: Callable[[str], None]) -> None:
        self.path = absolute(path)
        self._path = str(self.path)  # (os.stat of a str: a Path costs its conversion on every row)
        self._shown = sanitize(str(self.path))  # the path in messages: a run_dir's text can hold escape sequences
        self._warn = warn
        self._fh: BinaryIO | None = None
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self._size = 0  # the file's size after our last write (to settle a write cut short by a signal)
        self._ident: tuple[int, int] | None = None  # (device, inode) of the open file
        self._dir: tuple[int, int] | None = None  # (device, inode) of the directory the open file was opened in
        self._real: str | None = None  # that directory's path with every link resolved
        # After a short write: (device, inode, size after it, the whole row). The rest of that row is _pending[0]
        # and may only go right after its start, in the same file; anywhere else the whole row is written again.
        self._partial: tuple[int, int, int, bytes] | None = None
        self.dropped = 0
        self.written = 0
        # times the file was found deleted or moved away mid-run: the rows before that are not in the file at the path
        self.deleted = 0
        self.moved = 0
        self._failing: str | None = None
        self._encode_reported = False
        self._long_reported = False
        self._close_reported = False
        self._checked = -math.inf  # monotonic() of the last check that the path leads to the open file

    @property
    def pending(self) -> int:
        """Rows queued and not yet written."""
        return len(self._pending)

    def write(self, record: Mapping[str, Any]) -> bool:
        """Queue one row and write everything queued. True when nothing is left pending."""
        try:
            line = encode_row(record)
        except Exception as e:  # jsonable() leaves nothing json.dumps refuses; this is the last guard
            if not self._encode_reported:
                self._encode_reported = True
                self._warn(f"a row could not be encoded ({error_text(e)}); skipped (reported once)")
            return not self._pending
        if len(line) > MAX_LINE and not self._long_reported:  # (the line's newline is not counted against it)
            self._long_reported = True
            self._warn(f"a row of {len(line) / (1 << 20):.0f} MiB was written to {self._shown}; readers skip a line of "
                       f"{MAX_LINE >> 20} MiB or more, so tail, watch and summary leave that row out: a large value "
                       "belongs in a file of its own (reported once)")
        pending = self._pending
        pending.append(line)
        self._pending_bytes += len(line)
        fh = self._fh
        if len(pending) == 1 and fh is not None and monotonic() - self._checked < CHECK_S:
            # The steady state (the file open, no other row waiting, no check due): the row's one write, counted.
            try:
                n = fh.write(line)  # unbuffered: one write(2)
                if n != len(line):
                    self._cut(fh, line, n)
                pending.popleft()
                self._pending_bytes -= n
                self._size += n
                self.written += 1
                return True
            except (OSError, ValueError) as e:
                return self._failed(e)
            except BaseException:  # Ctrl-C (or SystemExit from a signal handler) around the write
                self._settle(line)
                raise
        if len(pending) > 1:  # (rows wait only while writing fails)
            self._drop_oldest()
        return self.flush()

    def _drop_oldest(self) -> None:
        """Drop the oldest waiting rows beyond MAX_PENDING rows or MAX_PENDING_BYTES."""
        keep = 2 if self._partial is not None else 1  # never drop the rest of a row whose start is in the file
        while len(self._pending) > keep and (
            len(self._pending) > MAX_PENDING or self._pending_bytes > MAX_PENDING_BYTES
        ):
            victim = self._pending[keep - 1]
            del self._pending[keep - 1]
            self._pending_bytes -= len(victim)
            self.dropped += 1

    def flush(self) -> bool:
        """Try to write every pending row. Never raises."""
        reopened = False
        while self._pending:
            data = self._pending[0]
            try:
                fh = self._fh or self._open()
                # Does the path lead to the open file now? Asked once CHECK_S seconds have passed since the last
                # check (see the module): within them (the common case: a clock read a row, nothing else) the row
                # goes into the open file. Where it does not, moved() and the check after the write tell a rotation
                # from a deletion.
                now = monotonic()
                if now - self._checked < CHECK_S:
                    here = True
                else:
                    self._checked = now
                    try:
                        st = os.stat(self._path)
                        here = (st.st_dev, st.st_ino) == self._ident
                    except OSError:
                        here = False
                # (a log rotation renamed it, or the run directory was moved): the path wins
                if not here and moved(self.path, fh, self._ident, self._dir):
                    self._close_fh()
                    self.moved += 1
                    self._warn(f"{self._shown} was moved or replaced during the run (a log rotation?); rows from this "
                               "one on go to the file at that path")
                    fh = self._open()
                data = self._pending[0]  # opening may have put a cut row back whole
                n = fh.write(data)  # unbuffered: one write(2) per row
                if n is None or n < len(data):
                    self._cut(fh, data, n)
                if not here:
                    try:
                        st = os.fstat(fh.fileno())
                    except OSError:  # (ESTALE) the row is in the open file all the same: the check made next row
                        self._checked, here = -math.inf, True
                if here:
                    size = self._size + n
                else:
                    if st.st_nlink == 0 and replaced(self.path, st):  # the file (or its directory) was deleted
                        self._close_fh()
                        if reopened:
                            raise OSError("the new file vanished too")
                        reopened = True
                        self.deleted += 1
                        self._warn(f"{self._shown} was deleted during the run; rows from this one on go to a new "
                                   "file")
                        continue
                    size = st.st_size
                self._pending.popleft()
                self._pending_bytes -= len(data)
                self._size = size
                self._partial = None
                self.written += 1
            except (OSError, ValueError) as e:
                return self._failed(e)
            except BaseException:  # Ctrl-C (or SystemExit from a signal handler) between the write and its bookkeeping
                self._settle(data)
                raise
        if self._failing is not None:
            self._failing = None
            self._warn(f"writing {self._shown} works again; late rows written" + self._dropped_note())
        return True

    def _cut(self, fh: BinaryIO, data: bytes, n: int | None) -> None:
        """A short write of the first pending row, ``data`` (rare: a full disk can cut a row): the rest kept, so the
        line completes later (where its start is). Raises the OSError that says so."""
        if n:
            cut = os.fstat(fh.fileno())
            whole = self._partial[3] if self._partial is not None else data
            self._partial = (cut.st_dev, cut.st_ino, cut.st_size, whole)
            self._pending[0] = data[n:]
            self._pending_bytes -= n
        raise OSError(f"short write ({n or 0} of {len(data)} bytes)")

    def _failed(self, e: OSError | ValueError) -> bool:
        """Writing failed with ``e``: the file closed (the next row opens the file at the path again: a check), the
        failure said once. False (rows are kept)."""
        self._close_fh()
        why = sanitize(str(e))  # (an OSError's text names a path too, and ours the run directory's links)
        self._fail(f"cannot write {self._shown} ({why}); {len(self._pending)} row(s) kept for retry")
        return False

    def why_missing(self, logged: int) -> str:
        """Why the file holds fewer than the ``logged`` rows given to it, as this writer saw it."""
        name = self.path.name
        whys = [
            *([f"{name} was deleted during the run"] if self.deleted else []),
            *([f"{name} was moved or replaced during the run"] if self.moved else []),
            *([f"{logged - self.written} could not be written"] if self.written < logged else []),
        ]
        return "; ".join(whys) or f"the rest are not in {name}"

    def _dropped_note(self) -> str:
        return f", {self.dropped} oldest row(s) dropped while it failed" if self.dropped else ""

    def _fail(self, text: str) -> None:
        if self._failing is None:
            self._failing = text
            self._warn(text)

    def _settle(self, data: bytes) -> None:
        """After an interrupted write: if ``data`` reached the file whole, it is not pending any more (close()
        would write it a second time). Decided by the file's size and its last bytes (another writer may have
        appended meanwhile: then the row stays pending, a duplicate being better than a loss). Never raises."""
        try:
            if self._fh is None or not self._pending or self._pending[0] is not data:
                return  # not written yet, or already accounted for
            size = os.fstat(self._fh.fileno()).st_size
            if size >= self._size + len(data):
                with open(self.path, "rb") as f:
                    f.seek(size - len(data))
                    landed = f.read(len(data)) == data
                if landed:
                    self._pending.popleft()
                    self._pending_bytes -= len(data)
                    self.written += 1
            self._size = size
        except Exception:
            pass

    def _open(self) -> BinaryIO:
        if self._fh is None:
            real = os.path.realpath(self.path.parent)
            if self._real is not None and real != self._real:
                # a link on the way was re-pointed (outputs/latest -> the next run) after this run's file went: its
                # rows must not land in another run's file (kept for retry, counted at close)
                raise OSError(f"the run directory now leads to {real}, another directory than the run's {self._real}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(open_append(self.path), "ab", buffering=0)
            opened = os.fstat(fh.fileno())
            if self._real is not None and dir_id(Path(real, self.path.name)) != (opened.st_dev, opened.st_ino):
                fh.close()  # (the link re-pointed between the look above and the open: the file is another run's)
                raise OSError(f"the run directory now leads to another directory than the run's {self._real}")
            self._ident = (opened.st_dev, opened.st_ino)
            self._checked = monotonic()  # (the path leads to the file just opened)
            self._dir = dir_id(Path(real))  # (the directory it was opened in: not where a link leads by now)
            self._real = real
            try:
                st = os.fstat(fh.fileno())
                self._size = st.st_size
                if self._partial is not None and self._partial[:3] != (st.st_dev, st.st_ino, st.st_size):
                    self._restart_partial()  # the file changed under the cut row: write it whole
                if self._partial is None and stat.S_ISREG(st.st_mode) and st.st_size \
                        and not ends_line(self.path, self._ident):
                    # A crash (or a full disk, in an earlier run) left a partial last line: end it, so the first
                    # row of this run is not glued to it (the partial line stays one bad line, not two).
                    fh.write(b"\n")
                    self._size += 1
            except BaseException:
                fh.close()
                raise
            self._fh = fh
        return self._fh

    def _restart_partial(self) -> None:
        assert self._partial is not None
        whole = self._partial[3]
        self._pending_bytes += len(whole) - len(self._pending[0])
        self._pending[0] = whole
        self._partial = None

    def _close_fh(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError as e:  # NFS, a quota: close(2) reports the rows the cache could not write
                if e.errno != errno.EBADF and not self._close_reported:  # (EBADF: nothing was open to close)
                    self._close_reported = True
                    self._warn(f"closing {self._shown} failed ({sanitize(str(e))}); rows written to it may be "
                               "missing from it (reported once)")

    def close(self) -> None:
        """Try the pending rows a last time, report those that could not be written, check a last time that the
        path leads to the open file (a rotation or a deletion since the last check is counted and said), and close
        the file."""
        self._checked = -math.inf
        self.flush()
        if self._pending:
            self._warn(f"{len(self._pending)} row(s) could not be written to {self._shown}" + self._dropped_note())
        elif self._fh is not None and self._checked == -math.inf:  # (no row made the check: made here)
            self._last_check(self._fh)
        self._close_fh()

    def _last_check(self, fh: BinaryIO) -> None:
        """At close, every row written: was the open file rotated or deleted since the last check? Counted and said
        as a check at a row does; the rows written since it are where they went (the moved file, or gone with the
        deleted one). Never raises."""
        try:
            try:
                st = os.stat(self._path)
                if (st.st_dev, st.st_ino) == self._ident:
                    return
            except OSError:
                pass
            if moved(self.path, fh, self._ident, self._dir):
                self.moved += 1
                self._warn(f"{self._shown} was moved or replaced during the run (a log rotation?); its last rows "
                           "are in the moved file")
                return
            opened = os.fstat(fh.fileno())
            if opened.st_nlink == 0 and replaced(self.path, opened):
                self.deleted += 1
                self._warn(f"{self._shown} was deleted during the run; its last rows went with it")
        except OSError:
            pass
