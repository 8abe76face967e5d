"""Where the rest of a tailed file went once the file at its path is no longer it.

Three places, each looked for with one directory listing beside the path:

- :func:`moved`: the file itself, renamed within its directory (logrotate's ``metrics.jsonl`` -> ``metrics.jsonl.1``),
  found by its inode;
- :func:`copy_of`: a copy made before the file was truncated (logrotate's copytruncate: ``metrics.jsonl.1`` or
  ``metrics.jsonl-DATE``), the newest file named after ours that holds what was read;
- :func:`made_since`: files a writer made at the path after the last read and renamed away before any read (a file
  rotated twice between two polls).

Lookups only: each returns files already opened and judged on their descriptors (the file judged is the file read,
whatever is renamed meanwhile); the caller (steptable.ingest.files.tail.FileTail) reads and closes them. ``holds``
says whether an opened file holds the bytes read so far where they were read; ``opener`` opens a path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import BinaryIO

Holds = Callable[[BinaryIO], bool]
Opener = Callable[[Path], BinaryIO]
Ident = tuple[int, int]

#: bytes of a file's start read to tell text from a compressed or binary file
HEAD = 512
#: what a rotation adds to a file's name: logrotate's ``.1`` (``.1.gz``), its dateext ``-20261128``
_ROTATED = re.compile(r"[.-][0-9][\w.-]*")


def _text(head: bytes) -> bool:
    """Do the first bytes of a file read as text (not a compressed or binary file)?"""
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start >= len(head) - 3  # (a character cut by the end of the sample)
    return True


def _first(paths: list[Path], opener: Opener, fits: Callable[[BinaryIO], bool]) -> BinaryIO | None:
    """The first of ``paths`` that opens and ``fits``, open; None when none does."""
    for path in paths:
        try:
            f = opener(path)
        except OSError:
            continue
        try:
            if fits(f):
                return f
        except OSError:
            pass
        f.close()
    return None


def moved(path: Path, ident: Ident, size: int, holds: Holds, opener: Opener) -> BinaryIO | None:
    """The file ``ident`` (that was at ``path``, ``size`` bytes of it read) under another name in its directory,
    still holding what was read, open; None when it is not there (deleted, or another file got its inode number)."""
    try:
        with os.scandir(path.parent) as it:
            found = [Path(e.path) for e in it if e.inode() == ident[1] and e.name != path.name]
    except OSError:
        return None

    def same(f: BinaryIO) -> bool:
        st = os.fstat(f.fileno())
        return (st.st_dev, st.st_ino) == ident and st.st_size >= size and holds(f)

    return _first(found, opener, same)


def copy_of(path: Path, size: int, holds: Holds, opener: Opener) -> BinaryIO | None:
    """The newest file beside ``path`` whose name starts with its name and that holds what was read (``size``
    bytes of it), open; None when there is none."""
    try:
        with os.scandir(path.parent) as it:
            found = [(e.stat().st_mtime_ns, Path(e.path)) for e in it
                     if e.name.startswith(path.name) and e.name != path.name and e.is_file()]
    except OSError:
        return None
    newest = [p for _, p in sorted(found, reverse=True)]
    return _first(newest, opener, lambda f: os.fstat(f.fileno()).st_size >= size and holds(f))


def made_since(path: Path, since_ns: int, new: Ident, holds: Holds, opener: Opener) -> list[BinaryIO]:
    """Open, oldest first, the files beside ``path`` made there after ``since_ns`` (the mtime of the last read) and
    renamed away before any read: named as a rotation of it (``metrics.jsonl.3``, ``metrics.jsonl-20261128``),
    last written since then, not empty, not ``new`` (the file at the path now), text (a compressed rotation is not),
    and not holding what was read (an inode number is used again once its file is deleted). The caller closes
    them."""
    try:
        with os.scandir(path.parent) as it:
            found = []
            for e in it:
                if not e.name.startswith(path.name) or not _ROTATED.fullmatch(e.name[len(path.name):]) \
                        or not e.is_file():
                    continue
                st = e.stat()
                ident = (st.st_dev, st.st_ino)
                if st.st_mtime_ns >= since_ns and st.st_size and ident != new:
                    found.append((st.st_mtime_ns, ident, Path(e.path)))
    except OSError:
        return []
    made: list[BinaryIO] = []
    for _, ident, p in sorted(found):
        f = _first([p], opener, partial(_made_after, ident=ident, holds=holds))
        if f is not None:
            made.append(f)
    return made


def _made_after(f: BinaryIO, ident: Ident, holds: Holds) -> bool:
    """Is ``f`` still ``ident``, text, and not holding what was read (a copy of the old file)?"""
    st = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino) == ident and _text(f.read(HEAD)) and not holds(f)
