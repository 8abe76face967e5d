"""StepLogger without a column set: its columns come from the first row, and from each row that brings new keys."""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from steptable import StepLogger
from steptable.logger.autocols import MAX_GROWS, AutoColumns, auto_columns
from steptable.logger.consolecols import ConsoleLayout
from steptable.table.runinfo import WRITER_KEY


def test_a_logger_without_columns_prints_the_first_rows_keys(tmp_path: Path) -> None:
    with StepLogger(run_dir=tmp_path, console=False) as lg:
        first = lg.log({"step": 0, "loss": 2.5, "reward": 0.25, "nested": {"kl": 0.01}})
        lg.log({"step": 1, "loss": 2.25, "reward": 0.5, "nested": {"kl": 0.02}, "late": 1.0})
    # "reward" over a 3-cell value is abbreviated (steptable.logger.consolecols)
    assert first is not None and first.split() == ["0", "2.5", ".25", ".01"]
    # a key first logged later is laid out with the others from its row on, and the description names it
    assert lg.header().split() == ["step", "loss", "rew", "kl", "late"]
    info = json.loads((tmp_path / "steptable.json").read_text())
    assert [c["key"] for c in info["columns"]] == ["step", "loss", "reward", "nested/kl", "late"]
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[1]["late"] == 1.0


def test_columns_laid_out_again_keep_the_runs_start_and_its_writer(tmp_path: Path) -> None:
    """The description written again for the new columns keeps the first row's start, and the logger does not take
    its own arm's lock a second time (its rows would be marked as a second writer's)."""
    with StepLogger(run_dir=tmp_path, console=False, alerts=False) as lg:
        lg.log({"step": 0, "loss": 2.5})
        started = json.loads((tmp_path / "steptable.json").read_text())["started"]
        time.sleep(0.02)
        lg.log({"step": 1, "loss": 2.25, "val/acc": 0.5})
        info = json.loads((tmp_path / "steptable.json").read_text())
    assert info["started"] == started and [c["key"] for c in info["columns"]] == ["step", "val/acc", "loss"]
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert not any(WRITER_KEY in r for r in rows)


def test_a_key_first_logged_later_gets_its_column_its_legend_line_and_the_header_again(
        captured: list[str]) -> None:
    """An algorithm's losses from its first update on (CleanRL's PPO logs losses/* after the first rollout): the
    rows before print without them, the row that brings them prints under a header that has them, with a legend line
    for each abbreviated header new to the legend; rows with the same keys print no further legend."""
    rows = [{"step": 64, "charts/episodic_return": 25.0, "charts/SPS": 1243.0}]
    rows += [{"step": 64 * k, "charts/episodic_return": 25.0 + k, "charts/SPS": 1200.0 + k,
              "losses/value_loss": 112.0 / k, "losses/approx_kl": 1.5e-6 * k} for k in range(2, 6)]
    with StepLogger(header_every=0, alerts=False) as lg:
        for row in rows:
            lg.log(row)
    printed = "".join(captured).split("end of run")[0].splitlines()
    headers = [i for i, line in enumerate(printed) if line.startswith("I step")]
    legends = [i for i, line in enumerate(printed) if line == "I columns:"]
    assert len(legends) == 2 and headers[0] == legends[0] + 3 and headers[1] == legends[1] + 3
    first, second = (printed[i][2:].split() for i in headers[:2])
    assert first == ["step", "er", "SPS"] and second[:5] == ["step", "er", "SPS", "vl", "ak"]
    new_lines = printed[legends[1] + 1:headers[1]]
    assert any("losses/value_loss" in line for line in new_lines)
    assert not any("charts/episodic_return" in line for line in new_lines)  # (explained already)
    assert printed[headers[1] + 1].split()[1] == "128"  # the row that brought the keys, under the new header
    later = [line.split() for line in printed[headers[1] + 1:] if re.match(r"I +\d+ ", line)]
    assert [row[1] for row in later] == ["128", "192", "256", "320"] and {len(row) for row in later} == {6}


