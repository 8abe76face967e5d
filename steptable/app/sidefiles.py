"""Generations side files: which steps have samples, and the samples of one step. Pure (no textual).

Three shapes are read:
- retrain ``emergence/generations.jsonl``: several rows per step ``{step, prompt, completion, reward, num_tokens}``;
- tinker ``iteration_NNNNNN/<split>_rollout_summaries.jsonl``: one row per trajectory ``{total_reward, steps: [...]}``
  (the step is the iteration number of the directory);
- MaxEnt-GRPO ``rich_completions/<table>_step_NNNNNN.json``: one table per step ``{columns: [...], data: [[...]]}``
  whose rows name ``prompt``, ``completion``, ``reward_total`` (and advantage, ranks, weights...);
- a ``wandb.Table`` logged in a W&B run, ``files/media/table/[<folders>/]<key>_<n>_<hash>.table.json``: the same
  shape, at the step of the record that logged it where the run file was read (:func:`table_steps`), else ``n``;
- verl's rollout dumps ``<rollout_data_dir or validation_data_dir>/<step>.jsonl``: one row per generation
  ``{input, output, gts, score, step, ...}`` (titled by their directory, so rollouts and validation stay apart);
- TRL's ``completions/completions_<step>.parquet`` (read with pyarrow: the ``steptable[parquet]`` extra): one row per
  completion ``{step, prompt, completion, <one column per reward function>, advantage}``; the reward is their sum;
- a trackio run's traces and a TensorBoard run's text summaries (verl's validation generations in either): read from
  the tracker's files as :mod:`steptable.app.trackergens` says.

Samples of one prompt make a group (GRPO's group: several completions of one prompt); ``Sample.group`` names it.

The index keeps byte offsets, not text, so a multi-GB generations file costs a few bytes per row; a step's rows are
read when it is shown. Lines are decoded by the ingest's tolerant decoder. Text stays raw here: the viewer makes it
inert (sanitize + Rich Text).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steptable.app.samples import Sample as Sample
from steptable.app.samples import num, sample_or_error, text
from steptable.app.trackergens import event_texts, table_samples, trace_samples
from steptable.ingest.files.dumps import dump_step, wandb_table
from steptable.ingest.parse import LineError, decode_line
from steptable.ingest.readers.hf import decode_document
from steptable.ingest.readers.trackiotraces import trace_steps

_ITER_DIR = re.compile(r"iteration_(\d+)$")
_RICH = re.compile(r"_step_(\d+)\.json$")
_WANDB_TABLE = re.compile(r"_(\d+)(_[0-9a-f]+)\.table\.json$")  # (its name's step, the hash of its content)
_STEP_RE = re.compile(rb'"(?:step|iteration)"\s*:\s*(-?\d+)')
#: the offset of a step's traces in a SideIndex entry (read from the database, not at an offset of a file)
TRACES = -1
#: the offset of a trackio table in a SideIndex entry: its length is the metrics row that holds it
TRACKIO_TABLE = -2
#: the name of a TensorBoard event file, whose SideIndex entries are text summary records
EVENTS_PREFIX = "events.out.tfevents."
#: bytes of one step's rows read at most (a single-step file can be any size; the viewer shows a page anyway)
MAX_READ = 32 << 20


def _rich_step(path: Path) -> re.Match[str] | None:
    """The step match of a ``{columns, data}`` table of one step, else None: MaxEnt-GRPO's
    ``rich_completions/<table>_step_N.json``, or a ``wandb.Table`` beside a W&B run
    (``files/media/table/[<folders>/]<key>_<n>_<hash>.table.json``)."""
    if path.parent.name == "rich_completions":
        return _RICH.search(path.name)
    if wandb_table(path):
        return _WANDB_TABLE.search(path.name)
    return None


@dataclass(frozen=True)
class GenSource:
    """An arm's generations: its side files, the steps its run file gives some of them (:func:`table_steps`), the
    trackio database and run name whose traces and tables it logged (None: none), a TensorBoard run's texts."""

    label: str
    files: list[Path]
    steps: Mapping[Path, int] = field(default_factory=dict)
    traces: tuple[Path, str] | None = None
    texts: Sequence[tuple[str, int, int, int, str]] = ()  # a TensorBoard run's text summaries: meta["texts"]
    tables: Sequence[tuple[int, str, int]] = ()  # the trackio run's tables: meta["trackio_tables"]


