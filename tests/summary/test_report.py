"""Edges of ``steptable summary`` a mutation run left unpinned: which promoted evaluation keys get a row, the cells of
one-row, text and small-number columns, the rate and resume parts of the header, labels, and markdown escaping."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower
from steptable.summary.keycols import lead_columns
from steptable.summary.report import rate_text, run_label, summarize
from steptable.summary.trend import trend_pct
from tests.helpers import run_cli, write_rows
from tests.summary.helpers import FakeRun

NOW = 1_700_100_000.0


def one(cols: dict[str, list[Any]], **kw: Any) -> FakeRun:
    n = len(next(iter(cols.values())))
    return FakeRun("runs/grpo/metrics.jsonl", "", cols, list(range(n)), **kw)


def table(text: str) -> dict[str, list[str]]:
    """Row name -> its cells, of a single run's text summary."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("col "))
    rows = [ln.split(" ") for ln in lines[start + 1 :] if ln and not ln.startswith("alerts")]
    return {r[0]: r[1:] for r in rows}


# ------------------------------------------------------------------------------------------ promoted eval keys


def _tinker_eval(acc: float) -> dict[str, float]:
    # what tinker-cookbook's RL test-set evaluator logs: scores, and the size of the (fixed) test set
    return {"test/env/all/reward/total": 1.0 + acc, "test/env/all/correct": acc, "test/env/all/total_episodes": 64,
            "test/env/all/total_turns": 64, "test/env/all/total_ob_tokens": 11987,
            "test/env/all/turns_per_episode": 1.0, "test/env/all/ob_tokens_per_turn": 187.3, "time/run_evals": 31.5}


def _write_tinker_stalled(d: Path) -> None:
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    for step in range(30):
        rows.append({"step": step, "progress/batch": step, "progress/done_frac": round((step + 1) / 30, 4),
                     "optim/lr": 4e-5, "env/all/reward/total": round(0.3 + rng.gauss(0, 0.05), 4),
                     "optim/entropy": round(0.8 + rng.gauss(0, 0.02), 3), "time/total": round(44 + rng.gauss(0, 2), 2),
                     **(_tinker_eval(0.25) if step == 0 else {})})  # the step-0 evaluation shares the training row
        if step == 15:
            rows.append({"step": step, **_tinker_eval(0.25)})  # a later evaluation row, same score
    write_rows(d / "metrics.jsonl", rows)


def test_eval_score_held_at_one_value_is_shown_but_eval_set_size_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an accuracy that did not move between evaluations is the news (training stalled); the test set's episode
    # count, turns per episode and prompt length are the same at every evaluation by construction
    _write_tinker_stalled(tmp_path / "run")
    rc, out, _ = run_cli(["summary", str(tmp_path / "run")], capsys)
    assert rc == 0, out
    rows = table(out)
    assert [c for name, c in rows.items() if name.endswith("correct")] == [[".25", ".25", ".25", ".25", "="]], out
    assert [c for name, c in rows.items() if name.startswith("test_rew")] == [["1.25", "1.25", "1.25", "1.25", "="]]
    assert sorted(name for name in rows if name.startswith("test")) == ["test/correct", "test_rew"], out


