"""RunIndex: every run under some paths known by its file's size, age and last rows, not its whole history. Pure.

A sweep puts hundreds of runs under one directory; a list of them needs each run's name, format, newest rows and
hyper-parameters, not millions of rows. The index discovers the runs (:func:`discover`), stats each file, reads the
complete lines of its last ``tail_bytes`` (:func:`preview_tail`) and its config side file, and hands that store to a
``digest`` callback supplied by the layer above (the index keeps only what the digest returns, so a sweep of 2,000
runs holds 2,000 small digests, not 2,000 tails). ``refresh`` stats every file again and reads the tail of those
that changed; discovery runs again every ``recheck`` seconds. One caller thread does it all: no thread, watch or
open descriptor per run. Runs with no tail of lines are read whole, as a one-shot command reads them: a W&B run
file, a TensorBoard run, an HF run (its furthest checkpoint), a trackio project (one read for all its runs, each an
entry of its own).

Config (hyper-parameters, flattened to dotted keys): a ``config.json`` / ``args.json`` beside the run (tinker, many
scripts), a W&B ``config.yaml`` (``{key: {value: ...}}`` unwrapped) and a Lightning ``hparams.yaml`` when PyYAML is
importable (both writers install it). A StepLogger's ``steptable.json`` (how the run ended) goes to the tail's meta.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from steptable.ingest.files.discover import Candidate, discover
from steptable.ingest.files.preview import preview_head, preview_tail
from steptable.ingest.files.regular import open_regular
from steptable.ingest.files.sniff import sniff_jsonl
from steptable.ingest.files.wandbpieces import pieces
from steptable.ingest.sidefiles import read_regular
from steptable.ingest.source import make_source
from steptable.ingest.store import RunStore
from steptable.table import runinfo

#: bytes read from the end of each file: the newest rows (a row of 20 metrics is ~600 bytes: about 50 rows)
TAIL_BYTES = 32 * 1024
#: a config file larger than this is not read (a dumped dataset is not hyper-parameters)
MAX_CONFIG_BYTES = 1 << 20
#: config values kept per run (a flattened model config can hold thousands)
MAX_CONFIG_KEYS = 500

D = TypeVar("D")


@dataclass
class Indexed(Generic[D]):
    """One run of the index: where it is, its file's size and change time, what ``digest`` made of its tail, and its
    hyper-parameters (dotted keys)."""

    cand: Candidate
    size: int
    mtime: float
    digest: D
    config: dict[str, Any] = field(default_factory=dict)
    sig: tuple[int, float] = (0, 0.0)  # (size, mtime) the digest was made for

    @property
    def run_id(self) -> str:
        return self.cand.run_id

    @property
    def path(self) -> Path:
        """The run's metrics file."""
        return self.cand.path

    @property
    def name(self) -> str:
        """The run's name: its arm (``lr1e-5_seed3`` for ``lr1e-5_seed3/metrics.jsonl``)."""
        return self.cand.arm


