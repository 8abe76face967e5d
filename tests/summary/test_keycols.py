"""steptable.summary.keycols: which columns a summary shows: the schema's and the alert roles', then promoted
evaluation scores (a held score is a headline when its name says score), detected when no schema is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.ingest import Follower
from steptable.summary.keycols import lead_columns


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


def test_lead_columns_detects_the_schema_when_none_is_given(tmp_path: Path) -> None:
    # a library caller passing runs only: their schema is detected, not a crash
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "loss": 1, "reward": 2, "foo": 3}) + "\n")
    f = Follower([tmp_path])
    f.scan()
    assert lead_columns(list(f.stores.values())) == {"loss": 0, "reward": 0}


def test_the_column_a_schema_marks_to_watch_first_leads_the_summary(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The routing arms' ``hack_s?`` (the schema's mark: the column to watch first) came sixth in the table's order,
    past summary's five-column budget for three arms: it was only named under "more columns". It leads now."""
    from steptable.demo.run import run_demo
    from tests.helpers import run_cli

    run_demo(tmp_path, steps=40, interval=0, console=False)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    lines = out.splitlines()
    table = lines[lines.index("col arm first last min max tr%") + 1:]  # (after the runs' lines: one or more)
    rows = [line.split()[0] for line in table if line and not line.startswith((" ", "more", "Δ"))]
    assert rc == 0 and rows[0] == "hack_s?", out
    assert "hack_s" not in next(line for line in out.splitlines() if line.startswith("more columns:")), out
