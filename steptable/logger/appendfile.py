"""The run's file as a path and an open descriptor: opening it for appending without ever stalling the training
loop, and telling whether the path still leads to the file that is open.

:func:`open_append` gives a descriptor that appends to a path (created if missing) and that cannot block (a FIFO in
the file's place). The rest answer, for a file opened at ``path`` whose (device, inode) is ``ident``, what became of
it since, each with one or two stats and never raising: :func:`replaced` (the path no longer leads to it),
:func:`moved` (rotated: renamed away inside the directory it was opened in, which now holds another file at the
path; a directory moved or a symlink re-pointed is no rotation), :func:`ends_line` (its last byte is a newline, for
the first row to be appended on a line of its own). :func:`dir_id` is what a directory is compared by. Used by
steptable.logger.writer (the JSONL rows) and steptable.logger.sinks (the verbose log file).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


def open_append(path: str | os.PathLike[str]) -> int:
    """A descriptor appending to ``path`` (created if missing) that cannot stall the training loop.

    A FIFO in the file's place would block a plain open() until a reader comes, and a write while its reader is
    slow: opened non-blocking, the open fails at once (ENXIO) when nobody reads and a full pipe refuses the write
    (EAGAIN), both ordinary failures that keep the row for retry. A regular file is made blocking again.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)  # (Windows: no newline translation under the bytes we count)
    fd = os.open(path, flags, 0o666)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode) and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def dir_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the directory (or file) at ``path`` (symlinks followed), None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def moved(path: Path, fh: BinaryIO, ident: tuple[int, int] | None, opened_in: tuple[int, int] | None) -> bool:
    """Was the open file ``fh`` (``ident``) rotated: renamed away (or replaced) inside the directory it was opened
    in (``opened_in``: its :func:`dir_id` then), which still holds ``path``? Asked where a check finds that the path
    does not lead to the open file, so the rows from that check on go to the new file; not of a deleted file (the
    check after the write reopens that one). A directory moved or a symlink re-pointed (``outputs/latest`` to the
    next run) is not a rotation: the rows go on into the open file, never into another run's."""
    try:
        now = os.stat(path)
        if (now.st_dev, now.st_ino) == ident:
            return False
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError:  # (EACCES, EIO: where the path leads is not known, which is no sign of a rotation)
        return False
    try:
        st = os.fstat(fh.fileno())
    except OSError:
        return False
    return st.st_nlink > 0 and opened_in is not None and dir_id(path.parent) == opened_in and replaced(path, st)


def replaced(path: Path, st: os.stat_result) -> bool:
    """Does ``path`` no longer lead to the open file whose stat is ``st``? (/dev/stdout on a deleted file still
    does.)"""
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        now = os.stat(path)
    except OSError:
        return True
    return (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)


def ends_line(path: Path, ident: tuple[int, int] | None) -> bool:
    """Does the file opened at ``path`` (``ident``) end with a newline? True when it cannot be read (nothing to
    repair); False when the path no longer leads to it (rotated right after the open): a blank line at worst, never
    a row glued on."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) == ident:
                f.seek(-1, os.SEEK_END)
                return f.read(1) == b"\n"
    except FileNotFoundError:
        pass
    except OSError:
        return True
    return False
