"""HF Trainer / TRL ``trainer_state.json``: one JSON document whose ``log_history`` is the run's rows. Pure.

The Trainer rewrites the whole file (indent=2, bare NaN) at every checkpoint, into a new ``checkpoint-N/`` directory,
so a run is its directory and its current file is the newest ``trainer_state.json`` under it. A changed file is read
again whole and the run rebuilt from it; a half-written file (a decode error on a file still changing) is retried.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import msgspec

from steptable.ingest.files.regular import open_regular
from steptable.ingest.jsonfix import BOM, has_nonfinite, quote_bignums, quote_nonfinite
from steptable.ingest.parse import MISSING, BadLine, flatten, step_of
from steptable.ingest.parsed import Parsed

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_DECODER = msgspec.json.Decoder()
#: a ``trainer_state.json`` is re-read whole on every change; one beyond this is reported, not read
MAX_STATE = 1_000_000_000


#: ``log_history`` mixes three kinds of entries:
#: ``"train"``, the metrics of a logging window (``loss``, ``reward``, ... or MaxEnt's ``train/...``);
#: ``"eval"``, an evaluation at a step (every metric key starts with ``eval_``/``eval/``, or ``test_``/``test/`` after
#: ``trainer.predict``), merged into the train row of its step; ``"summary"``, the entry written once at the end of
#: training (``train_runtime``, ``train_loss``, ``total_flos``, ...): run metadata, not a step row.
LogEntryKind = Literal["train", "eval", "summary"]

#: keys that only the end-of-training summary entry carries
SUMMARY_KEYS = frozenset({
    "train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos", "train_loss",
})
#: bookkeeping keys present on every kind of entry
_BOOKKEEPING = frozenset({"step", "epoch", "global_step", "train/global_step", "train/epoch", "num_input_tokens_seen"})
_EVAL_PREFIXES = ("eval_", "eval/", "test_", "test/")


def classify_log_entry(entry: Mapping[str, Any]) -> LogEntryKind:
    """Whether a ``log_history`` entry is a training window, an evaluation, or the final run summary."""
    keys = set(entry)
    if keys & SUMMARY_KEYS and "loss" not in keys and "train/loss" not in keys:
        return "summary"
    metrics = [k for k in keys if k not in _BOOKKEEPING]
    if metrics and all(k.startswith(_EVAL_PREFIXES) for k in metrics):
        return "eval"
    return "train"


def trainer_states(run_dir: Path) -> list[Path]:
    """The ``trainer_state.json`` files of a run directory (in it or in its ``checkpoint-N/`` subdirectories),
    furthest first: the highest ``global_step``, then the longest ``log_history``, then the higher checkpoint number
    (the top-level file counts as the highest: the Trainer writes it last at the end of training), then the latest
    modification time. Modification times alone mislead: a copy (``cp -r``, a sync from a cluster) reorders them.
    A file that does not parse (half-written) ranks by its checkpoint number, which the Trainer names after its
    global step, so the newest checkpoint being written is tried first (and an older one shown when it fails)."""
    found: list[tuple[tuple[int, int, int, int], Path]] = []
    try:
        entries = list(os.scandir(run_dir))
    except OSError:
        return []
    for entry in entries:
        if entry.name == "trainer_state.json":
            path, number = Path(entry.path), 1 << 62
        else:
            m = _CHECKPOINT.match(entry.name)
            if m is None:
                continue
            path, number = Path(entry.path) / "trainer_state.json", int(m.group(1))
        try:
            st = path.stat()
        except OSError:
            continue
        # (a FIFO or a device is never opened here: it would block or never end; the source reports it)
        regular = stat.S_ISREG(st.st_mode)
        step, length = _progress(str(path), st.st_ino, st.st_size, st.st_mtime_ns) if regular else (-1, 0)
        found.append(((number if step < 0 else step, length, number, st.st_mtime_ns), path))
    found.sort(key=lambda t: t[0], reverse=True)
    return [p for _, p in found]


def newest_modified(paths: list[Path]) -> Path | None:
    """The path of ``paths`` modified last (None when none can be read)."""
    stamped = []
    for p in paths:
        try:
            stamped.append((p.stat().st_mtime_ns, p))
        except OSError:
            continue
    return max(stamped, key=lambda t: t[0])[1] if stamped else None


@lru_cache(maxsize=1024)
def _progress(path: str, ino: int, size: int, mtime_ns: int) -> tuple[int, int]:
    """(``global_step``, entries of ``log_history``) of the file as it is at this signature; (-1, 0) when it cannot
    be read or parsed. Cached by the file's signature: a follower ranks the checkpoints at every poll."""
    if size > MAX_STATE:
        return -1, 0
    try:
        with open_regular(path) as f:
            doc = decode_document(f.read(MAX_STATE + 1))
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return -1, 0
    if type(doc) is not dict or type(history := doc.get("log_history")) is not list:
        return -1, 0
    step = step_of(doc.get("global_step", MISSING))
    if step is None:  # no global_step: the last entry's step
        step = max((s for e in history if type(e) is dict and (s := step_of(e.get("step", MISSING))) is not None),
                   default=-1)
    return step, len(history)


def newest_trainer_state(run_dir: Path) -> Path | None:
    """The furthest ``trainer_state.json`` of a run directory (see ``trainer_states``), or None."""
    states = trainer_states(run_dir)
    return states[0] if states else None


def decode_document(data: bytes) -> Any:
    """Decode one JSON document that may hold bare NaN / Infinity and out-of-range numbers (and a UTF-8 BOM,
    which an editor on Windows adds)."""
    data = data.removeprefix(BOM)
    if has_nonfinite(data):
        data = quote_nonfinite(data)
    try:
        return _DECODER.decode(data)
    except msgspec.ValidationError:  # a number out of range
        return _DECODER.decode(quote_bignums(data))


def parse_trainer_state(data: bytes, label: str = "trainer_state.json") -> Parsed:
    """Rows of ``log_history`` (keyed by their ``step``). Raises ValueError when the document is not usable.

    An entry that is not an object is skipped, and one without an integer step is kept under the step before it
    (as the JSONL reader does); each is reported in ``bad``, named ``log_history[i]``."""
    try:
        doc = decode_document(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as e:
        raise ValueError(f"invalid JSON: {e}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    history = doc.get("log_history") if type(doc) is dict else None
    if type(history) is not list:
        raise ValueError("no log_history list")
    steps: list[int] = []
    rows: list[dict[str, Any]] = []
    last = 0
    summary: dict[str, Any] = {}
    bad: list[BadLine] = []
    for i, entry in enumerate(history):
        if type(entry) is not dict:
            bad.append(BadLine(label, 0, f"log_history[{i}]: not an object ({type(entry).__name__}); skipped"))
            continue
        if classify_log_entry(entry) == "summary":
            # The Trainer's closing entry (train_runtime, train_loss, ...) describes the run, not a step.
            summary.update(flatten(entry))
            continue
        row = flatten(entry)
        raw = row.get("step", MISSING)
        step = step_of(raw)
        if step is None:
            what = "missing" if raw is MISSING else f"not an integer ({raw!r:.40})"
            bad.append(BadLine(label, 0, f"log_history[{i}]: step {what}: entry kept under step {last}"))
            step = last
        row["step"] = last = step
        steps.append(step)
        rows.append(row)
    meta = {"train_summary": summary} if summary else {}
    return Parsed(steps=steps, rows=rows, step_key="step", meta=meta, bad=bad)
