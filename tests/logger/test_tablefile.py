"""steptable.logger.tablefile: table.txt holds every row an arm logged, one per step (a resume's rows replace
the crashed ones, a late evaluation joins its step), one table per arm."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger


def test_table_txt_of_a_resumed_run_holds_each_step_once(tmp_path: Path) -> None:
    """A crash at step 7 and a resume from the checkpoint at step 4: table.txt shows the resumed rows from step 4
    on (as tail and watch do), and an evaluation logged apart for a step joins that step's row."""
    cols = [Col("step", 4, "step", "d"), Col("rew", 6, "rew", ".2f"), Col("acc", 6, "acc", ".2f")]
    sl = StepLogger(cols, run_dir=tmp_path, console=False, alerts=False)
    for step in range(8):
        sl.log({"step": step, "rew": 0.1})
    sl._writer.close()  # the crash: no close(), no table
    with StepLogger(cols, run_dir=tmp_path, console=False, alerts=False) as sl:
        for step in range(4, 10):
            sl.log({"step": step, "rew": 0.9})
            if step == 5:
                sl.log({"step": step, "acc": 0.5})
    table = [line.split() for line in (tmp_path / "table.txt").read_text().splitlines()[1:]]
    assert [int(r[0]) for r in table] == list(range(10))
    assert [r[1] for r in table] == ["0.10"] * 4 + ["0.90"] * 6 and table[5][2] == "0.50"