def test_a_key_that_is_not_text_is_named_as_the_file_names_it_and_later_keys_still_get_columns(
        captured: list[str]) -> None:
    """A row with a key 0 (a per-class metric logged by its index) beside a new metric: the console names it "0",
    as its JSONL line does, and the keys after it still get their columns (the layout used to fail on the int key and
    keep the first row's columns for the rest of the run)."""
    with StepLogger(header_every=0, alerts=False) as lg:
        lg.log({"step": 0, "loss": 1.0})
        lg.log({"step": 1, "loss": 0.9, 0: 0.7, "reward": 0.5})
        lg.log({"step": 2, "loss": 0.8, "reward": 0.6, "kl": 0.1})
    printed = "".join(captured).split("end of run")[0]
    assert "could not be laid out" not in printed
    headers = [line[2:].split() for line in printed.splitlines() if line.startswith("I step")]
    assert headers[-1] == ["step", "loss", "0", "rew", "kl"]


def test_new_keys_past_the_rows_width_change_nothing_printed() -> None:
    """An AutoColumns that has no room for a new key lays out the same columns: no new header for it."""
    auto = AutoColumns(max_width=24)
    first = {"step": 1, "loss": 0.5, "reward": 0.25}
    cols = auto.first(first, first)
    assert [c.key for c in cols] == ["step", "loss", "reward"]
    assert auto.knows({"loss": 1.0}) and not auto.knows({"loss": 1.0, "a_long_metric_name_of_a_kind": 2.0})
    later = {"step": 2, "loss": 0.4, "reward": 0.3, "a_long_metric_name_of_a_kind": 2.0}
    assert auto.grow(later, later) is None  # (no room in 24 cells: the same columns, no new header)
    assert auto.knows(later)  # and the key is not laid out again at every row


def test_a_record_only_logger_keeps_later_keys_in_its_table_file(tmp_path: Path) -> None:
    with StepLogger(run_dir=tmp_path, console=False, alerts=False) as lg:
        lg.record({"step": 0, "loss": 2.5})
        lg.record({"step": 1, "loss": 2.25, "val/acc": 0.5})
    assert [c.key for c in lg.cols] == ["step", "val/acc", "loss"]  # (an evaluation leads)
    assert "val/acc" in (tmp_path / "table.txt").read_text() or "acc" in (tmp_path / "table.txt").read_text()


def test_a_run_opened_again_keeps_the_columns_of_its_earlier_process(tmp_path: Path) -> None:
    """A logger that opens a run again (Lightning's test() after fit, a resume) with rows of other keys lays out
    the earlier process's columns with its own: the run's description and table.txt had the test's columns only."""
    from steptable.table import runinfo

    with StepLogger(run_dir=tmp_path, console=False, alerts=False) as lg:
        for step in range(3):
            lg.log({"step": step, "train_loss": 1.0 / (step + 1), "val_loss": 0.5})
    with StepLogger(run_dir=tmp_path, console=False, alerts=False) as lg:
        lg.log({"step": 3, "test_loss": 0.25})
    keys = [c.key for c in lg.cols]
    assert {"train_loss", "val_loss", "test_loss"} <= set(keys)
    info = json.loads((tmp_path / "steptable.json").read_text())
    assert {"train_loss", "val_loss", "test_loss"} <= set(runinfo.column_keys(info))
    head = (tmp_path / "table.txt").read_text().splitlines()[0].split()
    assert {"train_loss", "val_loss", "test_loss"} <= set(head)


def test_a_first_row_that_cannot_be_walked_still_reaches_the_file(tmp_path: Path) -> None:
    class Odd(dict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def,override]
            raise RuntimeError("no items")

    with StepLogger(run_dir=tmp_path, console=False) as lg:
        lg.log({"step": 0, "loss": 1.0, "odd": Odd(a=1)})
    assert lg.cols and lg.cols[0].key == "step"


def test_keys_new_on_every_row_are_laid_out_a_bounded_number_of_times(captured: list[str]) -> None:
    """Per-sample keys (a new name on every row): after MAX_GROWS such rows the columns stay as they are, and no
    further header is printed for them."""
    with StepLogger(header_every=0, alerts=False) as lg:
        for step in range(3 * MAX_GROWS):
            lg.log({"step": step, "loss": 0.5, f"sample_{step}": 1.0})
    printed = "".join(captured).split("end of run")[0]
    headers = [line for line in printed.splitlines() if line.startswith("I step")]
    assert MAX_GROWS // 2 < len(headers) <= MAX_GROWS + 1


