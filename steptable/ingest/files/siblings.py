"""When a run's file, and the files beside it, were last written: a sign that a run which stopped writing rows still
runs (its verbose log, its checkpoints), and when a process that stopped without a word was last heard of."""

from __future__ import annotations

import os
from pathlib import Path

#: directory entries looked at (a directory of thousands of runs is not a run's own directory)
MAX_ENTRIES = 256


def newest_sibling(path: str | os.PathLike[str]) -> float | None:
    """The newest modification time of a regular file beside ``path`` (not ``path`` itself, not a hidden file),
    among the first ``MAX_ENTRIES`` entries of its directory; None when there is none or it cannot be read."""
    p = Path(path)
    newest: float | None = None
    try:
        with os.scandir(p.parent) as it:
            for i, e in enumerate(it):
                if i >= MAX_ENTRIES:
                    break
                if e.name == p.name or e.name.startswith("."):
                    continue
                try:
                    if e.is_file():
                        t = e.stat().st_mtime
                        newest = t if newest is None or t > newest else newest
                except OSError:
                    continue
    except OSError:
        return None
    return newest


def last_change(path: str | os.PathLike[str]) -> float | None:
    """When ``path`` itself last changed (its modification time); None where it cannot be told."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
