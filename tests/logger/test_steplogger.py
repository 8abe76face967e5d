"""steptable.logger.steplogger: StepLogger.log prints one row per step and writes every raw row to the JSONL;
odd values, ranks, arms, nested metrics, threads and signal handlers never cost a row or break the loop."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.logger import closing, writer
from steptable.logger.writer import RunWriter
from steptable.schemas import routing_columns
from steptable.table import render
from tests.logger.helpers import (
    ARRAY_MAKERS,
    EMA_COLS,
    LOGGER_COLS,
    LOSS_COLS,
    SIGNED_LOSS_COLS,
    Clock,
    jsonl_rows,
    jsonl_steps,
    strict_loads,
)


def test_log_writes_strict_jsonl_and_prints_rows(tmp_path: Path, captured: list[str]) -> None:
    with StepLogger(LOGGER_COLS, run_dir=tmp_path / "arm", arm="armA", header_every=3, alerts=False) as sl:
        for step in range(7):
            sl.log({"step": step, "loss": math.nan if step == 2 else -0.5 * step, "frac": (step, 8),
                    "extra": math.inf, "name": "x", "sec": 1.5})
    lines = (tmp_path / "arm" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 7
    rows = [strict_loads(line) for line in lines]
    assert all(isinstance(r, dict) for r in rows)
    r2 = rows[2]
    assert isinstance(r2, dict)
    assert r2["loss"] is None and r2["extra"] == math.inf and r2["arm"] == "armA" and r2["step"] == 2
    assert r2["frac"] == [2, 8] and isinstance(r2["ts"], float)
    text = "".join(captured)
    # header at rows 0, 3, 6; each column as wide as its values so far (a declared width is a maximum)
    assert text.split("end of run")[0].count("step   loss frac") == 3
    assert len(re.findall(r"^\S+ columns:$", text.split("end of run")[0], flags=re.M)) == 1
    assert "   2    NaN  2/8" in text  # a logged NaN reads NaN
    # the console's end of the run points to table.txt, which holds every row with every column; the dump (printed
    # where no table is written) carries the dump-only column
    end = text.split("end of run")[1]
    assert end == f": 7 rows, arm armA; all rows, every column: {tmp_path / 'arm' / 'table.txt'}\n"
    assert " sec" in sl.dump().split("end of run")[1]
    table = (tmp_path / "arm" / "table.txt").read_text().splitlines()
    assert len(table) == 8 and table[0].split() == ["step", "loss", "frac", "sec"]


def test_missing_keys_blank_and_header_once(tmp_path: Path, captured: list[str]) -> None:
    sl = StepLogger(LOGGER_COLS, header_every=0, alerts=False)
    for _ in range(30):
        assert sl.log({}) is not None
    sl.close()
    text = "".join(captured)
    assert len(re.findall(r"^I step +loss", text.split("end of run")[0], flags=re.M)) == 1
    assert re.search(r"^I +0 *$", text, flags=re.M)  # not logged: blank (spaces only), never "nan"
    assert "nan" not in text.lower()


def test_non_zero_rank_prints_and_writes_nothing(tmp_path: Path, captured: list[str]) -> None:
    sl = StepLogger(LOGGER_COLS, run_dir=tmp_path, rank=1, alerts=False)
    assert sl.log({"step": 1, "loss": 1.0}) is None
    sl.close()
    assert not (tmp_path / "metrics.jsonl").exists()
    assert captured == []


def test_rank_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RANK", "3")
    sl = StepLogger(LOGGER_COLS, run_dir=tmp_path, alerts=False)
    assert sl.rank == 3 and not sl.is_writer


@pytest.mark.parametrize("junk", ["", "x", "-1", "1.0", "0x1", "\u00b2", "\u0663"])
def test_a_rank_that_is_not_an_ascii_number_reads_as_rank_0(monkeypatch: pytest.MonkeyPatch, junk: str) -> None:
    monkeypatch.setenv("RANK", junk)  # "²" made int() raise; "٣" (Arabic-Indic 3) silenced rank 0
    sl = StepLogger(LOGGER_COLS, console=False, alerts=False)
    assert sl.rank == 0 and sl.is_writer


def test_full_disk_does_not_break_the_loop(captured: list[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    sl = StepLogger(LOGGER_COLS, alerts=False)
    sl.jsonl_path = Path("/dev/full")

    warnings: list[str] = []
    sl._writer = RunWriter("/dev/full", warnings.append)
    for step in range(50):
        assert sl.log({"step": step, "loss": 0.1}) is not None  # rows still print
    assert len(warnings) == 1 and "No space left" in warnings[0]
    assert sl._writer.pending == 50  # kept for retry, not silently dropped
    sl.close()


class _Hostile:
    def __float__(self) -> float:
        raise RuntimeError("no float")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_hostile_values_keep_the_rest_of_the_row(tmp_path: Path, captured: list[str]) -> None:
    """A value that cannot be converted or printed, a 5000-digit int, a dict that holds itself: the row is still
    written with its other metrics, and nothing is reported as a write failure."""
    loop: dict[str, object] = {}
    loop["self"] = loop
    with StepLogger(LOGGER_COLS, run_dir=tmp_path, alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.25, "bad": _Hostile(), "huge": 10**5000, "loop": loop, _Hostile(): 1})
        sl.log({"step": 2, "loss": 0.5})
    rows = [strict_loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    r1 = rows[0]
    assert isinstance(r1, dict) and r1["loss"] == 0.25 and r1["bad"] == "<unprintable _Hostile>"
    assert r1["huge"] == math.inf and "<unprintable _Hostile>" in r1  # (past the double range, as a float past it)
    assert not any("could not" in line or "works again" in line for line in captured)


def test_arm_name_is_made_inert_on_the_console(tmp_path: Path, captured: list[str]) -> None:
    with StepLogger(LOGGER_COLS, run_dir=tmp_path, arm="routeA\x1b]52;c;QUJD\x07\x1b[2J", alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.25})
    text = "".join(captured)
    assert "end of run: 1 rows, arm routeA" in text and "\x1b" not in text and "\x07" not in text


def test_routing_columns_logged(tmp_path: Path, captured: list[str]) -> None:
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    with StepLogger(cols, run_dir=tmp_path, arm="routeA", alerts=False) as sl:
        line = sl.log({"step": 0, "rew": 0.1, "gt_s": (3, 8), "auroc": math.nan})
    assert line is not None and len(line) == len(sl.header())


def test_alerts_are_logged_as_they_happen(captured: list[str]) -> None:
    sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f"), Col("gn", 6, "gn")])
    for step in range(60):
        sl.log({"step": step, "loss": math.nan if step in (30, 31, 32) else 1.0 + 0.01 * (step % 4), "gn": 1.0})
    sl.close()
    errors = [line for line in captured if line.startswith("E ")]
    assert len(errors) == 1  # once per episode, not once per bad step
    assert errors[0].startswith("E step 30 loss") and "non-finite" in errors[0]


def test_callers_timestamp_is_kept(tmp_path: Path) -> None:
    with StepLogger(LOGGER_COLS, run_dir=tmp_path, alerts=False, console=False) as sl:
        sl.log({"step": 0, "ts": 1700000000.5, "loss": 1.0})
        sl.log({"step": 1, "loss": 1.0})
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["ts"] == 1700000000.5 and rows[1]["ts"] > 1700000000.5


@pytest.mark.parametrize("how", ["log", "record"])
def test_the_loggers_own_timestamp_is_the_wall_time_to_the_millisecond(tmp_path: Path, how: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The millisecond the clock is in (a 3-decimal number, as JSON text too), not the wall time rounded up."""
    import time

    clock = iter([1_795_927_043_062_999_999, 1_795_927_044_000_400_000, 1_795_927_044_999_999_999])
    monkeypatch.setattr(time, "time_ns", lambda: next(clock))
    sl = StepLogger(LOGGER_COLS, run_dir=tmp_path, alerts=False, console=False)
    for step in range(3):
        getattr(sl, how)({"step": step, "loss": 1.0})
    monkeypatch.undo()
    sl.close()
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["ts"] for x in lines] == [1795927043.062, 1795927044.0, 1795927044.999]
    assert ['"ts":1795927043.062,' in lines[0], '"ts":1795927044.0,' in lines[1]] == [True, True]


