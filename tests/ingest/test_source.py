"""steptable.ingest.source: one followed file feeding one store: row wall times (a row's own clock, the time a
followed row arrived, unknown for rows already in the file; a one-shot read invents no rate or age), and a reader's
bug on one chunk costs that chunk only."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.store as store_mod
from steptable.ingest import Follower, load
from steptable.ingest.files.tail import BLOCK
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.summary.report import header_text
from tests.helpers import write_rows


def _rows(start: int, n: int, ts: float | None = None) -> bytes:
    out = []
    for s in range(start, start + n):
        r: dict[str, object] = {"step": s, "loss": 1.0 / (s + 1)}
        if ts is not None:
            r["ts"] = ts + 30.0 * s
        out.append(json.dumps(r))
    return ("\n".join(out) + "\n").encode()


def test_a_backlog_without_a_clock_has_no_rate(tmp_path: Path) -> None:
    """1000 rows read in several chunks, the last line without its newline: no rate, the age is the file's."""
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    big = _rows(0, 30_000)
    path.write_bytes(big[:-1])  # several 256 KB chunks, and a last line that `finish` reads
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    store = load([tmp_path])["run/metrics.jsonl"]
    assert len(store) == 30_000
    assert all(math.isnan(t) for t in store.wall_times)
    text = header_text(store, time.time())
    assert text.startswith("steps 0-29999, idle since ") and "step/min" not in text and "s/step" not in text


def test_rows_that_arrive_while_following_get_their_arrival_time(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_bytes(_rows(0, 5))
    f = Follower([tmp_path])
    f.scan()
    with open(path, "ab") as out:
        out.write(_rows(5, 3))
    monkeypatch.setattr(store_mod.time, "time", lambda: 1_700_000_123.5)  # the clock the store reads rows by
    f.scan()
    walls = f.stores["run/metrics.jsonl"].wall_times
    assert all(math.isnan(t) for t in walls[:5])
    assert list(walls[5:]) == [1_700_000_123.5] * 3


def test_rows_written_after_an_empty_first_read_are_live(tmp_path: Path) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"")
    f = Follower([tmp_path])
    f.scan()
    path.write_bytes(_rows(0, 2))
    f.scan()
    assert all(math.isfinite(t) for t in f.stores["run/metrics.jsonl"].wall_times)


def test_the_age_of_a_run_whose_last_row_lacks_its_clock(tmp_path: Path) -> None:
    """Rows with ``ts`` from three days ago, then an eval row without one: the run is three days old, not new."""
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    t0 = time.time() - 3 * 86400
    path.write_bytes(_rows(0, 50, ts=t0) + b'{"step": 50, "eval/acc": 0.5}\n')
    os.utime(path, (t0 + 1500, t0 + 1500))
    store = load([tmp_path])["run/metrics.jsonl"]
    assert store.last_update is not None and abs(store.last_update - (t0 + 1500)) < 1
    text = header_text(store, time.time())
    from steptable.alerts.activity import since_words

    # three days quiet: idle since the file's last write, not since its last row's clock
    assert "30s/step" in text and f"idle since {since_words(t0 + 1500, time.time())}" in text, text


def test_rows_with_their_own_clock_keep_it(tmp_path: Path) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    t0 = 1.7e9
    path.write_bytes(_rows(0, 10, ts=t0))
    store = load([tmp_path])["run/metrics.jsonl"]
    assert list(store.wall_times) == [t0 + 30.0 * s for s in range(10)]
    assert store.last_update == t0 + 270.0


def _failing_on(monkeypatch: pytest.MonkeyPatch, marker: bytes) -> None:
    """JsonlParser raises on any chunk that holds ``marker`` (a bug of ours met by one row)."""
    parse = JsonlParser.parse

    def buggy(self: JsonlParser, chunk: bytes, lineno: Any) -> Any:
        if marker in chunk:
            raise KeyError("reader bug")
        return parse(self, chunk, lineno)

    monkeypatch.setattr(JsonlParser, "parse", buggy)


def test_a_bug_on_one_chunk_costs_that_chunk_not_the_rest_of_a_one_shot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail has read past a chunk the parser failed on; a one-shot read has no next poll, so it reads on:
    the rows after that chunk are read too (a summary of a 600 KB file shows all of it, not its first 256 KiB)."""
    path = tmp_path / "r" / "metrics.jsonl"
    pad = "x" * 80
    write_rows(path, [{"step": s, "rew": 0.5, "pad": pad} for s in range(6000)])
    write_rows(path, [{"step": 6000, "rew": 0.5, "pad": "boom"}])  # in the third block of 256 KiB, of four
    write_rows(path, [{"step": s, "rew": 0.5, "pad": pad} for s in range(6001, 9000)])
    _failing_on(monkeypatch, b'"boom"')
    f = Follower([tmp_path])
    f.scan()
    lost = sorted(set(range(9000)) - set(f.stores["r/metrics.jsonl"].steps))
    assert 6000 in lost and lost == list(range(lost[0], lost[-1] + 1))  # one run of rows: the failing chunk's
    assert len(lost) * len(json.dumps({"step": 6000, "rew": 0.5, "pad": pad})) < BLOCK and lost[-1] < 8999
    assert f.errors == [f"{path}: internal error (KeyError: 'reader bug')"]


def test_a_bug_on_the_last_unfinished_line_does_not_end_a_one_shot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in ``finish()`` (the last line, without its newline) does not raise out of the command: the summary
    is still given."""
    good, cut = tmp_path / "a" / "metrics.jsonl", tmp_path / "b" / "metrics.jsonl"
    write_rows(good, [{"step": 0, "rew": 0.5}])
    write_rows(cut, [{"step": 0, "rew": 0.5}])
    with open(cut, "a") as fh:
        fh.write(json.dumps({"step": 1, "rew": "boom"}))
    _failing_on(monkeypatch, b'"boom"')
    stores = load([tmp_path])
    assert list(stores["a/metrics.jsonl"].steps) == [0] and list(stores["b/metrics.jsonl"].steps) == [0]