def flat(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested dicts as dotted keys (``optim.lr``); lists and other values as they are. At most MAX_CONFIG_KEYS."""
    out = {} if out is None else out
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            if len(out) >= MAX_CONFIG_KEYS:
                break
            flat(v, f"{prefix}{k}.", out)
    elif prefix:
        out[prefix[:-1]] = value
    return out


def _yaml(data: bytes) -> Any:
    try:
        import yaml  # type: ignore[import-untyped,unused-ignore]  # optional: W&B and Lightning install it
    except ImportError:
        return None
    try:
        return yaml.safe_load(data)
    except Exception:  # a YAML error of any kind: no config, not a failed index
        return None


def _wandb_values(doc: Mapping[str, Any]) -> dict[str, Any]:
    """W&B's ``config.yaml``: ``{key: {desc, value}}`` -> ``{key: value}``, its own ``_wandb`` entry left out."""
    return {k: v["value"] if isinstance(v, Mapping) and "value" in v else v for k, v in doc.items() if k != "_wandb"}


def read_config(cand: Candidate) -> dict[str, Any]:
    """The run's hyper-parameters, flattened (see the module docstring); {} when none can be read."""
    paths = list(cand.side_files.get("config", []))
    for d in dict.fromkeys((cand.path.parent, cand.run_dir)):
        for name in ("config.json", "args.json", "config.yaml", "hparams.yaml"):
            p = Path(d) / name
            if p not in paths and p.is_file():
                paths.append(p)
    out: dict[str, Any] = {}
    for p in paths:
        try:  # (a FIFO or device put at the path, or a file grown past the limit since the look: not read)
            data = read_regular(p, MAX_CONFIG_BYTES)
        except OSError:
            continue
        doc: Any
        if p.suffix == ".json":
            try:
                doc = json.loads(data)
            except (ValueError, RecursionError):
                continue
        else:
            doc = _yaml(data)
            if isinstance(doc, Mapping) and p.name == "config.yaml":
                doc = _wandb_values(doc)
        if isinstance(doc, Mapping):
            for k, v in flat(doc).items():
                out.setdefault(k, v)
    return out


def _load_runinfo(cand: Candidate, tail: RunStore) -> None:
    """A StepLogger's description of the run (``steptable.json``: its columns, when it was closed and how) into
    ``tail.meta["runinfo"]``, as the follower keeps it: the run's state reads it."""
    for path in runinfo.candidates(cand.path, tail.arm or cand.arm):
        try:
            with open_regular(path) as f:
                info = runinfo.parse(f.read(runinfo.MAX_BYTES), cand.path)
        except OSError:
            continue
        if info is not None:
            tail.meta["runinfo"] = info
            return


#: kinds whose newest rows are no tail of bytes: a W&B run file is one log of records, a TensorBoard run a directory
#: of event files, an HF run the furthest of its checkpoints' ``trainer_state.json`` (not the one discovery named)
_WHOLE = frozenset({"wandb", "tensorboard", "trainer_state"})


def _whole_run(cand: Candidate) -> RunStore:
    """The store of a W&B, TensorBoard or HF run, read once as a one-shot command reads it (problems in ``bad``)."""
    src = make_source(cand, lambda bad: None)
    src.poll()
    finish = getattr(src, "finish", None)  # (the sources of one-shot reads that differ from a poll have one)
    if finish is not None:
        finish()
    src.store.meta["preview_offset"] = 0
    return src.store


def head_of(path: Path, kind: str) -> RunStore | None:
    """The store of the first ``TAIL_BYTES`` of a run's file (its first rows), None when it cannot be read."""
    try:
        return preview_head(path, TAIL_BYTES, kind)
    except OSError:
        return None


def _size_time(cand: Candidate, st: os.stat_result) -> tuple[int, float]:
    """The run's bytes and last change (``st``: its file's): of every file of a resumed W&B run. Raises OSError."""
    if cand.kind != "wandb" or cand.alone or len(files := pieces(cand.path)) < 2:
        return st.st_size, st.st_mtime
    more = [os.stat(p) for p in files if p != cand.path]
    return st.st_size + sum(m.st_size for m in more), max(st.st_mtime, *(m.st_mtime for m in more))


def _project_sig(path: Path, st: os.stat_result) -> tuple[int, float]:
    """A trackio database's signature with its write-ahead log's (new rows sit in the log until a checkpoint)."""
    try:
        wal = os.stat(f"{path}-wal")
    except OSError:
        return st.st_size, st.st_mtime
    return st.st_size + wal.st_size, max(st.st_mtime, wal.st_mtime)


class RunIndex(Generic[D]):
    """The runs under ``paths``, each as ``digest(tail store, candidate)`` of its last ``tail_bytes``.

    ``refresh`` first lists what discovery finds (names, sizes: ``digest`` None), then reads tails, the runs not read
    yet first, then those whose file changed; with a ``budget`` of seconds it stops after that long and the next call
    goes on (a list on screen fills in while the rest are read). Threads: one thread refreshes; others may read
    ``runs`` meanwhile (the dict is replaced when runs come or go, never changed in place; an entry's ``digest`` is
    replaced whole)."""

    def __init__(self, paths: Iterable[str | Path], digest: Callable[[RunStore, Candidate], D], *,
                 tail_bytes: int = TAIL_BYTES, recheck: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.paths = [Path(p) for p in paths]
        self._digest = digest
        self.tail_bytes = tail_bytes
        self.recheck = recheck
        self._clock = clock
        self.runs: dict[str, Indexed[D | None]] = {}  # run id -> entry, in discovery order
        self._rejected: dict[Path, int] = {}  # not metrics (so far) -> its size then: a JSONL whose first line is
        # not metrics, a console log (``table.txt``, NCCL output) whose last lines hold no ``step:N`` metrics line
        self._last_discovery: float | None = None
        self.errors: list[str] = []
        self._project_of: dict[str, str] = {}  # a trackio run's id -> its project database's (the candidate's)
        self._projects: dict[str, Candidate] = {}  # a trackio project database's run id -> its candidate

    def discover(self, found: Iterable[Candidate] | None = None) -> set[str]:
        """Find runs not known yet (listed with their size, ``digest`` None until read); returns their ids.
        ``found``: what a discovery of these paths just gave (the caller's own), not walked again."""
        self._last_discovery = self._clock()
        return self.admit(discover(self.paths) if found is None else found)

    def admit(self, cands: Iterable[Candidate]) -> set[str]:
        """Take these candidates (a discovery's, or those a file event named) as runs where they are new and hold
        metrics; returns the ids of the runs new to the index."""
        new: set[str] = set()
        for cand in cands:
            if cand.run_id in self._projects:  # (a trackio project already split into its runs)
                self._projects[cand.run_id].side_files = cand.side_files
                continue
            old = self.runs.get(cand.run_id)
            if old is not None:
                old.cand.side_files = cand.side_files
                continue
            try:
                st = os.stat(cand.path)
            except OSError:
                continue
            if self._rejected.get(cand.path) == st.st_size:
                continue
            if cand.kind == "jsonl" and not cand.confirmed:
                verdict = sniff_jsonl(cand.path)
                if verdict is None:  # empty so far: looked at again next time
                    continue
                if not verdict:
                    self._rejected[cand.path] = st.st_size
                    continue
            entry: Indexed[D | None] = Indexed(cand, st.st_size, st.st_mtime, None)
            self.runs = {**self.runs, cand.run_id: entry}  # (replaced, not changed: readers in other threads)
            # a console log is a run only once it holds a metrics line: read now (a sweep's table.txt files must
            # not count as runs)
            if cand.kind != "console" or cand.confirmed or self._read(entry):
                new.add(cand.run_id)
        return new

    def pending(self) -> int:
        """Runs listed whose tail is not read yet."""
        return sum(1 for e in self.runs.values() if e.digest is None)

    def refresh(self, budget: float | None = None, only: Iterable[str] | None = None) -> set[str]:
        """Discover when due, read the tails not read yet, then those of files changed since (size or mtime); stop
        after ``budget`` seconds. ``only``: look at these runs alone (those a file event named; no discovery).
        Returns the ids of runs new or changed."""
        t0 = self._clock()
        changed: set[str] = set()
        if only is None and (self._last_discovery is None or t0 - self._last_discovery >= self.recheck):
            changed |= self.discover()
        looked = list(self.runs.values()) if only is None else [e for r in only if (e := self.runs.get(r))]
        todo = [e for e in looked if e.digest is None]
        todo += [e for e in looked if e.digest is not None and self._stale(e)]
        for entry in todo:
            if budget is not None and self._clock() - t0 > budget:
                break
            if self._read(entry):
                changed.add(entry.run_id)
        return changed

    def _stale(self, entry: Indexed[D | None]) -> bool:
        try:
            st = os.stat(entry.cand.path)
            size, mtime = _size_time(entry.cand, st)
        except OSError:
            return False
        entry.size, entry.mtime = size, mtime
        sig = _project_sig(entry.cand.path, st) if entry.cand.kind == "trackio" else (size, mtime)
        return sig != entry.sig

    def _read(self, entry: Indexed[D | None]) -> bool:
        """Read the entry's tail and config; False when the file cannot be read (said in ``errors``)."""
        cand = entry.cand
        if cand.kind == "trackio":
            return self._read_project(entry)
        try:
            size, mtime = _size_time(cand, os.stat(cand.path))
            tail = _whole_run(cand) if cand.kind in _WHOLE else preview_tail(cand.path, self.tail_bytes, cand.kind)
        except (OSError, ValueError) as e:
            if len(self.errors) < 100:
                self.errors.append(f"{cand.path}: {getattr(e, 'strerror', None) or e}")
            entry.sig = (-1, -1.0)
            return False
        if cand.kind == "console" and not len(tail):  # a log with no metrics line (yet): not a run
            self._rejected[cand.path] = size
            self.runs = {k: v for k, v in self.runs.items() if k != cand.run_id}
            return False
        tail.run = cand.run_id
        tail.arm = tail.arm or cand.arm
        tail.side_files = cand.side_files
        if not entry.config:
            entry.config = read_config(cand)
        _load_runinfo(cand, tail)
        tail.meta.setdefault("size", size)
        entry.size, entry.mtime, entry.sig = size, mtime, (size, mtime)
        entry.digest = self._digest(tail, cand)
        return True

    def _read_project(self, entry: Indexed[D | None]) -> bool:
        """A trackio project database's runs, each an entry of its own (``<db>#<run name>``, the ids a follower
        gives them), from one read of the whole database; the project's own entry gives way to them. False when
        the database cannot be read or was read already at its present size and time."""
        base = self._project_of.get(entry.run_id, entry.run_id)
        cand = self._projects.get(base, entry.cand)
        try:
            st = os.stat(cand.path)
            sig = _project_sig(cand.path, st)
            if entry.digest is not None and entry.sig == sig:
                return False  # (another run of the project read it in this refresh)
            src = make_source(cand, lambda bad: None)
            src.poll()
            stores = src.stores()
        except (OSError, ValueError) as e:
            if len(self.errors) < 100:
                self.errors.append(f"{cand.path}: {getattr(e, 'strerror', None) or e}")
            entry.sig = (-1, -1.0)
            return False
        if not stores:  # no run in it yet (or only problems): listed as the database, read again when it changes
            entry.size, entry.mtime, entry.sig = st.st_size, st.st_mtime, sig
            src.store.meta["preview_offset"] = 0
            entry.digest = self._digest(src.store, cand)
            return True
        self._projects[base] = cand
        runs = {k: v for k, v in self.runs.items() if k != base}
        for store in stores:
            sub = runs.get(store.run)
            if sub is None:
                sub = Indexed(replace(cand, run_id=store.run, arm=store.arm or cand.arm), st.st_size, st.st_mtime,
                              None)
            self._project_of[store.run] = base
            store.side_files = cand.side_files
            store.meta["preview_offset"] = 0
            store.meta.setdefault("size", st.st_size)
            sub.config = flat(store.meta.get("config") or {})
            sub.size, sub.mtime, sub.sig = st.st_size, st.st_mtime, sig
            sub.digest = self._digest(store, sub.cand)
            runs[store.run] = sub
        self.runs = runs  # (replaced, not changed: readers in other threads)
        return True