@dataclass
class SideIndex:
    """Steps with samples and where each step's rows live."""

    # step -> [(path, offset, length)]; offset TRACES: the step's traces in the trackio database ``path``
    where: dict[int, list[tuple[Path, int, int]]] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)
    trace_run: str = ""  # the run whose traces the TRACES entries are

    def nearest(self, step: int) -> int | None:
        """The step with samples closest to ``step`` (of two as close, the one before it); None: no samples."""
        if not self.steps:
            return None
        i = bisect_left(self.steps, step)
        if i == len(self.steps) or (i > 0 and step - self.steps[i - 1] <= self.steps[i] - step):
            return self.steps[i - 1]
        return self.steps[i]

    def samples(self, step: int) -> list[Sample]:
        """The samples of ``step``, read now. A file of one step is read whole as it is now, not as it was when
        indexed (a trainer may have been writing it); its last line, without its newline and not decoding, is one
        being written and is passed over (a bad line otherwise says where it is)."""
        out: list[Sample] = []
        for path, off, length in self.where.get(step, ()):
            if off == TRACES:
                out += trace_samples(step, path, self.trace_run)
                continue
            if off == TRACKIO_TABLE:
                out += table_samples(step, path, length)
                continue
            if path.name.startswith(EVENTS_PREFIX):  # a text summary where the TensorBoard reader found it
                out += event_texts(step, path, off, length)
                continue
            try:
                with open(path, "rb") as fh:
                    if _file_step(path) is not None:  # the whole file, as it is now (it was indexed by name)
                        length = os.fstat(fh.fileno()).st_size
                    fh.seek(off)
                    data = fh.read(min(length, MAX_READ))
            except OSError as e:
                out.append(Sample(step, f"{path}: unreadable", None, "", str(e)))
                continue
            if _rich_step(path) is not None:
                out += _table_samples(step, data, path)
                continue
            if path.suffix == ".parquet":
                out += _parquet_samples(step, path)
                continue
            if length > MAX_READ:  # whole lines only
                data = data[: data.rfind(b"\n") + 1]
            pos = off
            lines = data.split(b"\n")
            for i, line in enumerate(lines):
                try:
                    obj = decode_line(line)
                except LineError as e:
                    if i == len(lines) - 1:  # a last line without its newline that does not decode: being written
                        break
                    out.append(Sample(step, f"{path.name}: bad line at byte {pos}", None, "", str(e)))
                    obj = None
                if obj is not None:
                    out.append(sample_or_error(step, obj, path, f"a row at byte {pos}"))
                pos += len(line) + 1
            if length > MAX_READ:
                out.append(Sample(step, f"{path.name}: {length - len(data):,} more bytes of this step not read",
                                  None, "", ""))
        return out


def _table_samples(step: int, data: bytes, path: Path) -> list[Sample]:
    """The rows of a ``{columns, data}`` table (MaxEnt-GRPO's rich_completions, a ``wandb.Table``), each a sample;
    of a table that holds a ``step`` column, the rows of ``step`` where it has any (verl logs its validation table
    again with every earlier step's row); a row of ``input_<i>``, ``output_<i>``, ``score_<i>`` columns (verl's: one
    row a step) is a sample for each ``i``."""
    try:
        doc = decode_document(data)
    except Exception as e:  # malformed, cut short by MAX_READ, nested too deeply
        return [Sample(step, f"{path.name}: not a readable table", None, "", str(e)[:500])]
    cols = doc.get("columns") if isinstance(doc, dict) else None
    rows = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(cols, list) or not isinstance(rows, list):
        return [Sample(step, f"{path.name}: not a {{columns, data}} table", None, "", "")]
    names = [text(c) for c in cols]
    if "step" in names:
        at = names.index("step")
        steps = [num(r[at]) if isinstance(r, list) and len(r) > at else None for r in rows]
        if step in steps:  # (a row that is no list, or has no step, stays: it is shown as what it is)
            rows = [r for r, x in zip(rows, steps, strict=True) if x is None or x == step]
    wide = [i for i in range(1, len(names) + 1) if f"input_{i}" in names and f"output_{i}" in names]
    out = []
    for row in rows:
        if not isinstance(row, list):
            out.append(Sample(step, f"{path.name}: a row that is not a list", None, "", text(row)[:500]))
            continue
        obj = dict(zip(names, row, strict=False))
        for one in [{k: obj.get(f"{k}_{i}") for k in ("input", "output", "score")} for i in wide] or [obj]:
            out.append(sample_or_error(step, one, path, "a table row"))
    return out


