"""Find runs under one or more paths: metrics files, their kind, run id, arm, run directory and side files. Pure.

What is a metrics file (by name first, then by content where the name does not say):

- ``metrics.jsonl``, ``progress.json`` (SB3, JSONL despite the name), ``log_<ts>.jsonl`` (torchtune), ``steps.jsonl``
  (retrain emergence), ``wandb-history.jsonl``: JSONL metrics, followed at once (even while empty);
- ``result.json`` with ``params.json`` beside it (a Ray Tune trial directory, one run per trial; Ray writes
  ``params.json`` before it opens ``result.json``, and a ``result.json`` elsewhere is often one JSON document): JSONL
  metrics, step ``training_iteration``; the trial's ``progress.csv`` and TensorBoard events hold the same rows again
  and are passed over, its ``params.json`` is the run's config;
- ``trainer_state.json`` (HF / TRL): the run is its directory (the parent of ``checkpoint-N/``), read whole;
  where steptable's own ``metrics.jsonl`` (with its ``steptable*.json`` description) is in that directory, as the HF
  callback writes it into the trainer's output directory, it is the run, every row as logged and live, and the
  trainer's ``trainer_state.json`` and the TensorBoard events of its default ``runs/<time>_<host>/`` there are passed
  over (the same rows; not three runs of one training, which compare would take for seeds);
- any other ``*.jsonl``: metrics when its first line is an object with a step key or mostly numbers (``sniff``),
  except the known non-metric JSONL, which are side files of the run: ``checkpoints.jsonl``, ``*generations*.jsonl``,
  ``*rollout_summaries.jsonl``, ``timing_spans.jsonl``, and rollout dumps (``files.dumps``: verl's
  ``<rollout_data_dir>/<step>.jsonl``, TRL's ``completions/completions_<step>.parquet``): generations of the run
  whose directory holds them (of the only run found, when none does);
- ``*.log``, ``*.txt``, ``*.out``: console logs, a run once a metrics line shows up (TinyZero's ``step:N - key:value``,
  torchtune's ``Step N | key:value ...``, its DiskLogger's ``log_<ts>.txt``); one
  whose first line is a JSON object with a step is JSONL (``$VERL_FILE_LOGGER_PATH=...metrics.log``);
- ``metrics.csv`` (Lightning), ``progress.csv`` (SB3), and any ``*.csv`` named on the command line: CSV logs;
  stable-baselines3's logger writes the same rows to each format it is given, in one folder: of its ``progress.json``,
  ``progress.csv`` and TensorBoard events there, the first present is the run and the others are passed over (one
  run, not three runs of one arm that would be taken for seeds);
- a file named on the command line that starts with a JSON object: JSONL, whatever its name;
- ``run-<id>.wandb`` (W&B, online or offline): kind "wandb", its run directory the one it is in; the files of a run
  resumed by later processes (``run-<time>-<id>/`` beside it, same id) are one run, named by the first
  (:mod:`steptable.ingest.files.wandbpieces`); a later process's file is judged once its run record is written;
- ``events.out.tfevents.*`` (TensorBoard): kind "tensorboard", one run per directory (its event files together); the
  ``<time.time()>/`` directory ``SummaryWriter.add_hparams`` writes inside a run's (Accelerate's tracker) is its
  hyper-parameters and passed over; the ``<tag>_<curve>/`` (tensorboardX: ``<tag>/<curve>/``) directories
  ``add_scalars`` writes inside a run's are its columns (:mod:`steptable.ingest.readers.tbcurves`), read with it
  and passed over;
- ``*.db`` holding trackio's ``metrics`` table (``$TRACKIO_DIR/<project>.db``): kind "trackio", a run per run name.

What is walked: every directory under a root but hidden ones and ``SKIP_DIRS``; directory links in the top
``LINK_DEPTH`` levels are followed (``logs/exp42 -> /scratch/exp42``) once the real tree is walked, deeper ones are
not (a run's ``data -> /datasets``). A file reached by two paths is one run, under the path without a link.

Run id: the file's path relative to the root given (prefixed by the root when several roots are given; a file given
among several roots: its path as given). Arm: the file's stem when it is specific (verl's ``<experiment>.jsonl``),
else the nearest directory whose name is not generic (``logs``, ``train``, ``metrics``, ``checkpoint-N``...):
``logs/routeA/metrics.jsonl`` -> ``routeA``, ``exp1/logs/train/metrics.jsonl`` -> ``exp1``. The run directory (where
side files are looked for) is that directory, kept inside the root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from steptable.ingest.files.beside import RAY_PARAMS, RAY_RESULT, held_beside, is_ray_trial
from steptable.ingest.files.dumps import is_dump, wandb_table
from steptable.ingest.files.sniff import is_trackio_db, log_kind, starts_like_jsonl
from steptable.ingest.files.walk import LINK_DEPTH as LINK_DEPTH
from steptable.ingest.files.walk import SKIP_DIRS as SKIP_DIRS
from steptable.ingest.files.walk import OnError as OnError
from steptable.ingest.files.walk import linked_back, walk
from steptable.ingest.files.wandbpieces import pieces, undecided

JSONL_NAMES: Final = frozenset({"metrics.jsonl", "progress.json", "steps.jsonl", "wandb-history.jsonl"})
CONSOLE_SUFFIXES: Final = frozenset({".log", ".txt", ".out"})
#: CSV logs found in a directory (Lightning's CSVLogger, stable-baselines3); any *.csv named explicitly is read too
CSV_NAMES: Final = frozenset({"metrics.csv", "progress.csv"})
GENERIC_DIRS: Final = frozenset({
    "logs", "log", "train", "training", "metrics", "outputs", "output", "out", "results", "result", "runs", "run",
    "files", "emergence", "eval", "evals", "evaluation", "wandb", "tensorboard", "tb", "latest-run", "data",
    "default", "trainer", "checkpoints", "lightning_logs", "console", "stdout", "tmp", ".",
})
GENERIC_STEMS: Final = frozenset({
    "metrics", "progress", "steps", "log", "logs", "train", "training", "history", "wandb-history", "events",
    "scalars", "trainer_state", "output", "out", "stdout", "stderr", "console", "nohup", "result",
})
#: directory names that say nothing of the run; ``Nov29_16-45-24_<host>``: transformers' default logging directory
#: (``<output>/runs/<%b%d_%H-%M-%S>_<host>``), whose run is the output directory's
_GENERIC_PATTERN: Final = re.compile(
    r"^(?:log_\d+|version_\d+|checkpoint-\d+|global_step_?\d+|iteration_\d+|step_?\d+|run-\d{8}_\d{6}-\w+|\d+"
    r"|[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+)$")
_TORCHTUNE: Final = re.compile(r"^log_\d+\.jsonl$")


def side_category(path: Path) -> str | None:
    """The side-file category of a file next to a run (None: not a side file)."""
    name = path.name.lower()
    if name == "checkpoints.jsonl":
        return "checkpoints"
    if name.endswith("rollout_summaries.jsonl"):
        return "rollout_summaries"
    if name.endswith(".jsonl") and "generations" in name:
        return "generations"
    if name == "timing_spans.jsonl":
        return "timing_spans"
    if name.endswith("_logtree.json"):
        return "logtree"
    if is_dump(path) is not False:  # verl's rollout_data_dir/{step}.jsonl, TRL's completions_{step}.parquet
        return "generations"  # (a verl-named file not yet judged waits as one: judged again when it changes)
    if wandb_table(path):
        return "generations"  # a wandb.Table logged beside a W&B run (files/media/table/[<folders>/]<key>_<n>_<hash>)
    if name in ("config.json", "config.yaml", "config.yml", "hparams.yaml", "args.json") or (
            name == RAY_PARAMS and is_ray_trial(path.parent)):
        return "config"
    if path.parent.name == "rich_completions" and name.endswith(".json"):
        return "rich_completions"
    return None


@dataclass
class Candidate:
    """One possible run. ``key`` identifies it (the file; for trainer_state the run directory)."""

    key: Path
    path: Path
    kind: str  # "jsonl" | "trainer_state" | "console" | "csv" | "wandb" | "tensorboard" | "trackio"
    run_id: str
    arm: str
    run_dir: Path
    confirmed: bool  # the name says it is metrics; otherwise its content must (sniff / first console line)
    side_files: dict[str, list[Path]] = field(default_factory=dict)
    linked: bool = False  # reached through a symbolic link below the root given
    real: str = ""  # the key's path with every link resolved (set by discovery)
    alone: bool = False  # a W&B run file named (or its directory): read without its resumes' other files
    later: tuple[Path, ...] = ()  # the files of the processes that resumed a W&B run, as discovery found them


def is_generic(name: str) -> bool:
    """Does a directory's ``name`` say nothing of the run (``logs``, ``train``, ``checkpoint-N``...)?"""
    return name.lower() in GENERIC_DIRS or _GENERIC_PATTERN.match(name) is not None


