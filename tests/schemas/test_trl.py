"""steptable.schemas.trl: HF Trainer / TRL and MaxEnt-GRPO trainer states (golden), detection without telling
keys, losses without a direction; the same trainers' rows as their tracker callbacks log them (W&B, trackio,
TensorBoard, written by transformers and TRL in the test)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from steptable.ingest import load
from steptable.schemafiles.resolve import detect, get_schema, run_schema
from steptable.schemas import layout
from tests.helpers import run_cli
from tests.schemas.helpers import check_layout
from tests.trainer_logs import write_maxent_state, write_trl_state


def test_pg_losses_have_no_direction() -> None:
    for name, key in [("verl", "actor/pg_loss"), ("tinyzero", "actor/pg_loss"), ("trl", "loss"),
                      ("maxent-grpo", "train/loss/policy")]:
        c = get_schema(name).col(key)
        assert c is not None and c.better is None
    for name, key in [("verl", "critic/score/mean"), ("tinker", "env/all/reward/total"), ("trl", "reward")]:
        c = get_schema(name).col(key)
        assert c is not None and c.better == "higher"


def test_trainer_state_without_telling_keys_is_trl_and_empty_is_generic() -> None:
    assert detect(Path("out/checkpoint-5/trainer_state.json"), ["step", "custom_metric"]).name == "trl"
    assert detect(Path("x/metrics.jsonl"), []).name == "generic"
    assert detect(Path("x/metrics.jsonl"), ["step", "loss", "lr"]).name == "generic"


Golden = Callable[[str, str], None]


def test_trl(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "trl", write_trl_state(tmp_path), "trl", max_width=140)
    assert "train_runtime" not in text.splitlines()[0]


def test_maxent(tmp_path: Path, golden: Golden) -> None:
    check_layout(golden, "maxent", write_maxent_state(tmp_path)["state"], "maxent-grpo")


def test_hf_trainer_runs_in_every_tracker_are_laid_out_as_hf_runs(hf_every_tracker: Path) -> None:
    """transformers' W&B, trackio and TensorBoard callbacks log ``train/loss``, ``eval/loss``...: the trl schema
    reads them (it read only the state file's spelling: the trackers' runs were generic, their loss behind the
    evaluation's), the loss first, the evaluation's loss under its own column."""
    stores = load(hf_every_tracker)
    kinds = {}
    for store in stores.values():
        if not len(store):
            continue
        assert run_schema(store).name == "trl", (store.kind, store.keys)
        shown = [c.key for c in layout([store], run_schema(store), step_key=store.step_key or "step")]
        kinds[store.kind] = shown
        assert shown[1] == "loss" and "eval_loss" in shown, (store.kind, shown)
        assert "train/global_step" not in shown[1:], (store.kind, shown)  # (the step again, in trackio's rows)
    assert {"wandb", "trackio", "tensorboard", "trainer_state"} <= kinds.keys()


def test_a_trl_grpo_run_in_wandb_leads_with_its_metrics_not_its_timings(trl_wandb_run: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A GRPOTrainer reporting to W&B: ``train/reward``, ``train/loss``... under TRL's headers, its profiling timings
    out of the default table (a dozen of them led it, and the 200 cells left the reward out)."""
    code, out, _ = run_cli(["tail", "-n", "0", str(trl_wandb_run / "wandb")], capsys)
    header = out.splitlines()[0].split()
    assert code == 0 and header[:4] == ["step", "loss", "reward", "rew_std"], header
    assert not any(h.startswith("Time_take") for h in header)
    code, out, _ = run_cli(["legend", str(trl_wandb_run / "wandb")], capsys)
    kept_out = out.split("kept out of the table")[1].split("\n\n")[0]
    assert out.startswith("trl columns:") and "profiling/Time taken: GRPOTrainer.compute_loss" in kept_out


def test_a_trl_grpo_runs_own_keys_are_described(trl_wandb_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every key TRL's GRPOTrainer logs has a legend line that says what it is (its step time, its terminated
    lengths), and the clipped shares of the process with the least and the most are kept out: on one process they
    repeat the means."""
    code, out, _ = run_cli(["legend", str(trl_wandb_run / "wandb")], capsys)
    shown, kept_out = out.split("\n\n")[0].split("kept out of the table")
    lines = {line.split()[0]: line for line in shown.splitlines()[1:] if line.startswith(" ")}
    assert code == 0 and "as logged" not in shown, shown
    assert "seconds the optimizer step took" in lines["step_time"]
    assert "ended (EOS) within the limit" in next(v for k, v in lines.items() if "mean_termin" in k)
    assert "lower bound" in lines["clip/low_mean"] and "upper bound" in lines["clip/high_mean"]
    assert "train/clip_ratio/low_min" in kept_out and "train/clip_ratio/high_max" in kept_out
    assert "clip/high_max" not in shown


#: a DPO table's lead: its preference metrics under TRL's names, then the trainer's, then their evaluation
DPO_LEAD = ["step", "loss", "entropy", "rew_acc", "margin", "rew_ch", "rew_rej", "lp_ch", "lp_rej", "lg_ch", "lg_rej",
            "tok_acc", "gnorm", "lr", "epoch", "eval_loss", "ev_rew_acc", "ev_margin"]


@pytest.mark.parametrize("where", ["out/dpo", "trackio/dpo.db"])
def test_a_dpo_run_leads_with_its_preference_metrics(trl_preference_runs: Path, where: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """TRL's DPOTrainer, read from its trainer_state.json and from trackio: its preference accuracy, margin and
    implicit rewards lead under headers of their own (none cut, none a bare ``chosen``), each evaluation metric
    beside them, described as DPO's (not as GRPO's reward functions), and the step shown once."""
    code, out, _ = run_cli(["tail", "-n", "1", "--width", "0", str(trl_preference_runs / where)], capsys)
    header = out.splitlines()[0].split()
    assert code == 0 and header[: len(DPO_LEAD)] == DPO_LEAD, header
    assert not any("…" in h or h in ("chosen", "rejected", "eval/chosen", "global_step") for h in header), header
    code, out, _ = run_cli(["legend", str(trl_preference_runs / where)], capsys)
    lines = {line.split()[0]: line for line in out.split("\n\n")[0].splitlines()[1:] if line.startswith(" ")}
    assert out.startswith("trl columns:") and "reward function statistic" not in out
    assert "preference pairs" in lines["rew_acc"] and "higher is better" in lines["ev_margin"], lines


def test_a_reward_model_run_says_what_its_metrics_are(trl_preference_runs: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """TRL's RewardTrainer in trackio: its pairwise accuracy, margin and scores are described, and the trainer's
    ``global_step`` (the step again, in trackio's rows) is kept out of the table."""
    code, out, _ = run_cli(["legend", str(trl_preference_runs / "trackio" / "rm.db")], capsys)
    shown, kept_out = out.split("\n\n")[0].split("kept out of the table")
    lines = {line.split()[0]: line for line in shown.splitlines()[1:] if line.startswith(" ")}
    assert code == 0 and "as logged" not in shown, shown
    assert "RewardTrainer" in lines["accuracy"] and "higher is better" in lines["margin"], lines
    assert "reward-model score" in lines["mean_reward"] and "train/global_step" in kept_out


def test_an_sft_runs_evaluation_shows_its_scores_not_the_token_count(trl_preference_runs: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """TRL's SFTTrainer in trackio logs the training's token count again with each evaluation (``eval_num_tokens``,
    the same number as ``num_tokens``): it is kept out of the table, where it led as an evaluation metric, and the
    evaluation's entropy is described as the entropy on the evaluation set."""
    db = str(trl_preference_runs / "trackio" / "sft.db")
    code, out, _ = run_cli(["tail", "-n", "1", "--width", "0", db], capsys)
    header = out.splitlines()[0].split()
    assert code == 0 and header[:6] == ["step", "loss", "entropy", "tok_acc", "gnorm", "lr"], header
    assert "ev_tok_acc" in header and "ev_entropy" in header and "eval/num_tokens" not in header, header
    code, out, _ = run_cli(["legend", db], capsys)
    shown, kept_out = out.split("\n\n")[0].split("kept out of the table")
    lines = {line.split()[0]: line for line in shown.splitlines()[1:] if line.startswith(" ")}
    assert "evaluation set" in lines["ev_entropy"] and "eval/num_tokens" in kept_out, (shown, kept_out)
