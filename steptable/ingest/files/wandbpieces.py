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
from pathlib import Path
from typing import Final

#: a W&B run directory's name: ``run-20261130_162857-<id>`` (``offline-`` before it when offline)
_RUN_DIR: Final = re.compile(r"^(?:offline-)?run-(\d{8}_\d{6})-(.+)$")
#: entries of a wandb directory looked at for the pieces of a run (a directory of many thousand runs is read no
#: further than this)
MAX_ENTRIES = 10_000


def run_dir_id(name: str) -> tuple[str, str] | None:
    """(time, run id) of a W&B run directory's ``name``; None for any other name."""
    m = _RUN_DIR.match(name)
    return (m.group(1), m.group(2)) if m else None


def pieces(path: Path) -> list[Path]:
    """The run files of ``path``'s W&B run, the first process's first: the ``run-<id>.wandb`` of every directory
    beside ``path``'s own named for the same id, by the time in their names (offline and online alike). ``[path]``
    where its directory is not named so, holds another file name, or its parent cannot be listed."""
    d = path.parent
    got = run_dir_id(d.name)
    if got is None or path.name != f"run-{got[1]}.wandb":
        return [path]
    run_id = got[1]
    found: list[tuple[str, str]] = []
    try:
        with os.scandir(d.parent) as it:
            for i, e in enumerate(it):
                if i >= MAX_ENTRIES:
                    break
                other = run_dir_id(e.name) if e.name.endswith(run_id) else None
                if other is not None and other[1] == run_id and e.name != d.name and e.is_dir(follow_symlinks=False):
                    found.append((other[0], e.name))
    except OSError:
        return [path]
    if not found:
        return [path]
    found.append((got[0], d.name))
    out = []
    for _, name in sorted(found):
        p = d.parent / name / path.name
        if p == path or os.path.isfile(p):  # (a directory made before its file: not a piece yet)
            out.append(p)
    return out