def arm_and_run_dir(path: Path, root: Path, *, run_dir: Path | None = None) -> tuple[str, Path]:
    """(arm, run directory) of a metrics file found under ``root`` (see the module docstring)."""
    base = root if os.path.isdir(root) else root.parent
    if run_dir is None:
        stem = path.stem
        if stem.lower() not in GENERIC_STEMS and _GENERIC_PATTERN.match(stem) is None:
            return stem, path.parent
        run_dir = path.parent
    inside: list[Path] = []  # from the file's directory up to the root
    d = run_dir
    while True:
        inside.append(d)
        if d == base or d == d.parent:
            break
        d = d.parent
    for d in inside:
        name = d.absolute().name
        if name and not is_generic(name):
            return name, d
    for d in base.absolute().parents:  # above the root: the name only, side files stay inside the root
        if d.name and not is_generic(d.name):
            return d.name, base
    return run_dir.absolute().name or "run", run_dir


def _one_per_file(cands: list[Candidate]) -> list[Candidate]:
    """The candidates with one per file reached by several paths (a link beside its target, a linked directory
    inside the tree): the path without a link wins, else the first."""
    if not any(c.linked for c in cands):
        return cands
    plain = {c.real for c in cands if not c.linked}
    taken: set[str] = set()
    out = []
    for c in cands:
        if c.linked:
            if c.real in plain or c.real in taken:
                continue
            taken.add(c.real)
        out.append(c)
    return out


