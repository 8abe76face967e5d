"""Generations a tracker keeps inside its own files, read as samples: a trackio run's traces and a TensorBoard run's
text summaries. Pure (no textual).

- trackio: ``trackio.Trace`` rows of the project database (:mod:`steptable.ingest.readers.trackiotraces`): the
  assistant's messages are the completion, the others the prompt (``role: content`` lines where there are several),
  the metadata's ``score`` the reward, its other numbers the notes. verl's ``ValidationGenerationsLogger`` logs each
  validation sample so. And ``trackio.Table`` rows (TRL's completions), each read as a side file's row is.
- TensorBoard: ``add_text`` records (:func:`steptable.ingest.readers.tensorboard.event_at`, where the reader noted
  them). verl logs a validation step's samples as one markdown text (``### Sample i``, ``**Input:**``,
  ``**Output:**``, ``**Score:**``): each section is a sample. Any other text is one sample, titled by its tag.
"""

from __future__ import annotations

import re
import sqlite3
import struct
from pathlib import Path
from typing import Any

import msgspec

from steptable.app.samples import Sample, num, sample_or_error, short, text
from steptable.ingest.readers.tbwire import tb_texts
from steptable.ingest.readers.tensorboard import event_at
from steptable.ingest.readers.trackiotraces import table_rows, traces_at

#: a section of verl's validation text: ``### Sample <i>`` on a line of its own after a blank line
_VERL_SECTION = re.compile(r"(?<=\n\n)### Sample (\d+)\n")
#: what torch's SummaryWriter.add_text appends to the tag it is given
_TORCH_TEXT = "/text_summary"
_INPUT, _OUTPUT, _SCORE, _RULE = "**Input:** ", "\n\n**Output:** ", "\n\n**Score:** ", "\n\n---\n\n"


def trace_samples(step: int, db: Path, run: str) -> list[Sample]:
    """Run ``run``'s traces of ``step`` in trackio database ``db``, each a sample (one that cannot be read says so)."""
    try:
        traces = traces_at(db, run, step)
    except sqlite3.Error as e:
        return [Sample(step, f"{db.name}: traces unreadable", None, "", str(e)[:500])]
    out = []
    for t in traces:
        title = f"{t.key} #{t.index}"
        if t.error or not isinstance(t.messages, list):
            out.append(Sample(step, f"{title}: not a list of messages", None, "", t.error or text(t.messages)[:500]))
            continue
        msgs = [m for m in t.messages if isinstance(m, dict)]
        asked = [m for m in msgs if m.get("role") != "assistant"]
        said = [m for m in msgs if m.get("role") == "assistant"]
        meta = t.metadata if isinstance(t.metadata, dict) else {}
        notes = [f"{k} {short(x)}" for k, v in meta.items()
                 if k not in ("score", "sample_index") and (x := num(v)) is not None][:8]
        prompt = "\n".join(f"{text(m.get('role'))}: {_content(m.get('content'))}" for m in asked) \
            if len(asked) > 1 else _content(asked[0].get("content")) if asked else ""
        out.append(Sample(step, title, num(meta.get("score")), prompt,
                          "\n\n".join(_content(m.get("content")) for m in said), " · ".join(notes), prompt))
    return out


def table_samples(step: int, db: Path, row_id: int) -> list[Sample]:
    """The rows of the tables trackio database ``db`` holds in metrics row ``row_id``, each a sample."""
    try:
        rows = table_rows(db, row_id)
    except (sqlite3.Error, msgspec.DecodeError) as e:
        return [Sample(step, f"{db.name}: the table of row {row_id} is unreadable", None, "", str(e)[:500])]
    return [sample_or_error(step, r, db, "a table row") if isinstance(r, dict)
            else Sample(step, f"{db.name}: a table row that is no object", None, "", text(r)[:500]) for r in rows]


def _content(v: Any) -> str:
    """A message's content: text, or a list of parts (``{type: text, text}``: their text)."""
    if isinstance(v, list):
        return "\n".join(text(p.get("text")) if isinstance(p, dict) and "text" in p else text(p) for p in v)
    return text(v)


def event_texts(step: int, path: Path, offset: int, length: int) -> list[Sample]:
    """The samples of the text summary record at ``offset`` of TensorBoard event file ``path`` (one that cannot be
    read again, the file replaced since, says so)."""
    try:
        got = tb_texts(event_at(path, offset, length))
    except (OSError, ValueError, IndexError, struct.error) as e:
        return [Sample(step, f"{path.name}: the text at byte {offset} is unreadable", None, "", str(e)[:500])]
    out = []
    for tag, body in got[1] if got is not None else ():
        out += text_samples(step, tag.removesuffix(_TORCH_TEXT), body)
    return out


def text_samples(step: int, tag: str, body: str) -> list[Sample]:
    """A text summary as samples: verl's sections each, else the whole text."""
    parts = _VERL_SECTION.split(body)
    if len(parts) < 3:
        return [Sample(step, tag, None, "", body)]
    out = []
    for i, section in zip(parts[1::2], parts[2::2], strict=True):
        section = section.removesuffix(_RULE.lstrip("\n")).removesuffix("\n\n---").removesuffix("\n\n")
        out_at = section.find(_OUTPUT)
        score_at = section.rfind(_SCORE)
        if not section.startswith(_INPUT) or out_at < 0 or score_at < out_at:
            out.append(Sample(step, f"{tag} sample {i}", None, "", section))  # (verl's "**Data:**" form, or other)
            continue
        prompt = section[len(_INPUT) : out_at]
        score = section[score_at + len(_SCORE) :].strip()
        try:
            reward = float(score)
        except ValueError:
            reward = None
        out.append(Sample(step, f"{tag} sample {i}", reward, prompt, section[out_at + len(_OUTPUT) : score_at],
                          "" if reward is not None or not score else f"score {score[:200]}", prompt))
    return out
