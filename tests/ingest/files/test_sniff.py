"""What a file is, from its first bytes or lines: JSONL of metric rows, a console log, or neither."""

from __future__ import annotations

import os
from pathlib import Path

from steptable.ingest.files.sniff import log_kind, sniff_jsonl, starts_like_jsonl
from tests.library_logs import write_verl_rows


def _w(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_sniff_jsonl_wants_a_complete_first_row_of_metrics(tmp_path: Path) -> None:
    assert sniff_jsonl(_w(tmp_path / "m.jsonl", '{"step": 0, "loss": 0.5}\n')) is True
    assert sniff_jsonl(_w(tmp_path / "t.jsonl", '{"prompt": "a", "completion": "b"}\n')) is False
    assert sniff_jsonl(_w(tmp_path / "half.jsonl", '{"step": 0, "lo')) is None  # ask again once the line ends
    bad = "not json\n" * 3 + '{"step": 1, "loss": 0.1}\n'
    assert sniff_jsonl(_w(tmp_path / "b.jsonl", bad)) is True  # a few malformed lines before the first row


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    said: list[object] = []
    assert sniff_jsonl(fifo, on_error=lambda p, e: said.append(e)) is None and said
    assert starts_like_jsonl(fifo) is False and log_kind(fifo) == "console"  # (unread: its reader reports it)


def test_log_kind_tells_jsonl_rows_from_console_lines(tmp_path: Path) -> None:
    assert log_kind(write_verl_rows(tmp_path / "metrics.log", [(3, {"actor/loss": 0.1})])) == "jsonl"
    assert log_kind(_w(tmp_path / "train.log", "step:1 - loss:0.5\n")) == "console"
    assert log_kind(_w(tmp_path / "cfg.log", '{"data": {"train_files": "x"}}\n')) == "console"  # no step
    assert log_kind(_w(tmp_path / "cut.log", '{"step": 3')) is None
    assert starts_like_jsonl(_w(tmp_path / "bom.jsonl", '\ufeff  {"step": 0}\n'))
