"""Opening a run's file only where it is a regular file: a FIFO named like a run file would block the open (a whole
sweep's summary waiting on it for good), a device such as /dev/zero never end a read."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened to read bytes. Opened without blocking and checked before a byte is read: OSError ("not a
    regular file") for a FIFO, a device, a socket or a directory; the open's own OSError otherwise."""
    fd = os.open(path, _FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file", str(path))
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