def _run_id(path: Path, root: Path, label: str | None) -> str:
    if root == path:  # a file named among several roots is named by its path alone (not ``b/r.csv/r.csv``)
        return label or path.name
    rel = path.relative_to(root).as_posix()
    return f"{label}/{rel}" if label else rel


def _label(root: Path, roots: Sequence[Path]) -> str | None:
    return root.as_posix().rstrip("/") if len(roots) > 1 else None


def discover(paths: Iterable[str | Path], on_error: OnError | None = None,
             settled: Callable[[Path], bool] | None = None) -> list[Candidate]:
    """Every candidate run under ``paths`` (missing paths give nothing yet), side files attached. A directory that
    cannot be listed is skipped, and ``on_error`` is told. Files for which ``settled`` says True (judged before,
    not a run, and unchanged) are passed over unread."""
    roots = [Path(p) for p in paths]
    found: dict[Path, Candidate] = {}
    sides: list[tuple[str, Path]] = []
    for root in roots:
        if (e := _unreachable(root)) is not None:  # (a parent the user may not enter: someone's 0700 home)
            if on_error is not None:
                on_error(root, e)
            continue
        if _gone(root):
            continue
        _collect(root, root, _label(root, roots), found, sides, on_error, settled)
    cands = _one_per_file(list(found.values()))
    by_dir: dict[Path, list[Candidate]] = {}
    for c in cands:
        by_dir.setdefault(c.run_dir, []).append(c)
        for p in c.later:  # (each directory of a resumed W&B run: its tables are the run's)
            by_dir.setdefault(p.parent, []).append(c)
    for cat, path in sides:
        # the runs of the directories above the file (looked up by directory: a sweep's hundreds of runs are not
        # each tried against every side file); a W&B run directory owns what is under it (its
        # files/requirements.txt is no run of its own), else the nearest directory's runs do
        owners = [c for d in path.parents for c in by_dir.get(d, ())]
        owners = [c for c in owners if c.kind == "wandb"] or owners
        if not owners and cat == "generations" and len(cands) == 1:  # (verl's rollout_data_dir beside the run)
            owners = cands
        if owners:
            depth = max(len(c.run_dir.parts) for c in owners)
            for c in owners:
                if len(c.run_dir.parts) == depth:
                    c.side_files.setdefault(cat, []).append(path)
    return cands


