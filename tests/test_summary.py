"""Run summaries: golden layouts, size, markdown validity, arms alignment and odd columns."""

from __future__ import annotations

from typing import Any

import pytest


def test_summary_help_says_what_tr_means(capsys: pytest.CaptureFixture[str]) -> None:
    from steptable.cli.main import main

    with pytest.raises(SystemExit):
        main(["summary", "--help"])
    assert "within the noise" in " ".join(capsys.readouterr().out.split())


def test_summary_hands_the_alert_scan_only_the_columns_it_watches(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every column of a 1M-row run as Python cells took 1.75 GB beside a 0.7 GB store; scan reads the role keys."""
    import steptable.alerts.engine as alerts
    from tests.helpers import run_cli, write_rows

    rows = ({"step": s, "loss": 1 / (s + 1), "rew": s / 50, **{f"m{j}": s * j for j in range(30)}} for s in range(50))
    write_rows(tmp_path / "r" / "metrics.jsonl", rows)
    seen: list[set[str]] = []
    real = alerts.scan

    def spy(steps: Any, columns: Any, *a: Any, **kw: Any) -> Any:
        seen.append(set(columns))
        return real(steps, columns, *a, **kw)

    monkeypatch.setattr(alerts, "scan", spy)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "loss" in out
    assert seen == [{"loss", "rew"}]


def test_runs_without_a_column_get_no_row_of_dashes_in_it(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs of different trainers share few keys: each run's row only in the columns it logged (rows of dashes
    were half the tokens of such a summary); a column asked for by name still shows every run."""
    from tests.helpers import run_cli, write_rows

    write_rows(tmp_path / "a" / "metrics.jsonl", ({"step": s, "loss": 1 / (s + 1), "kl": s / 9} for s in range(30)))
    write_rows(tmp_path / "b" / "metrics.jsonl", ({"step": s, "loss": 2 / (s + 1)} for s in range(30)))
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    table = out.splitlines()[3:]
    assert rc == 0 and "- - - - -" not in out
    assert [line.split()[0] for line in table[:3]] == ["loss", "b", "kl"]
    assert table[3].startswith("a alerts")  # kl: a's row only
    rc, out, _ = run_cli(["summary", str(tmp_path), "--columns", "kl"], capsys)
    assert rc == 0 and "b - - - - -" in out


def test_a_resumed_run_is_not_called_stalled_at_its_resume_point(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows replayed in step order: the crashed run's step 199, then the resumed run's 200, whose clock is after the
    crashed run's steps 200-260 and the restart. That gap was reported as a 30-minute stall of the run."""
    import time

    from tests.helpers import run_cli, write_rows

    def loss(s: int) -> float:
        return 1 + 0.01 * (s % 3)

    t0 = time.time() - 10 * 460 - 600 - 5  # the last row 5 s ago
    crashed = [{"step": s, "ts": t0 + 10 * s, "loss": loss(s)} for s in range(261)]
    restart = t0 + 10 * 260 + 600
    resumed = [{"step": s, "ts": restart + 10 * (s - 200), "loss": loss(s)} for s in range(200, 400)]
    write_rows(tmp_path / "r" / "metrics.jsonl", [*crashed, *resumed])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "resumed 200" in out and "stalled" not in out, out
    # a real pause inside a run is still said, at the row after it
    paused = [{"step": s, "ts": t0 + 10 * s + 3600 * (s >= 300), "loss": loss(s)} for s in range(360)]
    write_rows(tmp_path / "p" / "metrics.jsonl", paused)
    rc, out, _ = run_cli(["summary", str(tmp_path / "p")], capsys)
    assert rc == 0 and "step 299 stalled: no row for 60" in out, out  # (said at the last row before the gap)


def test_a_run_whose_logger_was_closed_reads_ended(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished run and a hung one read the same to an agent (`upd 2h ago`) unless the header says which."""
    from steptable import Col, StepLogger
    from tests.helpers import run_cli

    cols = [Col("step", 5, "step", "d"), Col("loss", 6, "loss")]
    loggers = {arm: StepLogger(cols, run_dir=tmp_path / arm, arm=arm, console=False, alerts=False)
               for arm in ("done", "live")}
    for sl in loggers.values():
        for s in range(5):
            sl.log({"step": s, "loss": 1 / (s + 1)})
    loggers["done"].close()
    loggers["live"]._final_flush()  # (its rows on disk, the run going on)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    loggers["live"].close()
    heads = {line.split(":")[1].strip(): line for line in out.splitlines()[:2]}
    assert rc == 0 and heads["done"].endswith(", ended") and "ended" not in heads["live"], out
