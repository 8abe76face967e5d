"""The tail9 review's findings: summary's tr% read trends in a flat reward that is a mean of binary outcomes (the
window medians of values on a grid jump by whole grid steps); ``tail --format jsonl --columns`` dropped ``step`` and
CSV named the step column after a run's own step key (``iteration``); ``tail --format md`` showed a unix time as
``1.8e9`` on every row."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest

from steptable.summary.report import trend_pct
from tests.helpers import run_cli, write_rows
from tests.summary.helpers import lattice

Cap = pytest.CaptureFixture[str]


@pytest.mark.parametrize(("m", "p"), [(32, 0.3), (1, 0.5)])
def test_flat_lattice_reads_no_trend(m: int, p: float) -> None:
    """Mean of 32 Bernoulli(0.3): 38 of 100 flat series read a trend (|tr%| ~10-25); a 0/1 column 57 of 100."""
    ts = [trend_pct(lattice(s, p, m)) for s in range(100)]
    assert sum(t != 0.0 for t in ts) <= 10  # a 2-standard-error gate lets about 5% through


def test_summary_of_a_flat_grpo_reward_reads_zero(tmp_path: Path, capsys: Cap) -> None:
    """The review's runs: 3000 steps of no learning at all read tr% +-10 in 7 of 10 seeds."""
    trends = []
    for seed in range(10):
        run = tmp_path / f"s{seed}" / "metrics.jsonl"
        write_rows(run, ({"step": s, "reward": x} for s, x in enumerate(lattice(seed, 0.3, n=3000))))
        rc, out, _ = run_cli(["summary", str(run)], capsys)
        assert rc == 0
        trends.append(next(line for line in out.splitlines() if line.startswith("reward")).split()[-1])
    assert trends.count("=") >= 8, trends  # (about 5% of flat series read a trend)


def test_a_rise_on_the_lattice_still_shows() -> None:
    n = 3000
    for seed in range(10):
        step = trend_pct(lattice(seed, [0.3 if i < 0.9 * n else 0.4 for i in range(n)], n=n))
        assert step is not None and 25 < step < 45  # 100 * .1 / .3 = 33
        ramp = [0.3 + 0.1 * min(max((i - 0.8 * n) / (0.2 * n), 0.0), 1.0) for i in range(n)]  # over the last 20%
        t = trend_pct(lattice(seed, ramp, n=n))
        assert t is not None and 8 < t < 25  # the windows' p: .375 vs .325, +15%


def test_a_few_spikes_are_not_a_trend() -> None:
    """The windows' means are trimmed: three spikes of 50 in the last 100 values of a flat 1 +- 0.1 move a mean by 1.5
    (150%); they read as no trend as often as flat noise does, and never as a large one."""
    ts = []
    for seed in range(100):
        g = random.Random(seed)
        xs = [1 + g.gauss(0, 0.1) for _ in range(1000)]
        for i in (950, 970, 990):
            xs[i] = 50.0
        ts.append(trend_pct(xs))
    assert sum(t != 0.0 for t in ts) <= 10 and max(abs(t or 0.0) for t in ts) < 3


def _two_runs(tmp_path: Path) -> tuple[Path, Path]:
    it = tmp_path / "iter" / "metrics.jsonl"
    write_rows(it, ({"iteration": 10 * (s + 1), "loss": 0.5 - 0.1 * s, "reward": 0.1 * s} for s in range(3)))
    st = tmp_path / "step" / "metrics.jsonl"
    write_rows(st, ({"step": s + 1, "loss": 0.9 - 0.1 * s} for s in range(2)))
    return it, st


def test_jsonl_columns_keep_step_of_an_iteration_keyed_run(tmp_path: Path, capsys: Cap) -> None:
    """``--columns loss`` printed {"iteration": 10, "loss": 0.5} for a run keyed by iteration: no "step"."""
    it, _ = _two_runs(tmp_path)
    for paths, want in (([it], [10, 20, 30]), ([tmp_path], [10, 20, 30, 1, 2])):  # alone, and beside a step-keyed run
        rc, out, _ = run_cli(["tail", *map(str, paths), "--format", "jsonl", "--columns", "loss"], capsys)
        assert rc == 0
        recs = [json.loads(line) for line in out.splitlines()]
        assert [r["step"] for r in recs] == want
        assert all("loss" in r and "reward" not in r for r in recs)


def test_csv_step_column_is_named_step(tmp_path: Path, capsys: Cap) -> None:
    """The step column was named "iteration" for a run keyed by it alone, "step" beside a step-keyed run."""
    it, _ = _two_runs(tmp_path)
    for paths, want in (([it], ["10", "20", "30"]), ([tmp_path], ["10", "20", "30", "1", "2"])):
        rc, out, _ = run_cli(["tail", *map(str, paths), "--format", "csv"], capsys)
        assert rc == 0
        rows = list(csv.DictReader(io.StringIO(out)))
        assert "iteration" not in rows[0] and [r["step"] for r in rows] == want
        assert [r["loss"] for r in rows][:3] == ["0.5", "0.4", "0.3"]


def test_md_shows_a_unix_time_as_a_time(tmp_path: Path, capsys: Cap) -> None:
    """md showed ``ts`` as 1.8e9 on every row; csv and jsonl keep the number."""
    run = tmp_path / "r" / "metrics.jsonl"
    write_rows(run, ({"step": s, "ts": 1.8e9 + 30 * s, "time": 1.8e12 + 500 * s, "loss": 1.0} for s in range(3)))
    rc, out, _ = run_cli(["tail", str(run), "--format", "md"], capsys)
    assert rc == 0 and "e9" not in out and "e12" not in out
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in out.splitlines() if line.startswith("| ")]
    ts, time = rows[0].index("ts"), rows[0].index("time")
    assert [r[ts] for r in rows[1:]] == ["2027-01-15T08:00:00Z", "2027-01-15T08:00:30Z", "2027-01-15T08:01:00Z"]
    assert rows[2][time] == "2027-01-15T08:00:00Z"  # milliseconds (1.8e12 + 500 ms, to the second)
    rc, out, _ = run_cli(["tail", str(run), "--format", "csv"], capsys)
    assert [r["ts"] for r in csv.DictReader(io.StringIO(out))] == ["1800000000.0", "1800000030.0", "1800000060.0"]
    rc, out, _ = run_cli(["tail", str(run), "--format", "jsonl"], capsys)
    assert [json.loads(line)["ts"] for line in out.splitlines()] == [1.8e9, 1.8e9 + 30, 1.8e9 + 60]
