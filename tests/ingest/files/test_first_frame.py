"""steptable.ingest.files.preview: rows from the end of a big file for a first frame (a CSV's header found at
its top)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import preview_tail
from tests.helpers import write_rows
from tests.ingest.helpers import rew_rows
from tests.trainer_logs import write_sb3_monitor


def test_preview_tail_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, rew_rows(0, 2000))
    store = preview_tail(path, max_bytes=4000)
    size = path.stat().st_size
    assert 0 < len(store) < 200 and store.steps[-1] == 1999 and store.bad == []
    assert store.steps[0] == 2000 - len(store) and store.meta["preview_offset"] > size - 4000
    assert len(preview_tail(path, max_bytes=10**9)) == 2000


def test_preview_of_a_big_monitor_csv_finds_its_header(tmp_path: Path) -> None:
    """The preview reads the header from the top of the file: past the comment line, not the comment line."""
    path = tmp_path / "0.monitor.csv"
    write_sb3_monitor(path, 2000)
    store = preview_tail(path, max_bytes=1000)
    assert store.meta["preview_offset"] > 0 and len(store) > 10 and not store.bad
    assert store.keys == ["r", "l", "t"] and store.value(len(store) - 1, "l") == 10 + 1999


def test_preview_tail_keeps_at_most_max_lines(tmp_path: Path) -> None:
    """``max_lines``: the newest rows of the window only (the rows a screen shows), the offset where they start."""
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, rew_rows(0, 2000))
    size = path.stat().st_size
    store = preview_tail(path, max_bytes=10**9, kind="jsonl", max_lines=50)
    assert len(store) == 50 and store.steps[0] == 1950 and store.steps[-1] == 1999 and store.bad == []
    assert 0 < store.meta["preview_offset"] < size and path.read_bytes()[store.meta["preview_offset"] - 1:][:1] == b"\n"
    small = preview_tail(path, max_bytes=4000, kind="jsonl", max_lines=10**6)  # fewer lines than asked: all of them
    assert len(small) == len(preview_tail(path, max_bytes=4000)) and small.steps[-1] == 1999
    whole = preview_tail(path, max_bytes=10**9, kind="jsonl", max_lines=2000)
    assert len(whole) == 2000 and whole.meta["preview_offset"] == 0
    assert len(preview_tail(path, max_bytes=10**9, kind="jsonl", max_lines=0)) == 1  # (at least the newest row)


def test_preview_tail_max_lines_leaves_a_csv_window_whole(tmp_path: Path) -> None:
    path = tmp_path / "0.monitor.csv"
    write_sb3_monitor(path, 2000)
    assert len(preview_tail(path, max_bytes=1000, max_lines=3)) == len(preview_tail(path, max_bytes=1000))


def test_a_csv_rewritten_during_the_preview_gets_the_columns_of_the_rows_read(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Lightning writes metrics.csv again, its columns re-sorted, when a key appears: rewritten right after the
    preview read its window, the header read after it named other columns (``a_new`` took each row's step)."""
    from lightning.fabric.loggers import CSVLogger

    import steptable.ingest.files.preview as preview_mod

    logger = CSVLogger(str(tmp_path), name="exp", version=0, flush_logs_every_n_steps=10**9)
    for s in range(2000):
        logger.log_metrics({"train_loss": s / 4}, step=s)
    logger.save()
    path = Path(logger.log_dir) / "metrics.csv"

    class Rewritten:  # the file the preview opens: Lightning rewrites it as the window's read returns
        def __init__(self, f: Any) -> None:
            self.f = f

        def read(self, n: int = -1) -> bytes:
            data = self.f.read(n)
            if len(data) > 1000 and not done:
                done.append(True)
                logger.log_metrics({"a_new": 1.0}, step=2000)
                logger.save()
            return data

        def __getattr__(self, name: str) -> Any:
            return getattr(self.f, name)

        def __enter__(self) -> Rewritten:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

    done: list[bool] = []
    opened = preview_mod.open_regular
    monkeypatch.setattr(preview_mod, "open_regular", lambda path: Rewritten(opened(path)))
    store = preview_tail(path, max_bytes=4000)
    assert done and len(store) > 100 and not store.bad
    assert list(store.column("train_loss")) == [s / 4 for s in store.steps]  # (up to the size it found)