def test_table_txt_keeps_the_rows_an_evaluation_of_an_earlier_step_joins(tmp_path: Path) -> None:
    """An asynchronous evaluation of step 1 logged after step 2 shares a key (epoch) with its step's row: it joins
    that row, as every reader places it, and step 2 stays (table.txt lost it as a resume)."""
    cols = [Col("step", 4, "step", "d"), Col("loss", 6, "loss", ".2f"), Col("eval_acc", 6, "acc", ".2f")]
    with StepLogger(cols, run_dir=tmp_path, console=False, alerts=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": 1 - step / 10, "epoch": 0.1 * step})
        sl.log({"step": 1, "epoch": 0.1, "eval_acc": 0.5, "eval_loss": 0.7})
    table = [line.split() for line in (tmp_path / "table.txt").read_text().splitlines()[1:]]
    assert table == [["0", "1.00"], ["1", "0.90", "0.50"], ["2", "0.80"]]  # eval_acc not logged: blank


def test_two_arms_in_one_run_dir_keep_their_own_tables(tmp_path: Path) -> None:
    cols = [Col("step", 5, "step", "d", "s"), Col("loss", 6, "loss", None, "l")]
    a = StepLogger(cols, run_dir=tmp_path, arm="A/x", console=False)
    b = StepLogger(cols, run_dir=tmp_path, arm="B", console=False)
    for i in range(3):
        a.log({"step": i, "loss": 1.0})
        b.log({"step": i, "loss": 2.0})
    a.close()
    b.close()
    (ta,) = [p.read_text() for p in tmp_path.glob("table.A_x-*.txt")]  # (hashed: "A/x" and "A_x" differ)
    tb = (tmp_path / "table.B.txt").read_text()
    assert [line.split()[1] for line in ta.splitlines()[1:]] == ["1"] * 3
    assert [line.split()[1] for line in tb.splitlines()[1:]] == ["2"] * 3
    c = StepLogger(cols, run_dir=tmp_path, arm="A_x", console=False)  # a name reading alike: its own table
    c.log({"step": 0, "loss": 3.0})
    c.close()
    assert (tmp_path / "table.A_x.txt").read_text().splitlines()[1].split() == ["0", "3"]
    assert len(list(tmp_path.glob("table.A_x-*.txt"))) == 1
    alone = StepLogger(cols, run_dir=tmp_path / "solo", arm="C", console=False)
    alone.log({"step": 0, "loss": 3.0})
    alone.close()
    assert (tmp_path / "solo" / "table.txt").exists() and not list((tmp_path / "solo").glob(".*tmp"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_put_at_the_jsonl_after_its_stat_does_not_hold_up_the_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSONL is a regular file when table.txt's writer looks, and a FIFO by the time it opens it: the open must
    not wait for a writer of the FIFO (close() would hang there); the FIFO is no file to read back, as a FIFO found
    by the look is not."""
    from steptable.logger import tablefile

    jsonl = tmp_path / "metrics.jsonl"
    jsonl.write_text('{"step": 0, "loss": 1.0}\n')
    real_stat = os.stat

    def stat_then_fifo(p: Any, *a: Any, **kw: Any) -> os.stat_result:
        st = real_stat(p, *a, **kw)
        if Path(p) == jsonl and not stat.S_ISFIFO(real_stat(jsonl).st_mode):
            jsonl.unlink()
            os.mkfifo(jsonl)
        return st

    done = threading.Event()

    def feeder() -> None:  # (a writer of the FIFO, for an open that waits for one: the test ends either way)
        while not done.wait(0.05):
            try:
                fd = os.open(jsonl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # (ENXIO: nobody is reading it)
                continue
            os.write(fd, b'{"step": 1, "loss": 1.0}\n')
            os.close(fd)
            return

    monkeypatch.setattr(tablefile.os, "stat", stat_then_fifo)
    t = threading.Thread(target=feeder, daemon=True)
    t.start()
    try:
        got = tablefile.write_table([Col("step", 5, "step", "d")], jsonl, tmp_path, None, 25)
    finally:
        done.set()
        t.join(10)
    assert got is None and not (tmp_path / tablefile.TABLE_NAME).exists()


def test_the_keys_the_console_leaves_out_of_an_automatic_row_are_columns_of_the_table(
        tmp_path: Path, captured: list[str]) -> None:
    """Keys that do not fit a pipe's 200 cells are named before the first header, "(all in table.txt)", and the
    end of the run says table.txt has every column: it held the printed columns only."""
    keys = [f"k{i:02d}" for i in range(60)]
    with StepLogger(run_dir=tmp_path, alerts=False) as lg:
        for step in range(3):
            lg.log({"step": step, **{k: 1e3 ** step * (i + 1.5) for i, k in enumerate(keys)}})
    said = next(line for line in "".join(captured).splitlines() if "left out:" in line)
    assert "(all in table.txt)" in said
    left_out = [k for k in keys if k in said]
    printed = [c.key for c in lg.stream_cols]
    assert left_out and not set(left_out) & set(printed)
    lines = (tmp_path / "table.txt").read_text().splitlines()
    head = lines[0].split()
    assert set(keys) <= set(head), sorted(set(keys) - set(head))
    last = dict(zip(head, lines[-1].split(), strict=True))
    # each as wide as its values (as wide as the first row's, the last row's 42500000 read "4e7")
    assert [float(last[k]) for k in keys] == [1e6 * (i + 1.5) for i in range(60)]


def test_the_columns_no_printed_row_had_are_bounded_by_their_cells_and_the_end_says_so(
        tmp_path: Path, captured: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of those columns is fitted and rendered at close for every row: past EXTRA_CELLS the table holds the
    first of them (by the layout's rank), and the end of the run counts the others rather than say every column."""
    from steptable.logger import tablefile

    monkeypatch.setattr(tablefile, "EXTRA_CELLS", 3 * 10)
    keys = [f"k{i:02d}" for i in range(60)]
    with StepLogger(run_dir=tmp_path, alerts=False) as lg:
        for step in range(3):
            lg.log({"step": step, **{k: 10000.5 * (i + 1) for i, k in enumerate(keys)}})
    printed = [c.key for c in lg.stream_cols]
    head = (tmp_path / "table.txt").read_text().splitlines()[0].split()
    assert head == printed + [k for k in keys if k not in printed][:10]
    end = "".join(captured).split("end of run:")[1]
    assert f"every column but {60 + 1 - len(head)} (too many cells; every key: metrics.jsonl)" in end