def test_an_undeclared_keys_column_widens_for_the_digits_its_later_values_need(captured: list[str]) -> None:
    """The width of a key no schema declares comes from its first value only: a loss from 2.3 that decays to .021
    and a KL from 0 that grows to 1e-3 are printed with 3 significant digits at the end of the run (the columns
    widen, as a ``Col`` declared without a width does), not as ``.02`` and ``###``."""
    with StepLogger(alerts=False) as lg:
        want = []
        for step in range(300):
            row = {"step": step, "loss": 2.3 * math.exp(-step / 40) + 0.02, "kl": 1e-3 * (1 - math.exp(-step / 90))}
            lg.log(row)
            want.append(row)
    printed = "".join(captured).split("end of run")[0].splitlines()
    rows = [line.split() for line in printed if re.match(r"I +\d+ ", line)]
    assert len(rows) == 300 and not any("#" in cell for row in rows for cell in row)
    header = next(line for line in reversed(printed) if line.startswith("I step")).split()
    assert header == ["I", "step", "loss", "kl"]  # (no unit: the cells are the numbers)
    for row, logged in zip(rows[-50:], want[-50:], strict=True):
        for key, cell in zip(("loss", "kl"), row[2:], strict=True):
            assert abs(float(cell) - logged[key]) <= 0.005 * logged[key], (key, cell, logged[key])


def test_a_widening_column_leaves_out_the_columns_that_no_longer_fit_the_line(captured: list[str]) -> None:
    """Automatic columns are laid out to the line; where one widens past it, the columns that no longer fit are left
    out (for good: none comes back to shift the others), so no line wraps in its terminal, the end's dump included."""
    width = 40
    lg = StepLogger(AutoColumns(max_width=width), alerts=False)
    for step in range(40):
        row = {"step": step, "grow": -0.5 * 10 ** (step / 4), **{f"m{i}": 0.25 + i / 100 for i in range(12)}}
        lg.log(row)
    lg.close()
    printed = [line.rstrip("\n") for line in captured if line.startswith("I ")]
    header_lines = [line for line in printed if line.split()[1:2] == ["step"]]
    headers = [[h for h in line.split()[1:] if not re.fullmatch(r"e-?\d+", h)] for line in header_lines]  # (grow e4)
    rows = [line for line in printed if re.match(r"I +\d+ ", line)]
    assert len(rows) == 40 and max(len(line) for line in rows + header_lines) <= width
    assert max(len(line) for message in captured for line in message.splitlines()) <= width  # the end's dump too
    assert "grow" in headers[0] and len(headers[0]) >= 9  # (the line filled: 2-cell headers over 3-cell values)
    assert len(headers[-1]) < len(headers[0]) and "grow" in headers[-1]
    shown = [set(h) for h in headers]
    assert all(later <= before for before, later in itertools.pairwise(shown))  # left out for good


