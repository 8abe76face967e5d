"""Rollout dumps: files of one step's generations that sit beside a run and are no run of their own.

- verl: ``trainer.rollout_data_dir`` and ``trainer.validation_data_dir`` get ``{global_step}.jsonl``, one generation
  per line ``{"input", "output", "gts", "score", "step", <reward extra info>...}``. The name alone (``12.jsonl``)
  could be anyone's metrics, so the first line decides: an object with ``input`` and ``output`` is a dump;
- TRL: ``log_completions=True`` writes ``<output_dir>/completions/completions_{step:05d}.parquet`` (by its name).
- W&B: a logged ``wandb.Table`` is ``files/media/table/<key>_<n>_<hash>.table.json`` beside the run file (a key
  with slashes makes folders: ``media/table/val/generations_<n>_<hash>.table.json``); ``n`` is not always the
  row's step (steptable.ingest.readers.wandbmedia: the run file says which step each table is of).

:func:`dump_step` gives the step a dump holds (from its name); :func:`is_dump` whether a file is one;
:func:`wandb_table` whether a file is a W&B table.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Final

from steptable.ingest.files.regular import open_regular
from steptable.ingest.parse import LineError, decode_line

VERL_DUMP: Final = re.compile(r"^(\d+)\.jsonl$")
TRL_DUMP: Final = re.compile(r"^completions_(\d+)\.parquet$")
#: bytes of a verl dump's first line read at most to judge it (a prompt can be long; a metrics row is short)
FIRST_LINE_MAX = 1 << 20

#: verdicts by path: (inode, size, mtime) -> verdict; an unchanged file is not read again
_SEEN: dict[Path, tuple[tuple[int, int, int], bool | None]] = {}
_SEEN_MAX = 100_000


def dump_step(path: Path) -> int | None:
    """The step of a rollout dump named like one (``12.jsonl``; ``completions/completions_00012.parquet``)."""
    m = VERL_DUMP.match(path.name)
    if m is None and path.parent.name == "completions":
        m = TRL_DUMP.match(path.name)
    return int(m.group(1)) if m is not None else None


def wandb_table(path: Path) -> bool:
    """Is ``path`` a ``wandb.Table`` file of a W&B run (``.../media/table/[<folders>/]<name>.table.json``)?"""
    if not path.name.endswith(".table.json"):
        return False
    parts = path.parent.parts
    return any(parts[i] == "media" and parts[i + 1] == "table" for i in range(len(parts) - 1))


def is_dump(path: Path) -> bool | None:
    """Is ``path`` a rollout dump? None: a verl-named file whose first line is not complete yet (ask again)."""
    name = path.name
    if TRL_DUMP.match(name):
        return path.parent.name == "completions"
    if not VERL_DUMP.match(name):
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    sig = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _SEEN.get(path)
    if hit is not None and hit[0] == sig:
        return hit[1]
    verdict = _first_line_is_dump(path)
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[path] = (sig, verdict)
    return verdict


def _first_line_is_dump(path: Path) -> bool | None:
    try:
        with open_regular(path) as f:
            line = f.readline(FIRST_LINE_MAX)
    except OSError:
        return False
    if line.startswith(b'{"input": '):  # verl's key order (json.dumps of input, output, gts...): a long line too
        return True
    if not line.endswith(b"\n"):
        return None if len(line) < FIRST_LINE_MAX else False
    try:
        row = decode_line(line)
    except LineError:
        return False
    return isinstance(row, dict) and "input" in row and "output" in row