def discover_at(path: str | Path, roots: Sequence[str | Path], on_error: OnError | None = None,
                settled: Callable[[Path], bool] | None = None) -> list[Candidate]:
    """Candidates at or under ``path`` (a file or directory that just appeared, e.g. an absolute path from a file
    event), named relative to the root that holds it exactly as :func:`discover` names them; side files are left to
    the next full discovery. None where ``path`` is reached through a directory link back into the root's tree
    (:func:`~steptable.ingest.files.walk.linked_back`): what is there is found under its real path, as
    :func:`discover` finds it."""
    target = Path(os.path.abspath(path))
    root_paths = [Path(r) for r in roots]
    for root in root_paths:
        root_abs = Path(os.path.abspath(root))
        if target != root_abs and not target.is_relative_to(root_abs):
            continue
        if linked_back(target, root_abs):  # (a link made into the tree, as wandb's latest-run at each init)
            return []
        found: dict[Path, Candidate] = {}
        under = root if target == root_abs else root / target.relative_to(root_abs)
        _collect(root, under, _label(root, root_paths), found, [], on_error, settled)
        return _one_per_file(list(found.values()))
    return []


def _collect(root: Path, under: Path, label: str | None, found: dict[Path, Candidate], sides: list[tuple[str, Path]],
             on_error: OnError | None, settled: Callable[[Path], bool] | None) -> None:
    explicit = os.path.isfile(root)
    base = os.path.abspath(root.parent if explicit else root)
    base_real = os.path.realpath(base)  # (the root itself may be reached through a link: ~/logs -> /scratch)
    for path, via_link in walk(under, on_error):
        if settled is not None and settled(path):
            continue
        cand = classify(path, root, label, explicit=explicit)
        if cand is None:
            cat = side_category(path)
            if cat is not None:
                sides.append((cat, path))
        elif os.path.islink(path) and not os.path.exists(path):  # (a metrics file by its name: say so)
            if on_error is not None and cand.confirmed:
                on_error(path, OSError("a symbolic link that leads to no file"))
        elif cand.key not in found:
            found[cand.key] = cand
            cand.linked = via_link or os.path.islink(cand.key)
            key = os.path.abspath(cand.key)
            inside = key.startswith(base.rstrip(os.sep) + os.sep)
            cand.real = base_real + key[len(base):] if inside and not cand.linked else os.path.realpath(key)


def classify(path: Path, root: Path, label: str | None = None, *, explicit: bool = False) -> Candidate | None:
    """The candidate run a file stands for, or None (not metrics, or a side file)."""
    name = path.name
    low = name.lower()
    if not explicit and held_beside(path, low, root):
        return None
    if low == "trainer_state.json":
        run_dir = path.parent.parent if _GENERIC_PATTERN.match(path.parent.name) else path.parent
        if not run_dir.is_relative_to(root if os.path.isdir(root) else root.parent):
            run_dir = path.parent
        rid = _run_id(run_dir / "trainer_state.json", root, label) if run_dir != root else (
            f"{label}/trainer_state.json" if label else "trainer_state.json")
        arm, _ = arm_and_run_dir(run_dir / "trainer_state.json", root, run_dir=run_dir)
        return Candidate(run_dir, path, "trainer_state", rid, arm, run_dir, True)
    if side_category(path) is not None and not explicit:
        return None
    if (rec := _record_kind(path, root, label, explicit)) is not None:
        return rec
    suffix = path.suffix.lower()
    ray_result = low == RAY_RESULT and os.path.isfile(path.parent / RAY_PARAMS)
    if low in JSONL_NAMES or _TORCHTUNE.match(low) or suffix == ".jsonl" or ray_result:
        confirmed = explicit or low in JSONL_NAMES or _TORCHTUNE.match(low) is not None or ray_result
        arm, run_dir = arm_and_run_dir(path, root)
        return Candidate(path, path, "jsonl", _run_id(path, root, label), arm, run_dir, confirmed)
    if low in CSV_NAMES or (explicit and suffix == ".csv"):
        arm, run_dir = arm_and_run_dir(path, root)
        return Candidate(path, path, "csv", _run_id(path, root, label), arm, run_dir, True)
    if suffix in CONSOLE_SUFFIXES:
        kind = log_kind(path)
        if kind is None:
            return None  # undecided until its first line is complete (verl truncates its log at every launch)
        arm, run_dir = arm_and_run_dir(path, root)
        return Candidate(path, path, kind, _run_id(path, root, label), arm, run_dir, explicit)
    if explicit and starts_like_jsonl(path):  # a file named on the command line ($VERL_FILE_LOGGER_PATH: any name)
        arm, run_dir = arm_and_run_dir(path, root)
        return Candidate(path, path, "jsonl", _run_id(path, root, label), arm, run_dir, True)
    return None


