from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from loguru import logger

from steptable import Col, StepLogger, setup_logging
from steptable.schemas.routing import routing_columns
from steptable.table import render
from tests.logger.helpers import LOGGER_COLS, strict_loads


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
    assert r2["loss"] is None and r2["extra"] is None and r2["arm"] == "armA" and r2["step"] == 2
    assert r2["frac"] == [2, 8] and isinstance(r2["ts"], float)
    text = "".join(captured)
    assert text.split("end of run")[0].count("step    loss   frac") == 3  # header at rows 0, 3, 6
    assert len(re.findall(r"^\S+ columns:$", text.split("end of run")[0], flags=re.M)) == 1
    assert "   2     nan    2/8" in text
    # the end-of-run dump carries the dump-only column; table.txt holds every row with every column
    assert "end of run: 7 rows" in text and " sec" in text.split("end of run")[1]
    table = (tmp_path / "arm" / "table.txt").read_text().splitlines()
    assert len(table) == 8 and table[0].split() == ["step", "loss", "frac", "sec"]


def test_missing_keys_nan_and_header_once(tmp_path: Path, captured: list[str]) -> None:
    sl = StepLogger(LOGGER_COLS, header_every=0, alerts=False)
    for _ in range(30):
        assert sl.log({}) is not None
    sl.close()
    text = "".join(captured)
    assert text.split("end of run")[0].count("step    loss") == 1
    assert "   0     nan    nan" in text


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
    from steptable.logger.writer import RunWriter

    warnings: list[str] = []
    sl._writer = RunWriter("/dev/full", warnings.append)
    for step in range(50):
        assert sl.log({"step": step, "loss": 0.1}) is not None  # rows still print
    assert len(warnings) == 1 and "No space left" in warnings[0]
    assert sl._writer.pending == 50  # kept for retry, not silently dropped
    sl.close()


def test_writer_recovers_and_writes_late_rows(tmp_path: Path) -> None:
    from steptable.logger.writer import RunWriter

    target = tmp_path / "blocked"
    target.write_text("a file where the run directory should be")
    warnings: list[str] = []
    w = RunWriter(target / "metrics.jsonl", warnings.append)
    for i in range(5):
        assert w.write({"step": i}) is False
    assert len(warnings) == 1 and w.pending == 5
    target.unlink()
    assert w.write({"step": 5}) is True
    rows = [strict_loads(x) for x in (target / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if isinstance(r, dict)] == list(range(6))
    assert "works again" in warnings[-1]


def test_unserialisable_value_is_stringified(tmp_path: Path) -> None:
    from steptable.logger.writer import RunWriter

    w = RunWriter(tmp_path / "m.jsonl", lambda _: None)
    w.write({"step": 1, "obj": object(), "nested": {"a": (1, math.nan)}})
    row = strict_loads((tmp_path / "m.jsonl").read_text())
    assert isinstance(row, dict) and row["nested"] == {"a": [1, None]} and str(row["obj"]).startswith("<object")


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
    assert r1["huge"] is None and "<unprintable _Hostile>" in r1
    assert not any("could not" in line or "works again" in line for line in captured)


def test_odd_values_keep_the_row_a_json_object() -> None:
    from steptable.logger.writer import encode_row

    class Proxy:  # a lazy proxy: every attribute look-up raises, and not AttributeError
        def __getattr__(self, name: str) -> object:
            raise RuntimeError(name)

    row = strict_loads(encode_row({"step": 1, "rew": 0.5, "x": Proxy()}).decode())
    assert isinstance(row, dict) and row["rew"] == 0.5 and str(row["x"]).startswith("<")


def test_arm_name_is_made_inert_on_the_console(tmp_path: Path, captured: list[str]) -> None:
    with StepLogger(LOGGER_COLS, run_dir=tmp_path, arm="routeA\x1b]52;c;QUJD\x07\x1b[2J", alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.25})
    text = "".join(captured)
    assert "end of run: 1 rows, arm routeA" in text and "\x1b" not in text and "\x07" not in text


SCRIPT = textwrap.dedent(
    """
    import sys
    from steptable import StepLogger, setup_logging
    from steptable.schemas import routing_columns
    from tqdm import tqdm
    from loguru import logger
    mode = sys.argv[1]
    setup_logging("t", log_dir=sys.argv[2])
    setup_logging("t", log_dir=sys.argv[2])   # twice: no duplicate sinks
    if mode == "closed":
        sys.stdout.close()
    sl = StepLogger(routing_columns(), run_dir=sys.argv[2] + "/arm", arm="arm", alerts=False)
    for step in tqdm(range(30), file=sys.stderr, disable=True):
        odd = mode == "odd" and step == 3  # a lone surrogate (cut UTF-16) and a non-ASCII arrow on an ASCII stdout
        sl.log({"step": step, "rew": "x\\ud800\u4e2dy" if odd else 0.5, "gt_s": (1, 2)})
    logger.warning("careful")
    sl.close()
    sys.stderr.write("LOOP-FINISHED\\n")
    """
)


def _run(mode: str, tmp_path: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60
    )


