"""ByteTail: a growing binary file read by byte offset, for readers of record files (W&B, TensorBoard).

A poll stats the file and reads what was written since the last one, appended to ``pending`` (the bytes not yet
taken by the reader: a record cut in half by a concurrent write waits there for its second half). The reader takes
whole records from the front with :meth:`consume`. It is a *reset* (read again from byte 0) when the file shrank
below what was read or its inode changed (a new run written over the old name). The file is opened per poll, never
kept open.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: bytes read at most per :meth:`ByteTail.read` (a 300 MB run is read in a few polls of bounded memory)
CHUNK = 64 << 20


class ByteTail:
    def __init__(self, path: Path, chunk: int = CHUNK) -> None:
        self.path = path
        self.chunk = chunk
        self.pending = b""
        self.base = 0  # file offset of pending[0]
        self.read_to = 0  # file offset read up to (base + len(pending))
        self.missing = False
        self.opened = False
        self._ino: tuple[int, int] | None = None

    @property
    def offset(self) -> int:
        """The file offset of the first byte not yet taken by the reader."""
        return self.base

    def read(self) -> tuple[bool, bool]:
        """Read what is new (at most ``chunk`` bytes): (reset, grew). ``reset``: start over from the file's first
        byte (``pending`` now holds it). Raises OSError when the file exists but cannot be read."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.missing = True
            return False, False
        self.missing = False
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file", str(self.path))
        if (st.st_dev, st.st_ino) == self._ino and st.st_size == self.read_to:
            return False, False  # (nothing new: a quiet poll costs no open)
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:  # deleted or renamed away since the stat
            self.missing = True
            return False, False
        with f:
            # the file opened, not the one stat saw: one put in its place in between is read as a new file
            st = os.fstat(f.fileno())
            ino = (st.st_dev, st.st_ino)
            reset = self._ino is not None and (ino != self._ino or st.st_size < self.read_to)
            if reset:
                self.pending, self.base, self.read_to = b"", 0, 0
            self._ino = ino
            if st.st_size <= self.read_to:
                return reset, False
            self.opened = True
            f.seek(self.read_to)
            data = f.read(min(self.chunk, st.st_size - self.read_to))
        self.pending = self.pending + data if self.pending else data
        self.read_to += len(data)
        return reset, bool(data)

    @property
    def more(self) -> bool:
        """The last read stopped at ``chunk`` bytes: the file holds more now."""
        try:
            return os.stat(self.path).st_size > self.read_to
        except OSError:
            return False

    def consume(self, n: int) -> None:
        """The reader took the first ``n`` bytes of ``pending`` (whole records)."""
        if n:
            self.pending = self.pending[n:]
            self.base += n