_WANDB_FILE: Final = re.compile(r"^run-[A-Za-z0-9_-]+\.wandb$")


def _record_kind(path: Path, root: Path, label: str | None, explicit: bool) -> Candidate | None:
    """A W&B run file, a TensorBoard event file (its directory is the run) or a trackio database, else None."""
    name = path.name
    if _WANDB_FILE.match(name) or (explicit and name.endswith(".wandb")):
        # (a resumed run's pieces are one run, named by its first: steptable.ingest.files.wandbpieces; a piece whose
        # first is outside the root given, one of its later directories named, is read alone as a file named is)
        if not explicit and undecided(path):  # (a resume's piece, or a run of its own? once its run record is there)
            return None
        found = [path] if explicit else pieces(path)
        alone = explicit or (found[0] != path and not found[0].is_relative_to(root))
        path = path if alone else found[0]
        run_dir = path.parent  # (offline-run-<date>-<id>: the run's display name becomes its arm once read)
        return Candidate(path, path, "wandb", _run_id(path, root, label), run_dir.absolute().name, run_dir, True,
                         alone=alone, later=() if alone else tuple(found[1:]))
    if name.startswith("events.out.tfevents."):
        run_dir = path.parent
        arm, _ = arm_and_run_dir(path, root, run_dir=run_dir)
        rid = _run_id(path, root, label) if root == path else (
            _run_id(run_dir, root, label) if run_dir != root else (label or run_dir.absolute().name))
        return Candidate(run_dir, path, "tensorboard", rid, arm, run_dir, True)
    if name.endswith(".db") and (explicit or is_trackio_db(path)):
        arm, run_dir = arm_and_run_dir(path, root)
        return Candidate(path, path, "trackio", _run_id(path, root, label), arm, run_dir, True)
    return None


def _unreachable(path: Path) -> OSError | None:
    """Why ``path`` cannot be looked at, if it is there (a missing path gives nothing yet, without error)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        return e
    return None


def _gone(root: Path) -> bool:
    """Is ``root`` relative to a working directory deleted since (``rm -rf`` of the run directory ``tail -f .`` was
    started in): nothing is under it, and no absolute path can be made of it."""
    try:
        os.path.abspath(root)
    except FileNotFoundError:
        return True
    return False


def missing_paths(paths: Sequence[str | Path]) -> list[str]:
    """The paths given that are not there: a dangling link is missing; a path behind a directory the user may not
    enter is there, only unreadable (said as such, not as missing). A one-shot command names each and exits 2
    after printing the rest (a mistyped path beside a good one must not pass a CI gate as "no alerts")."""
    return [str(p) for p in paths if not os.path.exists(p) and _unreachable(Path(p)) is None]


def nothing_found(paths: Sequence[str | Path]) -> str:
    """Why no run came from ``paths``, for a one-shot command's error line (path text made inert by the caller)."""
    blocked = [f"{p} ({e.strerror or e})" for p in paths if (e := _unreachable(Path(p))) is not None]
    missing = missing_paths(paths)
    files = [str(p) for p in paths if os.path.isfile(p)]
    if blocked:
        return "cannot reach " + ", ".join(blocked)
    if missing:
        return "no such path: " + ", ".join(missing)
    if files and len(files) == len(paths):
        return (", ".join(files) + ": not a metrics file steptable reads (JSONL rows, trainer_state.json, a CSV "
                "log, or a console log .log/.txt/.out with step:N lines)")
    return "no metrics files found under " + ", ".join(str(p) for p in paths)
