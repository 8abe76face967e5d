"""Run summaries: golden layouts, size, markdown validity, arms alignment and odd columns."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from typing import Any

import pytest

from steptable.alerts.engine import Alert
from steptable.summary.report import column_stats, rate_text, summarize, trend_pct
from tests.helpers import FakeRun

Golden = Callable[[str, str], None]
NOW = 1_700_100_000.0


def make_run(arm: str, seed: int, n: int = 400, hack: float = 0.3) -> FakeRun:
    rng = random.Random(seed)
    cols: dict[str, list[Any]] = {
        "step": list(range(n)),
        "rew": [0.2 + 0.5 * (1 - math.exp(-i / 100)) + rng.gauss(0, 0.03) for i in range(n)],
        "hack_s": [(sum(rng.random() < hack * i / n for _ in range(16)), 16) for i in range(n)],
        "loss": [rng.gauss(-0.02, 0.05) for _ in range(n)],
        "gn": [abs(rng.gauss(0.8, 0.1)) * (15 if i == 250 else 1) for i in range(n)],
        "lr": [1e-5 * min(1.0, (i + 1) / 50) for i in range(n)],
        "eval_acc": [0.3 + i / 2000 if i % 50 == 0 else math.nan for i in range(n)],
        "const": [1.0] * n,
        "phase": ["warmup" if i < 50 else "train" for i in range(n)],
        "tok_s": [12000 + 10 * i for i in range(n)],
    }
    walls = [NOW - 3600 + 9 * i for i in range(n)]
    return FakeRun("exp7", arm, cols, list(range(n)), [200], 2, walls[-1] if walls else None, walls)


def test_golden_single(golden: Golden) -> None:
    run = make_run("vanilla", 1)
    run.cols["loss"][300] = math.nan  # NaN reads as missing in stored columns: no alert for it
    run.cols["loss"][310] = "inf"
    golden("summary_single.txt", summarize([run], now=NOW + 42))


def test_golden_arms_text_and_md(golden: Golden) -> None:
    runs = [make_run("vanilla", 1), make_run("routeA", 2, hack=0.05), make_run("absorb", 3, hack=0.15)]
    runs[2].resumes = []
    runs[2].bad_count = 0
    golden("summary_arms.txt", summarize(runs, now=NOW + 42))
    golden("summary_arms_aligned.txt", summarize(runs, now=NOW + 42, align=True))
    golden("summary_arms_md.txt", summarize(runs, now=NOW + 42, fmt="md", columns=["rew", "hack_s", "gn", "x"]))


def test_size_of_20_column_10k_step_run() -> None:
    rng = random.Random(0)
    n = 10_000
    names = ["rew", "loss", "gn", "kl", "entropy", "lr", "hack_s", "hack_t", "gt_s", "gt_t", "lp_s", "lp_t",
             "ref_eq", "gen", "fb", "sec", "auroc", "cos", "qmass", "keep"]
    cols: dict[str, list[Any]] = {}
    for j, k in enumerate(names):
        scale = 10.0 ** rng.randint(-4, 3)
        cols[k] = [scale * (1 + j / 10 + 0.2 * math.sin(i / 300) + rng.gauss(0, 0.1)) for i in range(n)]
    walls = [NOW - 2 * n + 2.0 * i for i in range(n)]
    run = FakeRun("run", "arm", cols, list(range(n)), [3000, 7000], 1, walls[-1], walls)
    text = summarize([run], now=NOW)
    assert text.count("\n") == 2 + 20 + 1  # header, table head, 20 rows, alerts
    assert len(text) < 1200, len(text)


def _md_tables(text: str) -> list[list[str]]:
    tables: list[list[str]] = []
    prev = False
    for line in text.splitlines():
        is_row = line.startswith("|")
        if is_row and not prev:
            tables.append([])
        if is_row:
            tables[-1].append(line)
        prev = is_row
    return tables


def _md_cells(line: str) -> list[str]:
    assert line.startswith("| ") and line.endswith(" |")
    return [c.strip() for c in re.split(r"(?<!\\)\|", line[1:-1])]


def test_md_is_a_valid_table() -> None:
    runs = [make_run("a", 1), make_run("b|pipe", 2)]
    runs[0].cols["we|ird"] = [f"v|{i}" for i in range(400)]
    text = summarize(runs, now=NOW, fmt="md", columns=["rew", "we|ird", "gn"])
    tables = _md_tables(text)
    assert len(tables) == 1
    head, sep, *rows = tables[0]
    width = len(_md_cells(head))
    assert all(re.fullmatch(r"-{3}|-{2}:", c) for c in _md_cells(sep))
    assert all(len(_md_cells(r)) == width for r in [sep, *rows])
    assert len(rows) == 6 and r"we\|ird" in text and r"v\|399" in text
    # a blank line before and after the table, header lines as a list
    lines = text.splitlines()
    i = lines.index(head)
    assert lines[i - 1] == "" and lines[i + 2 + len(rows)] == ""


def test_arms_line_up() -> None:
    runs = [make_run("vanilla", 1), make_run("routeA", 2, n=100), make_run("absorb", 3, n=0)]
    text = summarize(runs, now=NOW, columns=["rew", "gn", "tok_s"], align=True)
    lines = text.splitlines()
    assert lines[0].startswith("a: vanilla: steps 0-399")
    assert lines[2] == "c: absorb: no rows, resumed 200, bad 2"
    table = lines[3:13]
    assert table[0].split() == ["col", "arm", "first", "last", "min", "max", "tr%"]
    # numbers right-aligned: every value column ends at the same offset on every row
    ends = [m.end() for m in re.finditer(r"\S+", table[1])][2:6]
    for row in table[2:]:
        assert [m.end() for m in re.finditer(r"\S+", row)][-5:-1] == ends or row.split()[-4:] == ["-"] * 4
    assert [r.split()[0] for r in table[1:]] == ["rew", "b", "c", "gn", "b", "c", "tok_s", "b", "c"]
    assert table[3].split() == ["c", "-", "-", "-", "-", "-"]
    # compact (default): same cells, names and arms padded, values one space apart
    compact = summarize(runs, now=NOW, columns=["rew", "gn", "tok_s"]).splitlines()
    assert [r.split() for r in compact] == [r.split() for r in lines]
    assert all(r[6] in "abc" and r[7] == " " and "  " not in r[6:] for r in compact[4:13])


def test_empty_run_and_no_runs() -> None:
    empty = FakeRun("r", "", {}, [])
    assert summarize([empty], now=NOW) == "r: no rows\nalerts: none checked (no rows)\n"
    assert summarize([empty], now=NOW, fmt="md") == "**r**: no rows\n\n- alerts: none checked (no rows)\n"
    assert summarize([], now=NOW) == "no runs\n"


def test_all_nan_and_non_numeric_columns() -> None:
    run = make_run("x", 4, n=50)
    run.cols["dead"] = [math.nan] * 50
    run.cols["none"] = [None] * 50
    auto = summarize([run], now=NOW)
    names = [line.split()[0] for line in auto.splitlines()[2:-1]]
    assert names == ["rew", "hack_s", "loss", "gn", "lr", "tok_s"]  # no step, const, phase, dead, none, nor
    # eval_acc: one value in 50 rows does not vary
    text = summarize([run], now=NOW, columns=["dead", "phase", "none", "missing"])
    rows = [line.split() for line in text.splitlines()[2:6]]
    assert rows == [["dead", "-", "-", "-", "-", "-"], ["phase", "warmup", "warmup", "-", "-", "-"],
                    ["none", "-", "-", "-", "-", "-"], ["missing", "-", "-", "-", "-", "-"]]


def test_fractions_bools_and_strings_summarise_as_rates() -> None:
    st = column_stats([(1, 4), [3, 4], "1/2", (1, 0), True, "0.25", "abc", None])
    assert (st.present, st.first, st.last, st.lo, st.hi) == (5, 0.25, 0.25, 0.25, 1.0)


def test_a_column_that_ends_at_inf_shows_it_last() -> None:
    """A KL that blew up to inf read as healthy: ``last`` was the last finite value (min/max/tr% stay finite)."""
    st = column_stats([0.01, 0.02, 0.015, math.inf, math.inf, math.nan])
    assert (st.present, st.first, st.last, st.lo, st.hi) == (3, 0.01, math.inf, 0.01, 0.02)
    assert column_stats([math.inf, 0.5]).last == 0.5
    # from a store's cells(): None is absent, a NaN was logged (and is the column's last value)
    assert math.isnan(column_stats([0.5, 0.4, math.nan, None], nan_logged=True).last)
    assert column_stats([0.5, 0.4, math.nan, None]).last == 0.4  # column(): NaN pads absent cells


def test_trend_and_rate() -> None:
    assert trend_pct([1.0] * 90 + [2.0] * 10) == pytest.approx(100.0)
    assert trend_pct([5.0]) is None and trend_pct([1.0, 1.0]) == 0.0
    xs = [0.001 * (i - 85) for i in range(100)]  # crosses zero, no noise: relative to median |x| / 4
    assert trend_pct(xs) == pytest.approx(100 * 0.01 / (sorted(abs(x) for x in xs[80:])[10] / 4))  # (recent)
    assert rate_text([0, 1, 2, 3], [0.0, 2.0, 4.0, 6.0]) == "2s/step"
    assert rate_text([0, 10, 20], [0.0, 2.0, 4.0]) == "300 step/min"
    assert rate_text([0, 1], []) is None and rate_text([0, 0, 0], [1.0, 2.0, 3.0]) is None


def test_alerts_given_selected_and_limited() -> None:
    run = make_run("v", 5, n=60)
    found = [Alert("W", s, "gn", "spike", f"spike {s}") for s in (1, 2, 3, 4)] + [Alert("E", 9, "loss", "nonfinite",
                                                                                    "non-finite (nan)")]
    text = summarize([run], now=NOW, columns=["rew"], alerts={"exp7": found})
    assert text.splitlines()[-3:] == ["alerts 5 (1E 4W):", "E step 9 loss non-finite (nan)",
                                      "W steps 1-4 gn x4, last spike 4"]  # one line per kind, errors first
    by_arm = summarize([run], now=NOW, columns=["rew"], alerts={"exp7/v": found[:1], "exp7": found})
    assert by_arm.splitlines()[-2:] == ["alerts 1 (1W):", "W step 1 gn spike 1"]
    assert summarize([run], now=NOW, columns=["rew"], alerts={}).endswith("alerts 0\n")


def test_max_columns_prefers_present_columns_and_now_defaults() -> None:
    run = make_run("v", 6, n=200)
    text = summarize([run], max_columns=3)
    names = [line.split()[0] for line in text.splitlines()[2:5]]
    assert names == ["rew", "hack_s", "loss"] and "eval_acc" not in text
    assert "upd " in text


def test_hostile_names_are_inert() -> None:
    run = FakeRun("\x1b[31mred", "arm\n2", {"k\x1b[2J": [1.0, 2.0]}, [0, 1])
    text = summarize([run], now=NOW)
    assert "\x1b" not in text and text.count("\n") == 4


def test_trend_of_values_near_the_float_limit_is_finite() -> None:
    """Sums of values near 1.8e308 used to overflow to inf (tr% read -inf or -nan)."""
    assert trend_pct([(-1) ** i * 1e308 for i in range(4)]) == 0.0  # (all noise)
    assert trend_pct([-1e308] * 18 + [1e308] * 2) == pytest.approx(200.0)
    assert trend_pct([1.0] + [1.7e308] * 19) == pytest.approx(0.0)
    assert trend_pct([1.7e308] * 18 + [-1.7e308] * 2) == pytest.approx(-200.0)


def _flat(mu: float, sd: float, seed: int, n: int = 1000) -> list[float]:
    g = random.Random(seed)
    return [g.gauss(mu, sd) for _ in range(n)]


@pytest.mark.parametrize(("mu", "sd"), [(0.05, 0.3), (0.0, 1.0), (-0.2, 0.5), (0.5, 0.05)])
def test_trend_of_flat_noise_reads_as_none(mu: float, sd: float) -> None:
    """tr% compared window means to the mean: N(0.05, 0.3) read a median |tr%| of 49 (a flat reward +57)."""
    ts = sorted(abs(t) for s in range(200) if (t := trend_pct(_flat(mu, sd, s))) is not None)
    assert len(ts) == 200
    assert ts[100] == 0.0 and ts[180] == 0.0  # median and 90th percentile: no trend
    assert sum(t > 0 for t in ts) <= 20  # a 2-standard-error gate lets about 5% through


def test_a_trend_beyond_the_noise_still_shows() -> None:
    g = random.Random(1)
    ramp = [0.1 + 0.5 * i / 1000 + g.gauss(0, 0.05) for i in range(1000)]  # +0.05 from one window to the next
    t = trend_pct(ramp)
    assert t is not None and 5 < t < 14  # 100 * .05 / .55 = 9
    jump = [x + (0.5 if i >= 900 else 0.0) for i, x in enumerate(_flat(0.05, 0.3, 2))]  # 1.7 sd in the last 10%
    t = trend_pct(jump)
    assert t is not None and t > 50
    decay = [2 * math.exp(-i / 300) + g.gauss(0, 0.05) for i in range(1000)]  # a loss still going down
    t = trend_pct(decay)
    assert t is not None and -40 < t < -15


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


def test_two_trainers_keys_for_one_quantity_share_one_block() -> None:
    """verl's actor/entropy and TRL's entropy are both shown as "entropy": one block of rows, the name said once
    (before: two blocks of the same name, far apart); a run that has both keys gets each by its own key."""
    n = 30
    verl = FakeRun("v", "verl", {"actor/entropy": [1.0 - i / 100 for i in range(n)],
                                 "actor/pg_loss": [0.1 * (-1) ** i for i in range(n)]}, list(range(n)))
    trl = FakeRun("t", "trl", {"loss": [0.2 + i / 50 for i in range(n)], "entropy": [0.7 - i / 200 for i in range(n)]},
                  list(range(n)))
    labels = {"actor/entropy": "entropy", "actor/pg_loss": "pg_loss", "entropy": "entropy"}
    lines = summarize([verl, trl], now=NOW, labels=labels).splitlines()
    named = [ln.split()[0] for ln in lines if not ln.startswith((" ", "a", "b", "col"))]
    assert named.count("entropy") == 1, lines
    at = next(j for j, ln in enumerate(lines) if ln.startswith("entropy"))
    assert lines[at].split()[1] == "a" and lines[at + 1].split()[0] == "b", lines  # b's row right under a's
    # one run with both keys: the shared name would hide which is which
    both = FakeRun("x", "x", {"actor/entropy": verl.cols["actor/entropy"], "entropy": trl.cols["entropy"]},
                   list(range(n)))
    text = summarize([both, trl], now=NOW, labels=labels)
    assert re.search(r"^actor/entropy\s+a ", text, re.M) and re.search(r"^entropy\s+a ", text, re.M), text