def test_a_failure_while_printing_does_not_repeat_the_legend(
    tmp_path: Path, captured: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sl = StepLogger(LOGGER_COLS, run_dir=tmp_path, alerts=False)
    real_row = sl.row
    calls = {"n": 0}

    def flaky(cells: object) -> str:
        calls["n"] += 1
        if calls["n"] == 1:  # the very first row: the legend and header were just printed
            raise RuntimeError("render failed")
        return real_row(cells)  # type: ignore[arg-type]

    monkeypatch.setattr(sl, "row", flaky)
    for step in range(4):
        sl.log({"step": step, "loss": 0.5})
    sl.close()
    text = "".join(captured).split("end of run")[0]
    assert text.count("columns:") == 1 and text.count("step   loss") == 1
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 4


def test_none_is_left_out_of_the_row_so_the_file_raises_no_nan_alert(
    tmp_path: Path, captured: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """None means "not measured this step". Written as null it would read back as a NaN: the same rows would give
    an error alert from the file that the loop never raised. A real NaN still does, from both."""
    from steptable.cli.main import main

    cols = [Col("step", 4, "step", "d"), Col("reward", 6, "reward", ".3f"), Col("kl", 6, "kl", ".3f")]
    with StepLogger(cols, run_dir=tmp_path / "a", arm="a") as sl:
        for step in range(10):
            sl.log({"step": step, "reward": 0.5, "kl": None if step % 3 else 0.01})
    rows = [strict_loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [("kl" in r) for r in rows if isinstance(r, dict)] == [s % 3 == 0 for s in range(10)]
    assert "non-finite" not in "".join(captured)
    capsys.readouterr()
    assert main(["tail", str(tmp_path), "--alerts-only"]) == 0 and "non-finite" not in capsys.readouterr().out
    with StepLogger(cols, run_dir=tmp_path / "b", arm="b") as sl:
        for step in range(3):
            sl.log({"step": step, "reward": math.nan if step == 2 else 0.5})
    assert "reward non-finite" in "".join(captured)
    assert main(["tail", str(tmp_path / "b"), "--alerts-only"]) == 1
    assert "reward non-finite" in capsys.readouterr().out


def test_a_pair_given_as_an_array_shows_as_a_fraction(tmp_path: Path, captured: list[str]) -> None:
    np = pytest.importorskip("numpy")
    cols = [Col("step", 4, "step", "d"), Col("gt_s", 6, "gt_s", "frac"), Col("hack_s", 6, "hack_s", "frac")]
    values = np.array([3, 16])
    with StepLogger(cols, run_dir=tmp_path, alerts=False) as sl:
        line = sl.log({"step": 0, "gt_s": values, "hack_s": np.array([2.0, 16.0])})
        values[0] = 9  # updated in place after the step: the row keeps what it was
    assert line == "   0  3/16  2/16"  # (each as wide as 16/16, where the passes can go)
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["gt_s"] == [3, 16]
    from steptable.table.rowvalues import frozen as _frozen

    days = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]")
    assert _frozen(days) is days  # numbers and bools only, not a list of date objects
    assert _frozen(np.array([True, False])) == (True, False)
    assert render.row([Col("ok", 13, "ok")], {"ok": (True, False)}) == "[True, False]"  # a pair of bools is no n/d


def test_a_none_step_ts_or_arm_is_not_given(tmp_path: Path, captured: list[str]) -> None:
    """None means "not given": the row's position, the logger's arm, its clock (written as null, the step would be
    read back as the next row's and the arm as a second arm)."""
    cols = [Col("step", 4, "step", "d"), Col("rew", 6, "rew", ".2f")]
    with StepLogger(cols, run_dir=tmp_path, arm="a", alerts=False) as sl:
        for s in range(3):
            sl.log({"step": None if s == 1 else s, "ts": None, "arm": None, "rew": s / 10})
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["arm"], type(r["ts"])) for r in rows] == [(0, "a", float), (1, "a", float), (2, "a", float)]
    assert (tmp_path / "table.txt").exists() and "   1 0.10\n" in "".join(captured)


