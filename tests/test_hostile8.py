"""Untrusted text around the messages and exports built from it: a name holding an escape sequence that never ends,
markdown character references, spreadsheet formulas in CSV, and a run directory's escapes in StepLogger's messages."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from steptable import StepLogger
from steptable.logger import steplogger, writer
from tests.helpers import repoint, run_cli, write_rows
from tests.logger.helpers import SIGNED_LOSS_COLS

# an OSC 52 (clipboard) with no BEL or ST after it, behind a CSI
OPEN_OSC = "armA\x1b[2JB\x1b]52;c;ZXZpb"


def test_tail_says_the_bad_line_and_the_path_of_a_run_named_with_an_open_osc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / OPEN_OSC
    write_rows(run / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    with open(run / "metrics.jsonl", "a") as f:
        f.write("{bad\n")
    write_rows(run / "metrics.jsonl", [{"step": 1, "loss": 0.5}])
    rc, out, err = run_cli(["tail", "--format", "md", str(run)], capsys)
    assert rc == 0 and "\x1b" not in out + err
    assert f"{tmp_path}/armAB52;c;ZXZpb/metrics.jsonl:2: malformed JSON" in err  # the warning, not the name cut short
    assert "**armAB52;c;ZXZpb (metrics.jsonl)**" in out  # the title with its file


def _unescaped_amp(text: str) -> list[str]:
    return re.findall(r"(?<!\\)&", text)


def test_tail_and_summary_md_keep_character_references_literal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "r&#8238;un"
    write_rows(run / "metrics.jsonl", [{"step": s, "a&#8238;b": 1.0 + s, "note": "&#x202E;txet"} for s in range(3)])
    rc, out, _ = run_cli(["tail", "--format", "md", str(run)], capsys)
    assert rc == 0 and "a\\&#8238;b" in out and "\\&#x202E;txet" in out and not _unescaped_amp(out)
    rc, out, _ = run_cli(["summary", "--format", "md", str(run)], capsys)
    assert rc == 0 and "a\\&#8238;b" in out and not _unescaped_amp(out)


def test_tail_csv_quotes_formulas_but_not_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "r"
    formula = "=cmd|' /C calc'!A0"
    write_rows(run / "metrics.jsonl", [
        {"step": 0, formula: 1.0, "s": "=1+2", "at": "@SUM(A1)", "plus": "+1+2", "tab": "\t=1", "num": -0.5,
         "neg": "-0.5", "plain": "a=b"},
    ])  # fmt: skip
    rc, out, _ = run_cli(["tail", "--format", "csv", str(run)], capsys)
    head, row = csv.DictReader(io.StringIO(out)).fieldnames, next(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and head is not None
    assert "'" + formula in head and formula not in head
    assert row["'" + formula] == "1.0"
    assert (row["s"], row["at"], row["plus"], row["tab"]) == ("'=1+2", "'@SUM(A1)", "'+1+2", "' =1")
    assert (row["num"], row["neg"], row["plain"]) == ("-0.5", "-0.5", "a=b")


def test_tail_csv_alerts_quote_a_formula_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "=r"
    write_rows(run / "metrics.jsonl", [{"step": s, "loss": float("nan") if s == 3 else 1.0 + s} for s in range(4)])
    rc, out, _ = run_cli(["tail", "--alerts-only", "--format", "csv", str(run)], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 1 and rows and all(r["arm"] == "'=r" for r in rows)


ESC_DIR = "run\x1b]0;PWNED\x07\x1b[2J"  # a window title and a screen clear: "run" once made inert


def test_steplogger_messages_name_the_run_dir_inert(tmp_path: Path, captured: list[str]) -> None:
    run = tmp_path / ESC_DIR
    with StepLogger(SIGNED_LOSS_COLS, run_dir=run, alerts=False) as sl:
        sl.log({"step": 0, "loss": 0.1})
        (run / "metrics.jsonl").unlink()
        sl.log({"step": 1, "loss": 0.1})
    text = "".join(captured)
    assert "\x1b" not in text and "\x07" not in text
    assert f"{tmp_path}/run/metrics.jsonl was deleted during the run" in text
    assert f"1 of 2 rows (metrics.jsonl was deleted during the run), every column: {tmp_path}/run/table.txt" in text


def test_a_write_failure_names_the_directory_a_link_leads_to_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "run-A", tmp_path / ("run-B" + ESC_DIR)
    a.mkdir()
    b.mkdir()
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    sl = StepLogger(SIGNED_LOSS_COLS, run_dir=latest, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    repoint(latest, b, a)
    sl.log({"step": 1, "loss": 0.5})
    sl.close()
    told = capsys.readouterr().err + "".join(captured)
    assert f"now leads to {tmp_path}/run-Brun, another directory" in told and "\x1b" not in told


class _Hostile(Exception):
    def __repr__(self) -> str:
        return f"_Hostile({ESC_DIR!s})"


def _raise(*_: object, **__: object) -> None:
    raise _Hostile()


def test_exceptions_in_steplogger_messages_are_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(steplogger, "write_description", _raise)  # steptable.json: "cannot write ..."
    sl = StepLogger(SIGNED_LOSS_COLS, run_dir=tmp_path / "r", console=False, alerts=False)
    sl._render_row = _raise  # type: ignore[method-assign,assignment]  # "StepLogger.log failed"
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
    sl._render_row = _raise_no_repr  # type: ignore[method-assign,assignment]
    assert sl.log({"step": 0, "loss": 0.5}) is None
    sl.close()
    assert "StepLogger.log failed (_NoRepr)" in capsys.readouterr().err
    assert writer.error_text(_NoRepr()) == "_NoRepr"
