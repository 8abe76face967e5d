"""steptable.summary.report: the summary text of runs (golden): header (steps, rate, resumes, age, how the run
ended), one row per key column with first/last/min/max/tr%, the cells of text, small-number and fraction columns,
labels, alerts, markdown escaping, the column budget."""

from __future__ import annotations

import math
import random
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest

from steptable.alerts.engine import Alert
from steptable.summary.report import _arm_tag, _short, alerts_text, rate_text, run_label, summarize, trend_pct
from tests.alerts.helpers import spike
from tests.helpers import grpo_row, run_cli, store_of, write_rows
from tests.summary.helpers import FakeRun, summary_table

NOW = 1_700_100_000.0


def one(cols: dict[str, list[Any]], **kw: Any) -> FakeRun:
    n = len(next(iter(cols.values())))
    return FakeRun("runs/grpo/metrics.jsonl", "", cols, list(range(n)), **kw)


def test_one_row_run_shows_no_trend_as_a_dash() -> None:
    # one value has no trend: the cell says so ("-"), so the row keeps its five cells under the header
    rows = summary_table(summarize([one({"loss": [1.5]})], now=NOW))
    assert rows["loss"] == ["1.5", "1.5", "1.5", "1.5", "-"]


def test_small_rising_trend_keeps_its_sign() -> None:
    # a value loss creeping up by 0.7% over the window reads +1, never -1
    rng = random.Random(0)
    xs = [round(2.0 + 0.0008 * i + rng.gauss(0, 0.002), 5) for i in range(200)]
    t = trend_pct(xs)
    assert t is not None and 0.5 < t < 1
    assert summary_table(summarize([one({"vf_loss": xs})], now=NOW))["vf_loss"][-1] == "+1"


def test_small_learning_rate_is_positional_with_three_digits() -> None:
    # 1e-5 <= |x| < 1e-3 is written positionally, 3 significant digits: .000771, not 7.71e-4 nor .00077123
    lr = [7.7123e-4 - 1e-6 * i for i in range(10)]
    cells = summary_table(summarize([one({"lr": lr})], now=NOW))["lr"][:4]
    assert cells == [".000771", ".000762", ".000762", ".000771"]


def test_aligned_small_numbers_take_two_positional_digits_where_they_fit() -> None:
    # --align: a column 7 wide takes ".000045" (2 digits, positional: few tokens), not the exponent form 4.47e-5
    cols = {"lr": [4.475e-5 * (1 + i) for i in range(3)], "kl": [-1.2e-4 * (1 + i) for i in range(3)]}
    lines = summarize([one(cols)], now=NOW, align=True).splitlines()
    lr = next(ln for ln in lines if ln.startswith("lr "))
    assert lr.split() == ["lr", ".000045", ".000134", ".000045", ".000134", "+50"]


def test_a_text_cell_is_one_word_whatever_blanks_it_holds() -> None:
    # the summary's cells are split on whitespace by the agents that read it: "roll out" would be two cells
    cols = {"loss": [1.0, 2.0], "phase": ["roll out", "eval\u00a0 pass\u3000"]}
    rows = summary_table(summarize([one(cols)], now=NOW, columns=["loss", "phase"]))
    assert rows["phase"] == ["roll_out", "eval__pass", "-", "-", "-"]


def test_text_column_first_and_last_values_are_cut_to_twelve_columns() -> None:
    # a status string asked for by name shows its first and last values, cut to 12 columns with an ellipsis
    cols = {"loss": [1.0, 2.0, 3.0, 4.0], "status": [None, "warmup", "training", "checkpointing-shard-7"]}
    rows = summary_table(summarize([one(cols)], now=NOW, columns=["loss", "status"]))
    assert rows["status"] == ["warmup", "checkpointi…", "-", "-", "-"]