def test_no_legend_line_when_no_column_has_anything_to_explain(tmp_path: Path, captured: list[str]) -> None:
    """Columns without descriptions whose headers are their keys: the legend would only say "(none described)",
    a line every run pays for; one described column brings the legend back."""
    bare = [Col("step", 5, "step", "d"), Col("loss", 7, "loss")]
    with StepLogger(bare, run_dir=tmp_path / "a", alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.5})
    assert captured[:2] == ["I step loss\n", "I    1   .5\n"]
    captured.clear()
    with StepLogger([*bare, Col("grad_norm", 5, "gn")], run_dir=tmp_path / "b", alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.5, "grad_norm": 1.0})
    assert captured[:2] == ["I columns:\n gn  grad_norm\n", "I step loss gn\n"]


def test_automatic_columns_whose_headers_are_their_keys_print_no_legend_line(tmp_path: Path,
                                                                            captured: list[str]) -> None:
    """The adapters' way (automatic columns): no ``columns:`` line with nothing under it, at the first row nor at
    one that brings a key whose header is the key too."""
    with StepLogger(run_dir=tmp_path, alerts=False) as sl:
        sl.log({"step": 0, "loss": 0.5, "acc": 0.25})
        sl.log({"step": 1, "loss": 0.5, "acc": 0.25, "kl": 0.125})
    assert not [line for line in captured if "columns:" in line]
    assert captured[:2] == ["I step loss acc\n", "I    0   .5 .25\n"]