def _write_trl_grpo(d: Path, steps: int = 40, every: int = 5) -> None:
    """A TRL GRPO trainer_state.json: at evaluation the clip ratios are 0 by construction (no old policy)."""
    from tests.trainer_logs import trainer_state

    rng = random.Random(4)
    hist: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        acc = round(0.2 + 0.01 * step + rng.uniform(-0.02, 0.02), 4)
        hist.append({"step": step, "loss": round(rng.uniform(-0.01, 0.01), 5), "reward": round(acc + 0.5, 4),
                     "reward_std": round(0.4 + rng.uniform(-0.05, 0.05), 4), "kl": round(0.0004 * step, 6),
                     "entropy": round(0.7 - 0.002 * step + rng.uniform(0, 0.01), 4), "learning_rate": 1e-6,
                     "grad_norm": round(rng.uniform(0.05, 0.3), 4), "completions/mean_length": round(300 + 8 * step, 2),
                     "completions/mean_terminated_length": round(280 + 8 * step, 2), "num_tokens": 40960.0 * step,
                     "frac_reward_zero_std": round(0.25 + rng.uniform(-0.1, 0.1), 4), "epoch": round(step / steps, 4),
                     "completions/clipped_ratio": round(0.1 - 0.001 * step + rng.uniform(0, 0.01), 4),
                     "rewards/accuracy_reward/mean": acc, **{f"clip_ratio/{k}": 0.0 for k in _CLIPS}})
        if step % every == 0:
            hist.append({"step": step, "epoch": round(step / steps, 4), "eval_loss": round(rng.uniform(-0.01, 0.01), 5),
                         "eval_reward": round(acc + 0.45 + rng.uniform(0, 0.05), 4),
                         "eval_reward_std": round(0.4 + rng.uniform(-0.05, 0.05), 4),
                         "eval_rewards/accuracy_reward/mean": round(acc + rng.uniform(0, 0.05), 4),
                         "eval_completions/mean_length": round(300 + 8 * step, 2),
                         "eval_completions/clipped_ratio": 0.0,
                         "eval_kl": round(0.0004 * step, 6), "eval_entropy": round(0.7 - 0.002 * step, 4),
                         "eval_runtime": round(12.5 + rng.uniform(0, 1), 3), "eval_samples_per_second": 10.24,
                         **{f"eval_clip_ratio/{k}": 0.0 for k in _CLIPS}})
    p = d / f"checkpoint-{steps}" / "trainer_state.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(trainer_state(hist, steps, {"epoch": 1.0, "eval_steps": every})))


_CLIPS = ("low_mean", "low_min", "high_mean", "high_max", "region_mean")


@pytest.mark.parametrize(("key", "score"), [
    *((k, True) for k in ["eval_rougeL", "eval_rouge1", "eval_meanAccuracy", "eval/top1acc", "eval_pearson",
                          "eval_matthews_correlation", "eval_wer", "eval/sacrebleu", "test/env/all/correct",
                          "test/format_parse", "test/env/all/reward/total", "val-core/openai/gsm8k/reward/mean@1",
                          "test/pass@1", "val/test_score/countdown", "eval/win_rate"]),
    *((k, False) for k in ["eval/grad_accum_steps", "eval/accepted_len", "eval_format_time_s",
                           "eval_clip_ratio/low_mean", "test/env/all/total_episodes", "test/env/all/ob_tokens_per_turn",
                           "eval_samples_per_second", "eval_completions/clipped_ratio", "eval_num_tokens"]),
])
def test_a_held_evaluation_key_is_a_headline_when_its_name_is_a_score(key: str, score: bool) -> None:
    # held at one value, a score stalled (shown); a time, size, count or clip ratio is the evaluation's bookkeeping
    from steptable.summary.keycols import _score

    assert _score(key) is score


def test_eval_bookkeeping_held_at_zero_does_not_push_out_varying_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GRPO's evaluation clip ratios are 0 at every evaluation by construction: not a headline, so the 20 rows go to
    # the evaluation KL and entropy and the training lengths and tokens, which move
    _write_trl_grpo(tmp_path / "grpo")
    rc, out, _ = run_cli(["summary", str(tmp_path / "grpo")], capsys)
    rows = table(out)
    assert rc == 0 and not [k for k in rows if "clip" in k and rows[k][:4] == ["0"] * 4], out
    assert {"eval_kl", "eval_entropy", "num_tokens"} <= set(rows), out


# ------------------------------------------------------------------------------------------------------- cells


def test_one_row_run_shows_no_trend_as_a_dash() -> None:
    # one value has no trend: the cell says so ("-"), so the row keeps its five cells under the header
    rows = table(summarize([one({"loss": [1.5]})], now=NOW))
    assert rows["loss"] == ["1.5", "1.5", "1.5", "1.5", "-"]