def test_default_budget_is_twenty_key_columns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # summarize() called as a library gives the same 20 rows as the CLI's default --max-columns
    rng = random.Random(3)
    cols = {f"env/metric_{k:02d}": [rng.gauss(k, 1) for _ in range(50)] for k in range(30)}
    assert len(summary_table(summarize([one(cols)], now=NOW))) == 20
    write_rows(tmp_path / "metrics.jsonl", [{"step": i, **{k: v[i] for k, v in cols.items()}} for i in range(50)])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0, out
    assert len(summary_table(out)) == 20


@pytest.mark.parametrize(("secs", "want"), [
    ([1.0, 3.0], "2s/step"),  # an even count: the mean of the middle two
    ([1.0, 2.0, 3.0], "2s/step"),  # odd: the middle one
    ([1.0, 2.0, 3.0, 4.0], "2.5s/step"),
    ([1.0, 1.0], "1s/step"),  # exactly 1 s/step is written in seconds ("1.93s/step at 1 s/step or slower")
    ([0.5, 0.5], "120 step/min"),
])
def test_rate_is_the_median_seconds_per_step(secs: list[float], want: str) -> None:
    walls = [0.0]
    for s in secs:
        walls.append(walls[-1] + s)
    assert rate_text(list(range(len(walls))), walls) == want


def test_more_than_five_resumes_are_counted() -> None:
    # the header names the first five resume points and counts the rest: a sixth restart must not vanish
    rng = random.Random(5)
    run = one({"loss": [rng.gauss(1, 0.1) for _ in range(100)]}, resumes=[10, 20, 30, 40, 50, 60])
    head = summarize([run], now=NOW).splitlines()[0]
    assert head.endswith("resumed 10,20,30,40,50 +1")


def test_arm_that_is_the_files_dotted_stem_is_not_repeated() -> None:
    # verl's <experiment>.jsonl: an experiment named qwen2.5-grpo is already in the path, so the path alone names it
    r = FakeRun("runs/qwen2.5-grpo.jsonl", "qwen2.5-grpo", {"loss": [1.0]}, [0])
    assert run_label(r, unique_arm=False) == "runs/qwen2.5-grpo.jsonl"
    r2 = FakeRun("runs/v1.2/run.jsonl", "exp.v1", {"loss": [1.0]}, [0])
    assert run_label(r2, unique_arm=False) == "exp.v1 (runs/v1.2/run.jsonl)"


def test_summarize_without_alerts_reads_the_clock_for_stalls() -> None:
    # alerts computed by summarize itself (a library caller) see a 2 h pause between rows, as the CLI's do
    rng = random.Random(11)
    walls = [NOW - 9000 + 10 * i + (7200 if i >= 30 else 0) for i in range(60)]
    run = one({"loss": [round(1.0 + rng.gauss(0, 0.05), 4) for _ in range(60)]}, wall_times=walls,
              last_update=walls[-1])
    out = summarize([run], now=walls[-1] + 5)
    assert "stalled" in out and "alerts 1 (1W)" in out, out


def test_run_name_is_escaped_in_markdown_only() -> None:
    # a directory named exp_1*b: plain text shows it as it is; markdown escapes the * (else it starts emphasis)
    run = FakeRun("runs/exp_1*b/metrics.jsonl", "exp_1*b", {"loss": [1.0, 2.0, 3.0]}, [0, 1, 2])
    assert summarize([run], now=NOW).splitlines()[0].startswith("exp_1*b: ")
    assert summarize([run], now=NOW, fmt="md").splitlines()[0].startswith("**exp_1\\*b**: ")


def test_markdown_alert_lines_are_escaped() -> None:
    # "(>10)" and "(<10% of early ...)" in a markdown list: a bare < or > is read as html or a quote
    rng = random.Random(2)
    n = 45
    ent = [round(1.0 + rng.gauss(0, 0.01), 4) if i < 25 else 0.05 for i in range(n)]
    kl = [round(abs(0.05 + rng.gauss(0, 0.005)), 4) if i < 40 else 20.0 for i in range(n)]
    out = summarize([one({"entropy": ent, "kl": kl})], now=NOW, fmt="md")
    assert "kl blow-up 20 (\\>10)" in out, out
    assert "entropy collapse .05 (\\<10% of early" in out, out
    assert "(>10)" not in out and "(<10%" not in out


