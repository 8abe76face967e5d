"""The files of one W&B run that later processes resumed. Pure (a directory listing).

``wandb.init(id=..., resume="allow" | "must")`` in a new process (a job requeued after a preemption, a crash resumed
from its checkpoint) does not append to the first process's file: it makes a directory of its own beside the first,
``run-<time>-<id>`` (``offline-run-<time>-<id>`` offline), with its own ``run-<id>.wandb`` holding what that process
logged, from the step it resumed at. They are one run: read as one (the pieces in the order of their processes,
the later one's rows replacing those it logged again), it is one seed to ``compare``, one line to ``runs``, and its
resume is told as a resume.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Final

#: a W&B run directory's name: ``run-20261130_162857-<id>`` (``offline-`` before it when offline)
_RUN_DIR: Final = re.compile(r"^(?:offline-)?run-(\d{8}_\d{6})-(.+)$")
#: entries of a wandb directory looked at for the pieces of a run (a directory of many thousand runs is read no
#: further than this)
MAX_ENTRIES = 100_000
#: wandb directories whose listing is kept (by its modification time) between calls: discovery asks once a run file
MAX_KEPT = 64
#: a listing taken this soon (seconds) after its directory's last change may miss a directory made within the same
#: clock tick: it is kept for ``RECENT_KEEP`` seconds only, then taken again
RECENT_S = 1.0
RECENT_KEEP = 0.25

_kept: dict[str, tuple[int, float, dict[str, list[tuple[str, str]]]]] = {}


def run_dir_id(name: str) -> tuple[str, str] | None:
    """(time, run id) of a W&B run directory's ``name``; None for any other name."""
    m = _RUN_DIR.match(name)
    return (m.group(1), m.group(2)) if m else None


def pieces(path: Path) -> list[Path]:
    """The run files of ``path``'s W&B run, the first process's first: the ``run-<id>.wandb`` of every directory
    beside ``path``'s own named for the same id, by the time in their names (offline and online alike). ``[path]``
    where its directory is not named so, holds another file name, or its parent cannot be listed."""
    run_dir, name = os.path.split(path)
    parent, dir_name = os.path.split(run_dir)
    got = run_dir_id(dir_name)
    if got is None or name != f"run-{got[1]}.wandb":
        return [path]
    by_id = _listing(parent or os.curdir)
    found = by_id.get(got[1], []) if by_id is not None else []
    if len(found) < 2:
        return [path]
    up = path.parent.parent
    out = []
    for _, d in found:
        p = path if d == dir_name else up / d / name
        if p is path or os.path.isfile(p):  # (a directory made before its file: not a piece yet)
            out.append(p)
    return out


def _listing(parent: str) -> dict[str, list[tuple[str, str]]] | None:
    """The W&B run directories in ``parent`` by run id, each as (time, name) in order; None where it cannot be
    listed. Kept while the directory is unchanged: a sweep of a thousand runs in one wandb directory is listed once
    a discovery, not once a run."""
    key = os.fspath(parent)  # (as given: the directory's time tells a listing of another apart)
    try:
        mtime = os.stat(key).st_mtime_ns
        now = time.time()
        if (hit := _kept.get(key)) is not None and hit[0] == mtime and now < hit[1]:
            return hit[2]
        by_id: dict[str, list[tuple[str, str]]] = {}
        with os.scandir(key) as it:
            for i, e in enumerate(it):
                if i >= MAX_ENTRIES:
                    break
                if (got := run_dir_id(e.name)) is not None:
                    by_id.setdefault(got[1], []).append((got[0], e.name))
    except OSError:
        return None
    for runs in by_id.values():
        runs.sort()
    if len(_kept) >= MAX_KEPT and key not in _kept:
        del _kept[next(iter(_kept))]
    _kept[key] = (mtime, now + RECENT_KEEP if now - mtime / 1e9 < RECENT_S else float("inf"), by_id)
    return by_id