@pytest.mark.parametrize("jsonl", [True, False])
def test_the_empty_key_is_said_once_where_no_column_shows_it(tmp_path: Path, captured: list[str],
                                                             jsonl: bool) -> None:
    """A metric named "" is in the JSONL but no column can show it (a column needs a key): its values were left
    out of the printed rows without a word. Said once, as ``tail`` and ``legend`` say it."""
    with StepLogger(run_dir=tmp_path if jsonl else None, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "loss": 0.5, "": 3.0})
    said = [line for line in captured if 'the empty key "" has values but no column' in line]
    assert len(said) == 1 and ("tail --format jsonl" in said[0]) == jsonl
    if jsonl:
        assert [json.loads(line)[""] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [3.0] * 3


ESC_DIR = "run\x1b]0;PWNED\x07\x1b[2J"  # a window title and a screen clear: "run" once made inert


def test_steplogger_messages_name_the_run_dir_inert(tmp_path: Path, captured: list[str], clock: Clock) -> None:
    run = tmp_path / ESC_DIR
    with StepLogger(SIGNED_LOSS_COLS, run_dir=run, alerts=False) as sl:
        sl.log({"step": 0, "loss": 0.1})
        (run / "metrics.jsonl").unlink()
        clock.advance()
        sl.log({"step": 1, "loss": 0.1})
    text = "".join(captured)
    assert "\x1b" not in text and "\x07" not in text
    assert f"{tmp_path}/run/metrics.jsonl was deleted during the run" in text
    assert f"1 of 2 rows (metrics.jsonl was deleted during the run), every column: {tmp_path}/run/table.txt" in text


class _EscapingError(Exception):
    def __repr__(self) -> str:
        return f"_Hostile({ESC_DIR!s})"


def _raise(*_: object, **__: object) -> None:
    raise _EscapingError()


def test_exceptions_in_steplogger_messages_are_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(closing, "write_description", _raise)  # steptable.json: "cannot write ..."
    sl = StepLogger(SIGNED_LOSS_COLS, run_dir=tmp_path / "r", console=False, alerts=False)
    monkeypatch.setattr(sl, "row", _raise)  # "StepLogger.log failed"
    sl.log({"step": 0, "loss": 0.5})
    sl._final_dump = _raise  # type: ignore[method-assign]  # "StepLogger.close: the end-of-run dump failed"
    sl.close()
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    for said in ("cannot write steptable.json (_Hostile(run))", "StepLogger.log failed (_Hostile(run))",
                 "the end-of-run dump failed (_Hostile(run))"):
        assert said in err, err


class _NoRepr(Exception):
    def __repr__(self) -> str:
        raise RuntimeError("a repr that raises")


def _raise_no_repr(*_: object, **__: object) -> None:
    raise _NoRepr()


def test_an_exception_whose_repr_raises_does_not_reach_the_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the handler that keeps the loop alive formatted the exception: a repr that raised escaped from it
    sl = StepLogger(SIGNED_LOSS_COLS, run_dir=tmp_path / "r", console=False, alerts=False)
    sl.row = _raise_no_repr  # type: ignore[method-assign,assignment]
    assert sl.log({"step": 0, "loss": 0.5}) is None
    sl.close()
    assert "StepLogger.log failed (_NoRepr)" in capsys.readouterr().err
    assert writer.error_text(_NoRepr()) == "_NoRepr"


def test_run_dir_deleted_mid_run_rows_go_to_a_new_file(tmp_path: Path, captured: list[str], clock: Clock) -> None:
    run = tmp_path / "arm"
    with StepLogger(EMA_COLS, run_dir=run, alerts=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": 0.1})
        shutil.rmtree(run)
        clock.advance()  # (the writer's check is due at the next row)
        for step in range(3, 6):
            sl.log({"step": step, "loss": 0.1})
    assert jsonl_steps(run / "metrics.jsonl") == [3, 4, 5]  # nothing after the deletion is lost
    text = "".join(captured)
    assert text.count("was deleted during the run; rows from this one on") == 1
    assert f"3 of 6 rows (metrics.jsonl was deleted during the run), every column: {run / 'table.txt'}" in text
    assert (run / "table.txt").exists()


class _BadIter(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("cannot iterate")


class _BadClass:
    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise RuntimeError("no class")


def test_values_that_cannot_be_walked_keep_the_row(tmp_path: Path) -> None:
    with StepLogger(EMA_COLS, run_dir=tmp_path, alerts=False, console=False) as sl:
        sl.log({"step": 0, "loss": 0.25, "a": _BadIter([1, 2]), "b": _BadClass()})
    row = json.loads((tmp_path / "metrics.jsonl").read_text())
    assert row["loss"] == 0.25 and isinstance(row["a"], str) and isinstance(row["b"], str)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_neither_prints_nor_writes(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, sys
        from steptable import Col, StepLogger, setup_logging
        setup_logging("t", log_dir=sys.argv[1])
        sl = StepLogger([Col("step", 4, "step", "d")], run_dir=sys.argv[1] + "/arm", alerts=False)
        sl.log({"step": 0})
        with sl._lock:  # another thread is inside log() when the DataLoader forks
            pid = os.fork()
        if pid == 0:
            sl.log({"step": 99})
            sl.close()
            os._exit(0)
        os.waitpid(pid, 0)
        sl.log({"step": 1})
        sl.close()
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == [0, 1]
    assert proc.stdout.count("end of run") == 1
    # a row or dump line reading 99 (not the tmp path, which may hold "99")
    assert not re.search(r"(?m)^\S?\s*99\s*$", proc.stdout), proc.stdout


def test_log_called_from_inside_log_writes_each_row_once(tmp_path: Path, captured: list[str]) -> None:
    """A signal handler that logs while the loop is inside log() (here: a value whose __float__ logs): the inner
    row is logged right after the outer one, each written once, none lost, nothing raised."""
    sl = StepLogger(EMA_COLS, run_dir=tmp_path / "arm", alerts=False)

    class Reentrant:
        def __init__(self, step: int) -> None:
            self.step, self.fired = step, False

        def __float__(self) -> float:  # read more than once (JSONL, row): the handler fires on the first
            if not self.fired:
                self.fired = True
                sl.log({"step": -self.step, "loss": 0.0})
                if self.step == 3:
                    sl.close()  # close from inside log(): done once the outer row is
            return 0.5

    for step in range(1, 4):
        sl.log({"step": step, "loss": Reentrant(step)})
    sl.log({"step": 4, "loss": 0.1})  # after close: not recorded
    assert jsonl_steps(tmp_path / "arm" / "metrics.jsonl") == [1, -1, 2, -2, 3, -3]
    text = "".join(captured)
    assert "failed" not in text and "end of run: 6 rows" in text


def test_a_row_naming_its_own_arm_keeps_it(tmp_path: Path) -> None:
    sl = StepLogger(EMA_COLS, run_dir=tmp_path, arm="A", console=False, alerts=False)
    sl.log({"step": 0, "arm": "B"})
    sl.log({"step": 1})
    sl.close()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["arm"] for r in rows] == ["B", "A"]


def test_a_step_past_float_range_keeps_the_row(captured: list[str]) -> None:
    sl = StepLogger(EMA_COLS, console=True)
    line = sl.log({"step": 10**400, "loss": 0.5})
    assert line is not None and "failed" not in "".join(captured)


def test_resuming_a_file_that_ends_in_a_partial_line_keeps_the_first_new_row(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step":0}\n{"step":1,"lo')  # what a crash leaves
    with StepLogger([Col("step", 5, "step", "d")], run_dir=run, console=False, alerts=False) as sl:
        for step in (2, 3, 4):
            sl.log({"step": step})
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert lines[:2] == ['{"step":0}', '{"step":1,"lo']  # the partial line stays one bad line
    assert [json.loads(line)["step"] for line in lines[2:]] == [2, 3, 4]


def test_a_relative_run_dir_survives_a_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    with StepLogger([Col("step", 5, "step", "d")], run_dir="logs/A", console=False, alerts=False) as sl:
        sl.log({"step": 0})
        os.chdir(tmp_path / "elsewhere")
        sl.log({"step": 1})
    run = tmp_path / "logs" / "A"
    assert jsonl_steps(run / "metrics.jsonl") == [0, 1] and (run / "table.txt").exists()
    assert not (tmp_path / "elsewhere" / "logs").exists()


def test_a_relative_run_dir_in_a_deleted_working_directory_leaves_the_rows_printing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The working directory deleted under the job (a scratch directory cleaned up), a StepLogger made then (an
    evaluation's, made mid-run) with a relative run_dir raised FileNotFoundError from its constructor into the
    training script. The rows print; the files that cannot be written are said once each."""
    gone = tmp_path / "scratch"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with StepLogger(LOSS_COLS, run_dir="logs/eval", alerts=False) as sl:
        lines = [sl.log({"step": s, "loss": 0.5}) for s in range(3)]
    assert [line.split() if line else line for line in lines] == [[str(s), ".5"] for s in range(3)]
    said = capsys.readouterr().err + "".join(captured)
    assert said.count("cannot write logs/eval/metrics.jsonl") == 1 and "StepLogger.log failed" not in said


def test_an_int_subclass_prints_its_number_not_its_text() -> None:
    class Sneaky(int):
        def __str__(self) -> str:
            return "\x1b[2J"

        def __format__(self, spec: str) -> str:
            return "\x1b]0;owned\x07"

    cols = [Col("step", 5, "step", "d"), Col("n", 8, "n"), Col("m", 8, "m", "d"), Col("f", 8, "f", ".1f")]
    sl = StepLogger(cols, console=False, alerts=False)
    line = sl.log({"step": 1, "n": Sneaky(5), "m": Sneaky(6), "f": Sneaky(7)})
    assert line is not None and "\x1b" not in line
    assert line.split() == ["1", "5", "6", "7.0"]


def test_a_metrics_dict_changed_while_it_is_read_loses_no_row(tmp_path: Path) -> None:
    """Another thread (an evaluation callback) may add keys to the loop's metrics dict while log() reads it.
    Made deterministic here: reading one value adds a key, exactly where a thread switch would."""
    shared: dict[str, Any] = {"step": 0, "loss": 0.1}

    class Scalar:  # a 0-d array-like: log() reads it with .item(), as it reads a tensor
        ndim = 0

        def item(self) -> float:
            shared[f"eval/{len(shared)}"] = 0.5
            return 1.0

    with StepLogger(EMA_COLS, run_dir=tmp_path, console=False, alerts=False) as sl:
        for step in range(5):
            shared["step"], shared["ema"] = step, Scalar()
            sl.log(shared)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(5)) and all(r["ema"] == 1.0 for r in rows)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_whose_reader_left_never_blocks_the_loop(tmp_path: Path) -> None:
    """metrics.jsonl as a FIFO (someone piping the rows elsewhere): when its reader exits, or before one comes, the
    next row fails and is kept for retry; the loop never waits in open() for a reader."""
    code = textwrap.dedent(
        """
        import os, subprocess, sys, time
        from steptable import Col, StepLogger
        run = sys.argv[1]
        os.makedirs(run)
        os.mkfifo(run + "/metrics.jsonl")
        reader = subprocess.Popen(["head", "-n", "1", run + "/metrics.jsonl"], stdout=subprocess.DEVNULL)
        sl = StepLogger([Col("step", 4, "step", "d")], run_dir=run, console=False, alerts=False)
        step = 0
        while reader.poll() is None and step < 2000:  # until head has its line and is gone (or has not come yet)
            sl.log({"step": step})
            step += 1
            time.sleep(0.01)
        for step in range(step, step + 30):
            sl.log({"step": step})
        sl.close()
        sys.stderr.write("DONE\\n")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "arm")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "DONE" in proc.stderr, proc.stderr
    assert "row(s) kept for retry" in proc.stderr and "could not be written" in proc.stderr


def test_nested_metric_dicts_show_under_the_keys_readers_give_them(tmp_path: Path, captured: list[str]) -> None:
    """{"train": {"loss": x}} under Col("train/loss"): stdout shows the value, as table.txt and tail do (not nan,
    a divergence to the eye), and the in-loop alerts see it."""
    cols = [Col("step", 4, "step", "d"), Col("train/loss", 6, "loss"), Col("eval/acc", 5, "acc")]
    sl = StepLogger(cols, run_dir=tmp_path)
    for s in range(3):
        line = sl.log({"step": s, "train": {"loss": 1.0 + s}, "eval": {"acc": {"x": 1}, "n": 2}})
        assert line is not None and line.split()[1] == str(1 + s), line
    sl.log({"step": 3, "train": {"loss": float("nan")}})
    sl.close()
    assert any("train/loss non-finite" in x for x in captured), captured  # the alert engine saw it
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["train"] == {"loss": 1.0}  # the file keeps the row as logged
    table = (tmp_path / "table.txt").read_text().splitlines()
    assert [ln.split()[1] for ln in table[1:4]] == ["1", "2", "3"]


def test_a_metric_named_arm_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, arm="bandit1", console=False, alerts=False)
    for s in range(5):
        sl.log({"step": s, "arm": s % 3, "loss": 0.1})
    sl.close()
    err = capsys.readouterr().err
    assert err.count("a row's 'arm'") == 1 and "bandit1" in err and "another name" in err
    quiet = StepLogger(LOSS_COLS, run_dir=tmp_path / "q", arm="A", console=False, alerts=False)
    quiet.log({"step": 0, "arm": "A"})  # the logger's own arm: nothing to say
    quiet.close()
    assert "'arm'" not in capsys.readouterr().err


def test_a_rank_given_as_text_is_a_number(tmp_path: Path) -> None:
    """rank=os.environ.get("RANK") is "0": that logger is the writer (it silently wrote nothing)."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, rank="0", console=False)  # type: ignore[arg-type]
    assert sl.is_writer and sl.log({"step": 0, "loss": 1.0}) is not None
    sl.close()
    assert (tmp_path / "metrics.jsonl").exists()
    assert not StepLogger(LOSS_COLS, rank="1").is_writer  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        StepLogger(LOSS_COLS, rank="main")  # type: ignore[arg-type]


def test_a_step_that_is_not_whole_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    for i in range(8):
        sl.log({"step": i / 4, "loss": 0.1})
    sl.log({"step": 3.0, "loss": 0.1})  # a whole float is a step
    sl.close()
    err = capsys.readouterr().err
    assert err.count("not a whole number") == 1 and "0.25" in err


def test_a_nested_key_and_a_flat_one_of_the_same_name_read_as_the_file_does(tmp_path: Path) -> None:
    """The JSONL readers take the later of two keys that spread to one name, and so does the stdout row."""
    cols = [Col("step", 4, "step", "d"), Col("train/loss", 6, "loss")]
    sl = StepLogger(cols, run_dir=tmp_path, console=False, alerts=False)
    a = sl.log({"step": 0, "train": {"loss": 2.0}, "train/loss": 1.0})
    b = sl.log({"step": 1, "train/loss": 1.0, "train": {"loss": 2.0}})
    sl.close()
    table = (tmp_path / "table.txt").read_text().splitlines()
    assert [a.split()[1], b.split()[1]] == [ln.split()[1] for ln in table[1:3]] == ["1", "2"]


def test_a_big_nested_mapping_does_not_starve_the_declared_columns(captured: list[str]) -> None:
    """A 1500-entry per-task dict logged before {"train": {"loss": x}}: the row's one budget does not all go to the
    tasks: stdout shows train/loss, as the file has it (not nan)."""
    cols = [Col("step", 4, "step", "d"), Col("train/loss", 6, "loss"), Col("eval/acc", 5, "acc")]
    sl = StepLogger(cols, alerts=False)
    line = sl.log({"step": 0, "tasks": {str(i): i for i in range(1500)}, "train": {"loss": 0.25},
                   "eval": {"acc": 0.5}})
    assert line is not None and line.split()[1:] == [".25", ".5"], line


def test_a_mappings_own_values_come_before_the_mappings_in_it(captured: list[str]) -> None:
    """{"train": {"per_task": {1500 items}, "loss": x}}: the mapping's own values are spread first, so
    train/loss shows (the tasks do not take the whole budget)."""
    sl = StepLogger([Col("step", 4, "step", "d"), Col("train/loss", 6, "loss")], alerts=False)
    line = sl.log({"step": 0, "train": {"per_task": {str(i): i for i in range(1500)}, "loss": 0.25}})
    assert line is not None and line.split()[1] == ".25", line


@pytest.mark.parametrize("make", ARRAY_MAKERS)
@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_a_one_element_array_is_its_number_in_the_row_and_the_jsonl(
    tmp_path: Path, make: Callable[[float, tuple[int, ...]], Any], shape: tuple[int, ...]
) -> None:
    """``t = torch.tensor([loss]); dist.all_reduce(t)``: a one-element array is its number in the printed row and
    in the JSONL (not ``[.731`` and [0.731])."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    line = sl.log({"step": 0, "loss": make(0.75, shape), "extra": make(2.5, shape)})
    sl.close()
    assert line is not None and line.split() == ["0", ".75"]
    row = jsonl_rows(tmp_path)[0]
    assert row["loss"] == 0.75 and row["extra"] == 2.5


def test_a_list_of_tensors_prints_the_numbers_the_jsonl_has(tmp_path: Path) -> None:
    """[torch.tensor(.5), torch.tensor(.25)] printed as ``[tensor(0.5000), tensor…`` where its JSONL line holds
    [0.5, 0.25], which every reader shows as ``.5/.25``."""
    torch = pytest.importorskip("torch")
    cols = [Col("step", 4, "step", "d", "step"), Col("losses", 8, "losses", None, "losses")]
    with StepLogger(cols, run_dir=tmp_path, console=False, alerts=False) as sl:
        line = sl.log({"step": 0, "losses": [torch.tensor(0.5), torch.tensor(0.25)]})
    assert line is not None and line.split() == ["0", ".5/.25"]
    assert jsonl_rows(tmp_path)[0]["losses"] == [0.5, 0.25]


def test_steplogger_from_several_threads_writes_each_row_once(tmp_path: Path) -> None:
    # RunWriter.flush read _pending[0], wrote it and popped: two threads wrote the same row twice and popped
    # another row (or an empty deque) away.
    import sys
    import threading

    from steptable.logger.steplogger import StepLogger

    log = StepLogger([Col("step", 6, "step", "d"), Col("loss", 6, "loss", ".3f")], run_dir=tmp_path,
                     console=False, alerts=False)
    n, t = 1500, 4
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=lambda k=k: [log.log({"step": k * n + i, "loss": 0.5}) for i in range(n)])
                   for k in range(t)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    log.close()
    steps = [json.loads(line)["step"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert sorted(steps) == list(range(n * t))
    assert log._rows == n * t

def test_columns_without_widths_widen_with_their_header_printed_again() -> None:
    sl = StepLogger([Col("step", 4, "step", "d"), Col("loss")], header_every=0, alerts=False, console=False)
    emitted: list[str] = []
    sl._emit = lambda text, level="INFO": emitted.append(text)  # type: ignore[method-assign]
    lines = []
    for step, loss in enumerate([0.5, 0.25, -0.0123, 0.5, 1234.5]):
        lines.append(sl.log({"step": step, "loss": loss}))
    # each value in the column's notation from the values seen so far: -.012 among thousandths, then .500
    assert lines == ["   0   .5", "   1  .25", "   2 -.012", "   3  .500", "   4  1234"]
    assert sl.header() == "step  loss"
    heads = [t for t in emitted if "loss" in t and "step" in t]
    assert heads == ["step loss", "step  loss"]  # the first, then at the widening (1234 fits: no more)
    assert emitted.index("step  loss") == emitted.index("   2 -.012") - 1
    sl.close()


#: keys with no visible character, and the name each is shown by (its characters escaped, in double quotes)
INVISIBLE_KEYS = {"": '""', "\u200b": '"\\u200b"', " ": '"\\x20"', "\t": '"\\t"'}


@pytest.mark.parametrize("key", list(INVISIBLE_KEYS))
def test_a_key_without_a_visible_character_is_named_by_its_escapes_in_the_console(
        tmp_path: Path, captured: list[str], key: str) -> None:
    """Its header was ``?`` and its legend line blank (nothing told which key it was); the empty key, which no
    column can show, is named in the line that says so."""
    with StepLogger(run_dir=tmp_path, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "loss": 0.5, key: 2.5})
        legend = sl.legend()
    text = "".join(captured)
    assert INVISIBLE_KEYS[key] in text
    assert not [w for line in text.splitlines() for w in line.split()[1:] if w == "?" or w.startswith("?~")]
    assert all(len(line.split()) >= 2 for line in legend.splitlines()[1:]), legend  # header and what it names


def test_two_keys_without_a_visible_character_are_told_apart_in_the_console(tmp_path: Path,
                                                                            captured: list[str]) -> None:
    """``?`` and ``?~2`` said neither which key was which nor that they were keys at all."""
    with StepLogger(run_dir=tmp_path, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "\u200b": 1.5, "\u2060": 2.5})
    header = next(line for line in captured if line.startswith("I step"))
    assert sorted(header.split()[2:]) == ['"\\u200b"', '"\\u2060"']


@pytest.mark.parametrize("method", ["log", "record"])
def test_a_handlers_exit_right_after_a_rows_write_counts_that_row(tmp_path: Path, method: str) -> None:
    """``def on_term(s, f): sys.exit(1)`` and SIGTERM while the row's write(2) runs (the handler runs as it returns):
    the JSONL held the row, but the run's count did not (9672 rows in the file, "end of run: 9671 rows"), as the
    row was counted after its write. The end line, the description and the file agree."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        from steptable import StepLogger
        from steptable.logger.writer import RunWriter

        write = RunWriter.write
        def signalled_write(self, record):
            done = write(self, record)
            if record["step"] == 5:
                os.kill(os.getpid(), signal.SIGTERM)  # (its handler runs here, right after the row's write)
            return done
        RunWriter.write = signalled_write
        signal.signal(signal.SIGTERM, lambda s, f: sys.exit(1))
        with StepLogger(run_dir={str(tmp_path)!r}, alerts=False) as sl:
            for step in range(10):
                sl.{method}({{"step": step, "loss": 1.0 / (step + 1)}})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert jsonl_steps(tmp_path / "metrics.jsonl") == [0, 1, 2, 3, 4, 5]
    info = json.loads((tmp_path / "steptable.json").read_text())
    assert info["rows"] == 6 and info["end"] == "interrupted"
    assert "end of run: 6 rows, interrupted" in proc.stderr