def test_a_negative_column_budget_shows_no_key_column(tmp_path: Path) -> None:
    # a library caller's max_columns below 0 is no budget at all, as 0 is (not all rows but one)
    rng = random.Random(6)
    store = store_of(tmp_path / "r" / "metrics.jsonl", [grpo_row(rng, s) for s in range(30)])
    for budget in (-1, 0):
        text = summarize([store], max_columns=budget)
        assert not [ln for ln in text.splitlines() if ln.startswith(("col ", "loss", "reward"))], (budget, text)


def test_a_label_names_the_path_alone_when_it_shows_the_arm() -> None:
    nested = SimpleNamespace(run="campaign/grpo_none/logs/train/metrics.jsonl", arm="grpo_none")
    verl = SimpleNamespace(run="exp_lr1e-6/train_log.jsonl", arm="train_log")
    split = SimpleNamespace(run="logs/metrics.jsonl#routeB", arm="routeB")
    assert [run_label(r, False) for r in (nested, verl, split)] == [nested.run, verl.run, split.run]
    assert run_label(nested) == "grpo_none"  # an arm no other run has names it alone


def test_a_label_leads_with_an_arm_the_path_does_not_show() -> None:
    above = SimpleNamespace(run="train/metrics.jsonl", arm="exp1")  # the arm from a directory above the root
    assert run_label(above, False) == "exp1 (train/metrics.jsonl)"


def test_arm_tags_never_run_out() -> None:
    tags = [_arm_tag(i) for i in range(20_000)]
    assert len(set(tags)) == 20_000
    assert tags[:3] == ["a", "b", "c"] and tags[26] == "aa" and tags[701] == "zz" and tags[702] == "aaa"


Golden = Callable[[str, str], None]


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
    # compact (default): same cells, one space apart
    compact = summarize(runs, now=NOW, columns=["rew", "gn", "tok_s"]).splitlines()
    assert [r.split() for r in compact] == [r.split() for r in lines]
    # unpadded: a column's first row starts with its name, the other arms' rows with a space and their tag
    assert all(re.fullmatch(r"(\S+ [abc]| [bc])( \S+){5}", r) for r in compact[4:13]), compact


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


def test_trend_and_rate() -> None:
    assert trend_pct([1.0] * 90 + [2.0] * 10) == pytest.approx(100.0)
    assert trend_pct([5.0]) is None and trend_pct([1.0, 1.0]) == 0.0
    xs = [0.001 * (i - 85) for i in range(100)]  # crosses zero, no noise: relative to median |x| / 4
    assert trend_pct(xs) == pytest.approx(100 * 0.01 / (sorted(abs(x) for x in xs[80:])[10] / 4))  # (recent)
    assert rate_text([0, 1, 2, 3], [0.0, 2.0, 4.0, 6.0]) == "2s/step"
    assert rate_text([0, 10, 20], [0.0, 2.0, 4.0]) == "300 step/min"
    assert rate_text([0, 1], []) is None and rate_text([0, 0, 0], [1.0, 2.0, 3.0]) is None