def test_in_a_terminal_the_columns_fill_its_width_as_the_console_prints_them(
        captured: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """In a terminal (``COLUMNS`` here) the first row keeps the columns whose printed widths fit the line: abbreviated
    headers over narrow values leave room for more than ``tail``'s full headers do in a pipe of the same width."""
    row = {"step": 0, **{f"metric_{i:02d}": 0.25 + i / 100 for i in range(30)}}
    piped = auto_columns(row, max_width=80)
    monkeypatch.setenv("COLUMNS", "80")
    lg = StepLogger(alerts=False)
    for step in range(5):
        lg.log({**row, "step": step})
    lg.close()
    lines = [line.rstrip("\n") for line in captured if re.match(r"I +(step|\d+) ", line)]
    assert lines and max(len(line) for line in lines) <= 80
    shown = [c.key for c in lg.cols]
    assert len(shown) > len(piped) and shown[: len(piped)] == [c.key for c in piped]
    everything = auto_columns(row, max_width=10_000)
    nxt = ConsoleLayout(everything[: len(shown) + 1])  # the next column by rank, printed after the kept ones
    nxt.update(row)
    assert sum(c.width + 1 for c in nxt.cols) - 1 > 80 - 2  # (it would not have fit after the level icon)
    # the logged keys it had no room for are named once, before the first header (they were never said)
    said = [line for line in captured if line.startswith("I left out: ")]
    first_left = next(c.key for c in everything if c.key not in shown)
    assert len(said) == 1 and said[0].startswith(f"I left out: {first_left}, ") and "(no run_dir)" in said[0]
    assert captured.index(said[0]) < next(i for i, line in enumerate(captured) if line.startswith("I step "))


_WIDE_RUN = """
import sys
from steptable import StepLogger, setup_logging
setup_logging("wide", log_dir=sys.argv[1])
with StepLogger(run_dir=sys.argv[1], alerts=False) as lg:
    for step in range(3):
        lg.log({"step": step, **{f"k{i:02d}": 0.25 + i / 100 + step / 1000 for i in range(50)}})
"""


def _printed_rows(tmp_path: Path, stdout: int | str, stdin_tty: bool, stderr_tty: bool) -> list[str]:
    """The row lines the run above prints with ``stdout`` a pipe (``subprocess.PIPE``) or a file (a path), and a
    pseudo-terminal 90 columns wide on stdin and/or stderr."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 90, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    out = open(stdout, "w") if isinstance(stdout, str) else stdout
    try:
        done = subprocess.run([sys.executable, "-c", _WIDE_RUN, str(tmp_path / "run")], env=env, timeout=120,
                              stdin=side if stdin_tty else subprocess.DEVNULL, stdout=out,
                              stderr=side if stderr_tty else subprocess.DEVNULL)
    finally:
        os.close(side)
        os.close(main)
        if not isinstance(out, int):
            out.close()
    assert done.returncode == 0
    text = done.stdout.decode() if isinstance(stdout, int) else Path(stdout).read_text()
    return [line for line in text.splitlines() if re.match(r"I +(step|\d+) ", line)]


@pytest.mark.parametrize(("stdin_tty", "stderr_tty"), [(False, True), (True, False)])
def test_rows_piped_to_a_person_fit_the_terminal_beside_the_pipe(
        tmp_path: Path, stdin_tty: bool, stderr_tty: bool) -> None:
    """``python train.py | tee log`` (stderr the terminal) and ``2>&1 | tee log`` (stdin the terminal): the rows
    reach a person through the pipe and are fitted to that terminal, not to the 200 cells of a pipe."""
    rows = _printed_rows(tmp_path, subprocess.PIPE, stdin_tty, stderr_tty)
    assert len(rows) >= 4 and max(len(r) for r in rows) <= 90  # a header and three rows
    assert len(rows[-1].split()) > 10  # (fitted, not emptied)


def test_rows_piped_with_no_terminal_or_written_to_a_file_keep_the_pipes_width(tmp_path: Path) -> None:
    """An agent's or CI's pipe (no terminal on stdin or stderr) and a stdout redirected to a file (``> log``, even
    from a terminal) get the 200 cells ``tail`` shows."""
    for rows in (_printed_rows(tmp_path, subprocess.PIPE, False, False),
                 _printed_rows(tmp_path, str(tmp_path / "out.log"), True, True)):
        assert max(len(r) for r in rows) > 150
        assert max(len(r) for r in rows) <= 200


def test_a_row_of_more_keys_than_a_run_holds_prints_only_keys_the_readers_keep(
        tmp_path: Path, captured: list[str]) -> None:
    """Past MAX_KEYS keys the readers keep those of :func:`steptable.ingest.keycut.rank` first (a numbered,
    deep family is dropped before flat names): the console's columns are among the keys they keep. It laid out
    every key logged, so it printed a dropped family that ``tail`` and ``watch`` show empty (and at 10k keys each
    layout took seconds of the training loop)."""
    from steptable.ingest.files.follow import load
    from steptable.ingest.table import MAX_KEYS

    row = {**{f"layers/grad/{i}": 0.5 + i for i in range(40)}, **{f"m{i}": 1.0 + i for i in range(MAX_KEYS)}}
    with StepLogger(run_dir=tmp_path, header_every=0, alerts=False) as lg:
        for step in range(2):
            lg.log({"step": step, **row})
    (store,) = load(tmp_path).values()
    assert len(store.keys) == MAX_KEYS and "layers/grad/0" not in store.keys  # (the readers drop the family)
    shown = [c.key for c in lg.cols if c.key != "step"]
    assert shown and set(shown) <= set(store.keys), shown[:5]
    assert all(store.row(1).get(k) is not None for k in shown)


class _Unprintable:
    """A logged object whose text cannot be made (a library's handle whose __repr__ raises)."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


@pytest.mark.parametrize("make", [_Unprintable, lambda: 10**5000], ids=["repr-raises", "int-past-str-digits"])
def test_a_value_that_cannot_be_laid_out_leaves_out_its_key_alone(
        make: Any, captured: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Its repr() raised in the layout (an int of 5000 digits too: str() refuses it): the first row was laid out as
    the step alone, every other metric lost from the console; a key first logged later with such a value took the
    good new keys with it."""
    with StepLogger(alerts=False) as lg:
        for step in range(3):
            lg.log({"step": step, "loss": 1 / (step + 1), "handle": make(), "acc": 0.5,
                    **({"late": make(), "kl": 0.25} if step else {})})
    assert lg.header().split() == ["step", "loss", "acc", "kl"]
    rows = [line.split() for line in captured if line.startswith("I ") and line.split()[1].isdigit()]
    assert rows[0] == ["I", "0", "1", ".5"]
    assert rows[-1][:2] == ["I", "2"] and rows[-1][3:] == [".5", ".25"]  # (the loss's digits are the layout's)
    err = capsys.readouterr().err
    assert err.count("handle: left out of the printed columns") == 1 and err.count("late: left out") == 1
    assert "no automatic columns" not in err and "could not be laid out" not in err


def test_a_console_only_logger_in_a_deleted_working_directory_prints_its_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The look-up of a steptable.toml beside a console-only run is relative to the working directory: deleted under
    the job, it raised FileNotFoundError at every row, and every row was lost to the console. The look-up's failure
    is said once; the rows print with the user's own and the built-in schemas."""
    gone = tmp_path / "scratch"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with StepLogger(alerts=False) as lg:
        lines = [lg.log({"step": step, "loss": 1 / (step + 1), "reward": 0.5}) for step in range(3)]
    assert [line.split() if line else line for line in lines] == [["0", "1", ".5"], ["1", ".5", ".5"],
                                                                   ["2", ".33", ".5"]]
    assert lg.header().split() == ["step", "loss", "rew"]
    err = capsys.readouterr().err
    assert "StepLogger.log failed" not in err and "no automatic columns" not in err
    assert err.count("steptable.toml files beside the run could not be read (FileNotFoundError") == 1


def test_a_steptable_toml_that_cannot_be_used_leaves_the_built_in_columns(
        tmp_path: Path, xdg: Path, captured: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A broken schema file beside the run is said, with what is wrong; the row is laid out without it (it was laid
    out as the step alone)."""
    (tmp_path / "steptable.toml").write_text("[schema\nname = ")
    with StepLogger(run_dir=tmp_path / "run", alerts=False) as lg:
        lg.log({"step": 0, "loss": 0.5, "reward": 0.25})
    assert lg.header().split() == ["step", "loss", "rew"]
    err = capsys.readouterr().err
    assert err.count("beside the run could not be read") == 1 and "steptable.toml:" in err


def test_a_step_that_cannot_be_laid_out_keeps_its_column_unsaid(
        captured: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A step of 5000 digits: the layout leaves its value out, but every layout has the step's column, so the line
    that said "step: left out of the printed columns" above a row that printed it was untrue."""
    with StepLogger(alerts=False) as lg:
        lg.log({"step": 10**5000, "loss": 0.5})
    assert lg.header().split() == ["step", "loss"]
    assert "left out" not in capsys.readouterr().err


def test_keys_new_on_every_row_that_cannot_be_laid_out_are_said_in_a_few_lines(
        captured: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A handle logged under a new key each row ("sample_0", "sample_1", ...) was said in a line per row."""
    from steptable.logger.autocols import MAX_SAID

    with StepLogger(alerts=False) as lg:
        for step in range(MAX_SAID + 5):
            lg.log({"step": step, "loss": 0.5, f"sample_{step}": _Unprintable()})
    said = [line for line in capsys.readouterr().err.splitlines() if "left out of the printed columns" in line]
    assert len(said) == MAX_SAID and said[0].startswith("steptable: sample_0: ") and "unsaid" in said[-1]
    assert lg.header().split() == ["step", "loss"]
