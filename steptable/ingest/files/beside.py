"""Files whose rows a better file beside them holds: passed over by discovery unless named. Pure.

One training is often written more than once in one place: a Ray Tune trial's ``result.json`` and its
``progress.csv`` and events; a stable-baselines3 logger's formats of one folder; an HF output directory's
``trainer_state.json`` and default TensorBoard events beside steptable's own ``metrics.jsonl``; TensorBoard's
``add_hparams`` directory inside a run's; the copy of a run's TensorBoard events W&B keeps in its run's ``files/``.
These are known by where they are, before any row is read (copies by other loggers elsewhere are found by their
rows: steptable.ingest.copies). And the curves ``add_scalars`` writes in
directories inside a run's, which are its columns (:mod:`steptable.ingest.readers.tbcurves`), known by where they are
and their first tag.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from steptable.ingest.files.wandbpieces import run_dir_id
from steptable.ingest.readers.tbcurves import curve_of

#: Ray Tune's trial files: metrics (JSONL), the config, and the same rows again as CSV
RAY_RESULT: Final = "result.json"
RAY_PARAMS: Final = "params.json"
#: stable-baselines3's files of the same rows, the most faithful first (see :func:`sb3_copy`)
SB3_FORMATS: Final = ("progress.json", "progress.csv")
#: the directory ``SummaryWriter.add_hparams`` writes into by default: ``str(time.time())``
_HPARAMS_DIR: Final = re.compile(r"^\d{9,}\.\d+$")
#: an HF trainer's checkpoint directory
_CHECKPOINT: Final = re.compile(r"^checkpoint-\d+$")


def sb3_copy(path: Path, low: str) -> bool:
    """Is ``path`` (its lowercased name ``low``) a stable-baselines3 output whose rows a better one beside it holds:
    ``progress.csv`` beside ``progress.json`` (JSONL: NaN and every row as written), TensorBoard events beside
    either (float32 values)?"""
    better = SB3_FORMATS[: SB3_FORMATS.index(low)] if low in SB3_FORMATS else SB3_FORMATS
    return any(os.path.isfile(path.parent / name) for name in better)


def steptable_run_in(directory: Path) -> bool:
    """Does ``directory`` hold a ``metrics.jsonl`` that steptable wrote (its description ``steptable*.json`` beside
    it: the HF callback's, in the trainer's output directory)?"""
    if not os.path.isfile(directory / "metrics.jsonl"):
        return False
    try:
        return any(n.startswith("steptable") and n.endswith(".json") for n in os.listdir(directory))
    except OSError:
        return False


def hf_copy(path: Path, low: str, root: Path) -> bool:
    """Is ``path`` an HF trainer's ``trainer_state.json`` (in its output directory or a ``checkpoint-N/`` of it), or
    the TensorBoard events of its default logging directory (``<output>/runs/<time>_<host>/``), whose rows steptable's
    own ``metrics.jsonl`` in the output directory holds? Only an output directory inside ``root`` counts (asked for
    ``<output>/runs``, the user gets its events)."""
    if low == "trainer_state.json":
        out = path.parent.parent if _CHECKPOINT.match(path.parent.name) else path.parent
    elif path.parent.parent.name == "runs":
        out = path.parent.parent.parent
    else:
        return False
    return out.is_relative_to(root) and steptable_run_in(out)


#: the kinds of run whose rows a better file beside may hold (:func:`held_beside`): a follower retires a followed one
#: that discovery passes over later, its better file having appeared
COPY_KINDS: Final = frozenset({"tensorboard", "trainer_state", "csv"})


def hparams_events(path: Path) -> bool:
    """Are the TensorBoard events ``path`` what ``SummaryWriter.add_hparams`` writes beside a run's own (a directory
    named ``str(time.time())`` inside the run's, as Accelerate's tracker and torch users call it): the run's
    hyper-parameters, no rows of their own?"""
    if _HPARAMS_DIR.match(path.parent.name) is None:
        return False
    try:
        return any(n.startswith("events.out.tfevents.") for n in os.listdir(path.parent.parent))
    except OSError:
        return False


def held_beside(path: Path, low: str, root: Path) -> bool:
    """Are the rows of ``path`` (its lowercased name ``low``) held by a better file beside it, so that it is passed
    over unless named: a Ray trial's ``progress.csv`` and TensorBoard events (its ``result.json``), a
    stable-baselines3 folder's less faithful formats (:func:`sb3_copy`), an HF output directory's
    ``trainer_state.json`` and default TensorBoard events beside steptable's ``metrics.jsonl`` (:func:`hf_copy`),
    W&B's copy of TensorBoard events in a run's ``files/`` (:func:`wandb_copy`)?
    And TensorBoard's ``add_hparams`` directory inside a run's (:func:`hparams_events`): no rows, the run's
    hyper-parameters; an ``add_scalars`` curve's directory inside a run's under ``root``, or one that may be (no
    scalar in it yet, judged again when it grows): the run's columns."""
    if low == "trainer_state.json":
        return hf_copy(path, low, root)
    if low != "progress.csv" and not low.startswith("events.out.tfevents."):
        return False
    if low != "progress.csv" and (hparams_events(path) or hf_copy(path, low, root) or wandb_copy(path)):
        return True
    if low != "progress.csv" and (curve := curve_of(path)) is not None and curve.run.is_relative_to(root):
        return True
    return is_ray_trial(path.parent) or sb3_copy(path, low)


def wandb_copy(path: Path) -> bool:
    """Is ``path`` (an event file) W&B's copy of TensorBoard events in a run's ``files/`` (``wandb.init(
    sync_tensorboard=True)`` puts each event file there for upload): the same rows as the file the writer wrote,
    which are the W&B run's history too? Where the writer's file is: W&B links it there (a symbolic link to it, at
    its path from the log directories' root), so a link to a file outside ``files/`` is the copy wherever the run's
    directory is (``WANDB_DIR`` need not be the working directory, which no record of the run names); a copy that is
    no link (a file system without them) is one only where the writer's file is at its path under ``files/`` from
    the directory holding ``wandb/`` (the working directory the run began in, by default). Events a script writes
    into ``wandb.run.dir`` itself are the only copy."""
    for files in path.parents:
        run_dir = files.parent
        if run_dir == files:
            return False
        if files.name == "files" and (got := run_dir_id(run_dir.name)) is not None:
            if not os.path.isfile(run_dir / f"run-{got[1]}.wandb"):
                return False
            inside = path.relative_to(files)
            return _linked_out(files, inside) or os.path.isfile(run_dir.parent.parent / inside)
    return False


def _linked_out(files: Path, inside: Path) -> bool:
    """Is ``files / inside`` a symbolic link (or under one, below ``files``) to a file that exists outside
    ``files``?"""
    at = files
    for part in inside.parts:
        at = at / part
        if os.path.islink(at):
            target = Path(os.path.realpath(files / inside))
            return target.is_file() and not target.is_relative_to(os.path.realpath(files))
    return False


def is_ray_trial(directory: Path) -> bool:
    """Is ``directory`` a Ray Tune trial directory (its ``params.json`` and ``result.json`` both there)?"""
    return os.path.isfile(directory / RAY_PARAMS) and os.path.isfile(directory / RAY_RESULT)