def test_rate_of_rows_stamped_in_batches_is_timed_by_the_batches() -> None:
    """trackio stamps every row of a flush with the flush's time (every 0.5 s): 10 steps a batch at 0.5 s a batch
    is 1200 step/min, as a clock a row at 0.05 s a step is."""
    steps = list(range(200))
    assert rate_text(steps, [1000.0 + (i // 10) * 0.5 for i in steps]) == "1200 step/min"
    assert rate_text(steps, [1000.0 + i * 0.05 for i in steps]) == "1200 step/min"  # (a clock a row: the same)
    assert rate_text(steps, [1000.0] * 200) is None  # one batch: no span to time


def test_alerts_given_selected_and_limited() -> None:
    run = make_run("v", 5, n=60)
    found = [Alert("W", s, "gn", "spike", f"spike {s}") for s in (1, 2, 3, 4)] + [Alert("E", 9, "loss", "nonfinite",
                                                                                    "non-finite (NaN)")]
    text = summarize([run], now=NOW, columns=["rew"], alerts={"exp7": found})
    assert text.splitlines()[-3:] == ["alerts 5 (1E 4W):", "E step 9 loss non-finite (NaN)",
                                      "W steps 1-4 gn x4, last spike 4"]  # one line per kind, errors first
    by_arm = summarize([run], now=NOW, columns=["rew"], alerts={"exp7/v": found[:1], "exp7": found})
    assert by_arm.splitlines()[-2:] == ["alerts 1 (1W):", "W step 1 gn spike 1"]
    assert summarize([run], now=NOW, columns=["rew"], alerts={}).endswith("alerts 0\n")


def test_max_columns_prefers_present_columns_and_the_clock_defaults_to_now() -> None:
    run = make_run("v", 6, n=200)
    text = summarize([run], max_columns=3)
    names = [line.split()[0] for line in text.splitlines()[2:5]]
    assert names == ["rew", "hack_s", "loss"] and "eval_acc" not in text
    assert "upd " in text


def test_hostile_names_are_inert() -> None:
    run = FakeRun("\x1b[31mred", "arm\n2", {"k\x1b[2J": [1.0, 2.0]}, [0, 1])
    text = summarize([run], now=NOW)
    assert "\x1b" not in text and text.count("\n") == 4


def test_two_trainers_keys_for_one_quantity_share_one_block() -> None:
    """verl's actor/entropy and TRL's entropy are both shown as "entropy": one block of rows, the name said once
    (not two blocks of the same name, far apart); a run that has both keys gets each by its own key."""
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


SPIKES = [110, 224, 421, 505, 555, 595, 829, 1000, 1176, 1289, 1344, 1422, 1580, 1604, 1838, 2347, 2662, 2686, 2740]


@dataclass
class Run:
    run: str = "verl0/metrics.jsonl"
    arm: str = ""
    steps: list[int] = field(default_factory=lambda: list(range(1, 3001)))
    keys: list[str] = field(default_factory=list)
    resumes: list[int] = field(default_factory=list)
    bad_count: int = 0
    last_update: float | None = None
    wall_times: list[float] = field(default_factory=list)

    def column(self, key: str) -> Sequence[Any]:
        return []

    def __len__(self) -> int:
        return len(self.steps)


def stall(step: int, gap: str) -> Alert:
    return Alert("W", step, "", "stall", f"stalled: no row for {gap} (12x median 60s/row)")


def healthy() -> list[Alert]:
    """A healthy verl run's alerts: grad-norm spikes, two evaluation pauses, the end stall of an idle file."""
    found = [*map(spike, SPIKES), stall(99, "10.9m"), stall(399, "12.1m"), stall(3000, "1105d")]
    return sorted(found, key=lambda a: a.step)


def alert_lines(found: list[Alert], fmt: Literal["text", "md"] = "text") -> list[str]:
    text = summarize([Run()], now=NOW, columns=[], alerts={"verl0/metrics.jsonl": found}, fmt=fmt)
    lines = text.splitlines()
    return lines[next(i for i, x in enumerate(lines) if "alerts" in x):]


def test_incident_not_hidden_behind_routine_alerts() -> None:
    collapse = Alert("W", 1513, "actor/entropy", "entropy_collapse", "collapse .188 (<50% of recent .393)")
    base, sick = alert_lines(healthy()), alert_lines(sorted([*healthy(), collapse], key=lambda a: a.step))
    assert base == ["alerts 22 (22W):",
                    "W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                    "W steps 99-399 x2, last stalled: no row for 12.1m",
                    "W steps 110-2740 actor/grad_norm x19, last spike 1.24"]
    assert sick == ["alerts 23 (23W):", base[1], "W step 1513 actor/entropy collapse .188 (<50% of recent .393)",
                    *base[2:]]


def test_hang_mid_run_shows_apart_from_the_end_stall() -> None:
    """The stall at the run's last step (where it stands now) is its own line; the hour-long hang leads the pauses."""
    lines = alert_lines(sorted([*healthy(), stall(1499, "71.6m")], key=lambda a: a.step))
    assert lines[1:3] == ["W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                          "W steps 99-1499 x3, last stalled: no row for 71.6m"]
    merged = alerts_text([stall(99, "10.9m"), stall(3000, "1105d")])  # no end given: one kind
    assert merged[1:] == ["W steps 99-3000 x2, last stalled: no row for 1105d"]


def test_md_lists_one_line_per_kind() -> None:
    lines = alert_lines(healthy(), fmt="md")
    assert lines == ["- alerts 22 (22W):",
                     "  - W step 3000 stalled: no row for 1105d (12x median 60s/row)",
                     "  - W steps 99-399 x2, last stalled: no row for 12.1m",
                     "  - W steps 110-2740 actor/grad_norm x19, last spike 1.24"]


def test_arms_row_budget_keeps_whole_columns_and_names_the_rest() -> None:
    """``max_rows``: several arms keep their table's first whole columns that fit (3 arms x 5 columns of 7 in 15
    rows) and name the others on one line; without it, or with one run, every picked column."""
    runs = [make_run("vanilla", 1), make_run("routeA", 2), make_run("absorb", 3)]
    full = summarize(runs, now=NOW, alerts={})
    names = [r.split()[0] for r in full.splitlines() if re.match(r"\S+ a ", r)]
    assert len(names) == 7
    cut = summarize(runs, now=NOW, alerts={}, max_rows=15).splitlines()
    assert [r.split()[0] for r in cut if re.match(r"\S+ a ", r)] == names[:5]
    assert sum(1 for r in cut if re.fullmatch(r"(\S+ [abc]| [bc])( \S+){5}", r)) == 15
    assert f"more columns: {names[5]}, {names[6]}" in cut
    assert summarize(runs, now=NOW, alerts={}, max_rows=2).count(" a ") == 1  # the first column always
    one = summarize(runs[:1], now=NOW, alerts={}, max_rows=2)
    assert "more columns" not in one and len(one.splitlines()) == 2 + 7 + 1
    md = summarize(runs, now=NOW, alerts={}, max_rows=15, fmt="md")
    assert f"- more columns: {names[5]}, {names[6]}" in md


def test_arms_in_one_state_share_a_line_and_clean_arms_one_alerts_line() -> None:
    runs = [make_run("vanilla", 1), make_run("routeA", 2), make_run("absorb", 3)]
    lines = summarize(runs, now=NOW, alerts={}).splitlines()
    assert lines[0].startswith("a: vanilla, b: routeA, c: absorb: steps 0-399, 9s/step, upd ")
    assert lines[-1] == "a b c alerts 0" and sum("alerts" in ln for ln in lines) == 1
    late = make_run("late", 4, n=300)
    lines = summarize([runs[0], late, runs[1]], now=NOW, alerts={"exp7/late": [spike(250)]}).splitlines()
    assert lines[0].startswith("a: vanilla, c: routeA: steps 0-399") and lines[1].startswith("b: late: steps 0-299")
    assert lines[-3:-1] == ["a c alerts 0", "b alerts 1 (1W):"]


@pytest.mark.parametrize("x", [1e-5, 2e-5, 5e-5, 1e-4, 1e-3, 3e-6])
def test_summary_cells_write_a_float32_copy_as_its_float64_value(x: float) -> None:
    """An lr of 1e-5 read from TensorBoard (float32: 9.99999974737875e-06) and from W&B (float64) reads the same."""
    y = float(struct.unpack("f", struct.pack("f", x))[0])
    assert y != x and [_short(y, d) for d in (2, 3)] == [_short(x, d) for d in (2, 3)]