def _parquet_samples(step: int, path: Path) -> list[Sample]:
    """The rows of a TRL completions parquet, each a sample (pyarrow is optional: without it, one sample says
    which extra reads them)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return [Sample(step, f"{path.name}: install steptable[parquet] to read it (pip install "
                             "'steptable[parquet]')", None, "", "")]
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # (ArrowInvalid, OSError: damaged, cut short, being written)
        return [Sample(step, f"{path.name}: not a readable parquet file", None, "", f"{type(e).__name__}: {e}"[:500])]
    return [sample_or_error(step, row, path, "a row") for row in rows]


def side_paths(side_files: Mapping[str, Iterable[Path]]) -> list[Path]:
    """The generations-like files among a run's side files (whatever key ingest filed them under)."""
    out = []
    for paths in side_files.values():
        for p in paths:
            p = Path(p)
            if p.name.endswith(("generations.jsonl", "_rollout_summaries.jsonl")) or _rich_step(p) is not None \
                    or dump_step(p) is not None:
                out.append(p)
    return sorted(set(out))


def table_steps(meta: Mapping[str, Any]) -> dict[Path, int]:
    """Each ``wandb.Table`` file of a W&B run (in the directory of the run file that logged it) -> the step of the
    record that logged it (the run's ``meta["tables"]``); {} for any other run."""
    tables = meta.get("tables")
    if not isinstance(tables, Mapping):
        return {}
    return {Path(p): step for p, step in tables.items() if isinstance(p, str) and type(step) is int}


def build_index(paths: Iterable[Path], steps: Mapping[Path, int] | None = None,
                traces: tuple[Path, str] | None = None,
                texts: Iterable[tuple[str, int, int, int, str]] = (),
                tables: Iterable[tuple[int, str, int]] = ()) -> SideIndex:
    """Index the given side files (generations.jsonl by the step of each line; rollout summaries by directory; a
    file of one step by ``steps`` (:func:`table_steps`) where it names it, else by its name), the traces of
    ``traces`` (a trackio database, a run name) and the text summaries ``texts`` (where a TensorBoard run's reader
    found them: ``meta["texts"]``) and the tables of that trackio run (``meta["trackio_tables"]``: (row, key, step);
    a key's table logged again at a step, TRL's last, once). Raises sqlite3.Error where the database cannot be
    read."""
    idx = SideIndex()
    if traces is not None:
        db, idx.trace_run = traces
        last = {(key, at): row for row, key, at in sorted(tables)}
        for (_, at), row in sorted(last.items(), key=lambda kv: kv[1]):
            idx.where.setdefault(at, []).append((db, TRACKIO_TABLE, row))
        for at in trace_steps(db, idx.trace_run):
            idx.where.setdefault(at, []).append((db, TRACES, 0))
    for file, at, length, step_at, _ in texts:
        idx.where.setdefault(step_at, []).append((Path(file), at, length))
    seen: set[tuple[int, Path, str]] = set()
    for path in paths:
        step = steps.get(path) if steps else None
        if step is None:
            step = _file_step(path)
        if step is not None and wandb_table(path) and (m := _WANDB_TABLE.search(path.name)) is not None:
            same = (step, path.parent, path.name[: m.start()] + m.group(2))
            if same in seen:  # one table logged twice at a step (TRL's last completions, again at the end)
                continue
            seen.add(same)
        if step is not None:  # one file, one step: the whole file
            try:
                size = path.stat().st_size
            except OSError:
                continue
            idx.where.setdefault(step, []).append((path, 0, size))
        else:
            _index_lines(path, idx)
    idx.steps = sorted(idx.where)
    return idx


def _file_step(path: Path) -> int | None:
    """The step of a file that holds one step's samples (named by it, or by its directory), else None."""
    rollouts = path.name.endswith("_rollout_summaries.jsonl")
    m = _ITER_DIR.search(path.parent.name) if rollouts else _rich_step(path)
    return int(m.group(1)) if m is not None else dump_step(path)


def _index_lines(path: Path, idx: SideIndex) -> None:
    """Runs of consecutive lines with the same step become one (offset, length) span."""
    try:
        fh = open(path, "rb")
    except OSError:
        return
    with fh:
        off = 0
        cur: int | None = None
        start = 0
        for line in fh:
            if not line.endswith(b"\n"):  # a partial last line: the writer is not done with it
                break
            step = _line_step(line, cur)
            if step != cur:
                if cur is not None:
                    idx.where.setdefault(cur, []).append((path, start, off - start))
                cur, start = step, off
            off += len(line)
        if cur is not None and off > start:
            idx.where.setdefault(cur, []).append((path, start, off - start))


def _line_step(line: bytes, cur: int | None) -> int | None:
    """The step a line names, else ``cur`` (the line goes with the rows before it; an undecodable one shows there as
    a bad line)."""
    m = _STEP_RE.search(line)
    if m is None:
        return cur
    try:
        return int(m.group(1))
    except ValueError:  # more digits than int() converts (4300): no real step
        return cur