def test_small_rising_trend_keeps_its_sign() -> None:
    # a value loss creeping up by 0.7% over the window reads +1, never -1
    rng = random.Random(0)
    xs = [round(2.0 + 0.0008 * i + rng.gauss(0, 0.002), 5) for i in range(200)]
    t = trend_pct(xs)
    assert t is not None and 0.5 < t < 1
    assert table(summarize([one({"vf_loss": xs})], now=NOW))["vf_loss"][-1] == "+1"


def test_small_learning_rate_is_positional_with_three_digits() -> None:
    # 1e-5 <= |x| < 1e-3 is written positionally, 3 significant digits: .000771, not 7.71e-4 nor .00077123
    lr = [7.7123e-4 - 1e-6 * i for i in range(10)]
    assert table(summarize([one({"lr": lr})], now=NOW))["lr"][:4] == [".000771", ".000762", ".000762", ".000771"]


def test_aligned_small_numbers_take_two_positional_digits_where_they_fit() -> None:
    # --align: a column 7 wide takes ".000045" (2 digits, positional: few tokens), not the exponent form 4.47e-5
    cols = {"lr": [4.475e-5 * (1 + i) for i in range(3)], "kl": [-1.2e-4 * (1 + i) for i in range(3)]}
    lines = summarize([one(cols)], now=NOW, align=True).splitlines()
    lr = next(ln for ln in lines if ln.startswith("lr "))
    assert lr.split() == ["lr", ".000045", ".000134", ".000045", ".000134", "+50"]


def test_a_text_cell_is_one_word_whatever_blanks_it_holds() -> None:
    # the summary's cells are split on whitespace by the agents that read it: "roll out" would be two cells
    cols = {"loss": [1.0, 2.0], "phase": ["roll out", "eval\u00a0 pass\u3000"]}
    rows = table(summarize([one(cols)], now=NOW, columns=["loss", "phase"]))
    assert rows["phase"] == ["roll_out", "eval__pass", "-", "-", "-"]


def test_text_column_first_and_last_values_are_cut_to_twelve_columns() -> None:
    # a status string asked for by name shows its first and last values, cut to 12 columns with an ellipsis
    cols = {"loss": [1.0, 2.0, 3.0, 4.0], "status": [None, "warmup", "training", "checkpointing-shard-7"]}
    rows = table(summarize([one(cols)], now=NOW, columns=["loss", "status"]))
    assert rows["status"] == ["warmup", "checkpointi…", "-", "-", "-"]


def test_default_budget_is_twenty_key_columns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # summarize() called as a library gives the same 20 rows as the CLI's default --max-columns
    rng = random.Random(3)
    cols = {f"env/metric_{k:02d}": [rng.gauss(k, 1) for _ in range(50)] for k in range(30)}
    assert len(table(summarize([one(cols)], now=NOW))) == 20
    write_rows(tmp_path / "metrics.jsonl", [{"step": i, **{k: v[i] for k, v in cols.items()}} for i in range(50)])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0, out
    assert len(table(out)) == 20


# ------------------------------------------------------------------------------------------------------ header


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


def test_lead_columns_detects_the_schema_when_none_is_given(tmp_path: Path) -> None:
    # a library caller passing runs only: their schema is detected, not a crash
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": 1, "reward": 2, "foo": 3}) + "\n")
    f = Follower([tmp_path])
    f.scan()
    assert lead_columns(list(f.stores.values())) == {"loss": 0, "reward": 0}


# ------------------------------------------------------------------------------------------------------ alerts


def test_summarize_without_alerts_reads_the_clock_for_stalls() -> None:
    # alerts computed by summarize itself (a library caller) see a 2 h pause between rows, as the CLI's do
    rng = random.Random(11)
    walls = [NOW - 9000 + 10 * i + (7200 if i >= 30 else 0) for i in range(60)]
    run = one({"loss": [round(1.0 + rng.gauss(0, 0.05), 4) for _ in range(60)]}, wall_times=walls,
              last_update=walls[-1])
    out = summarize([run], now=walls[-1] + 5)
    assert "stalled" in out and "alerts 1 (1W)" in out, out


# -------------------------------------------------------------------------------------------------- markdown


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