def test_piped_stdout_is_ansi_free_one_icon_per_line(tmp_path: Path) -> None:
    proc = _run("pipe", tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b" not in out
    lines = out.splitlines()
    assert sum(line.startswith("I   step ") for line in lines) == 2  # rows 0 and 20
    assert sum(line.startswith("I      5 ") for line in lines) == 1  # exactly once: sinks not duplicated
    assert "W careful" in out
    log_files = list(tmp_path.glob("*.log"))
    assert len(log_files) == 1 and "careful" in log_files[0].read_text()  # set up twice: still one verbose file
    assert len((tmp_path / "arm" / "metrics.jsonl").read_text().splitlines()) == 30


def test_force_color_colours_a_pipe(tmp_path: Path) -> None:
    proc = _run("pipe", tmp_path, {"FORCE_COLOR": "1"})
    assert "\x1b[" in proc.stdout
    proc = _run("pipe", tmp_path, {"NO_COLOR": "1"})
    assert "\x1b" not in proc.stdout


def test_unencodable_text_does_not_stop_the_console(tmp_path: Path) -> None:
    proc = _run("odd", tmp_path, {"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "console output failed" not in proc.stderr and "Logging error" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("I      3 ") for line in lines)  # the odd row, its characters replaced
    assert any(line.startswith("I     29 ") for line in lines) and "end of run: 30 rows" in proc.stdout
    assert "rew_s?" in proc.stdout  # the header's arrow, replaced for an ASCII stdout
    header = next(line for line in lines if line.startswith("I   step "))
    rows = [line for line in lines if re.match(r"^I +\d+ ", line)]
    assert len(rows) == 30 and all(len(line) == len(header) for line in rows)  # a wide character became "??"


def test_closed_stdout_loop_survives(tmp_path: Path) -> None:
    proc = _run("closed", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "LOOP-FINISHED" in proc.stderr
    assert proc.stderr.count("console output failed") == 1
    assert len((tmp_path / "arm" / "metrics.jsonl").read_text().splitlines()) == 30


def test_setup_logging_returns_verbose_path(tmp_path: Path) -> None:
    path = setup_logging("my run/1", log_dir=tmp_path)
    assert path.parent == tmp_path and path.name.endswith("_my_run_1.log")
    logger.debug("debug line")
    assert "debug line" in path.read_text()


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
    assert text.count("columns:") == 1 and text.count("step    loss") == 1
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


def test_a_pair_given_as_an_array_shows_as_a_fraction(tmp_path: Path, captured: list[str]) -> None:
    np = pytest.importorskip("numpy")
    cols = [Col("step", 4, "step", "d"), Col("gt_s", 6, "gt_s", "frac"), Col("hack_s", 6, "hack_s", "frac")]
    values = np.array([3, 16])
    with StepLogger(cols, run_dir=tmp_path, alerts=False) as sl:
        line = sl.log({"step": 0, "gt_s": values, "hack_s": np.array([2.0, 16.0])})
        values[0] = 9  # updated in place after the step: the row keeps what it was
    assert line == "   0   3/16   2/16"
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["gt_s"] == [3, 16]
    from steptable.table.rowvalues import frozen as _frozen

    days = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]")
    assert _frozen(days) is days  # numbers and bools only, not a list of date objects
    assert _frozen(np.array([True, False])) == (True, False)
    assert render.row([Col("ok", 13, "ok")], {"ok": (True, False)}) == "[True, False]"  # a pair of bools is no n/d


def test_table_txt_keeps_the_rows_an_evaluation_of_an_earlier_step_joins(tmp_path: Path) -> None:
    """An asynchronous evaluation of step 1 logged after step 2 shares a key (epoch) with its step's row: it joins
    that row, as every reader places it, and step 2 stays (table.txt lost it as a resume)."""
    cols = [Col("step", 4, "step", "d"), Col("loss", 6, "loss", ".2f"), Col("eval_acc", 6, "acc", ".2f")]
    with StepLogger(cols, run_dir=tmp_path, console=False, alerts=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": 1 - step / 10, "epoch": 0.1 * step})
        sl.log({"step": 1, "epoch": 0.1, "eval_acc": 0.5, "eval_loss": 0.7})
    table = [line.split() for line in (tmp_path / "table.txt").read_text().splitlines()[1:]]
    assert table == [["0", "1.00", "nan"], ["1", "0.90", "0.50"], ["2", "0.80", "nan"]]


def test_a_none_step_ts_or_arm_is_not_given(tmp_path: Path, captured: list[str]) -> None:
    """None means "not given": the row's position, the logger's arm, its clock (written as null, the step was
    read back as the next row's and the arm as a second arm)."""
    cols = [Col("step", 4, "step", "d"), Col("rew", 6, "rew", ".2f")]
    with StepLogger(cols, run_dir=tmp_path, arm="a", alerts=False) as sl:
        for s in range(3):
            sl.log({"step": None if s == 1 else s, "ts": None, "arm": None, "rew": s / 10})
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["arm"], type(r["ts"])) for r in rows] == [(0, "a", float), (1, "a", float), (2, "a", float)]
    assert (tmp_path / "table.txt").exists() and "   1   0.10\n" in "".join(captured)


def test_no_legend_line_when_no_column_has_anything_to_explain(tmp_path: Path, captured: list[str]) -> None:
    """Columns without descriptions whose headers are their keys: the legend would only say "(none described)",
    a line every run pays for; one described column brings the legend back."""
    bare = [Col("step", 5, "step", "d"), Col("loss", 7, "loss")]
    with StepLogger(bare, run_dir=tmp_path / "a", alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.5})
    assert captured[:2] == ["I  step    loss\n", "I     1      .5\n"]
    captured.clear()
    with StepLogger([*bare, Col("grad_norm", 5, "gn")], run_dir=tmp_path / "b", alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.5, "grad_norm": 1.0})
    assert captured[:2] == ["I columns:\n gn  grad_norm\n", "I  step    loss    gn\n"]
