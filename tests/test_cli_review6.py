"""The formats6 review's findings 2 and 5: ``summary`` leads with the run's own table (the schema's columns, then
evaluation scores) and counts a logged NaN as present; ``tail --format csv|md`` carry every key jsonl carries."""

from __future__ import annotations

import csv
import io
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower
from steptable.schemafiles.resolve import by_schema
from steptable.schemas import layout
from tests.helpers import run_cli, write_rows
from tests.trainer_logs import write_tinker, write_trl_state, write_verl

Cap = pytest.CaptureFixture[str]


def _noisy(rng: random.Random, x: float) -> float:
    return x * (1 + rng.uniform(-0.05, 0.05))


def write_verl_real(path: Path, steps: int = 40, val_every: int = 10, seed: int = 3) -> None:
    """verl's file logger with verl's key order, every metric noisy as in a real run, validation every few steps."""
    rng = random.Random(seed)

    def val(s: int) -> dict[str, float]:
        return {"val-core/openai/gsm8k/reward/mean@1": _noisy(rng, 0.4 + s / 200),
                "val-aux/openai/gsm8k/score/mean@1": _noisy(rng, 0.4 + s / 200)}

    rows: list[dict[str, Any]] = [{"step": 0, "data": val(0)}]
    for s in range(1, steps + 1):
        d: dict[str, Any] = {}
        for key, x in [("actor/entropy", 0.5), ("actor/kl_loss", 0.001 * s), ("actor/pg_loss", -0.01),
                       ("actor/pg_clipfrac", 0.002), ("actor/ppo_kl", 1e-4), ("actor/pg_clipfrac_lower", 1e-5),
                       ("actor/grad_norm", 0.3), ("perf/mfu/actor", 0.3), ("perf/max_memory_allocated_gb", 40),
                       ("perf/max_memory_reserved_gb", 60), ("perf/cpu_memory_used_gb", 80),
                       ("critic/score/mean", 0.5 + s / 300), ("critic/rewards/mean", 0.5 + s / 300),
                       ("critic/advantages/mean", 1e-3), ("critic/advantages/max", 1.7),
                       ("critic/advantages/min", -1.7), ("critic/returns/mean", 1e-3), ("critic/returns/max", 1.7),
                       ("critic/returns/min", -1.7), ("response_length/mean", 300), ("response_length/max", 1000),
                       ("response_length/min", 40), ("response_length/clip_ratio", 0.02),
                       ("prompt_length/mean", 100), ("prompt_length/max", 200), ("prompt_length/min", 50),
                       ("timing_s/gen", 32), ("timing_s/old_log_prob", 5), ("timing_s/ref", 5),
                       ("timing_s/update_actor", 15), ("timing_s/step", 60), ("perf/total_num_tokens", 4e5),
                       ("perf/time_per_step", 60), ("perf/throughput", 1200)]:
            d[key] = _noisy(rng, x)
        d.update({"actor/lr": 1e-6, "actor/kl_coef": 0.001, "training/global_step": s, "training/epoch": s // 20})
        if s % val_every == 0:
            d.update(val(s))
        rows.append({"step": s, "data": d})
    write_rows(path, rows)


def write_trl_noisy(root: Path, steps: int = 40, nan_at: int = 20) -> None:
    """A TRL GRPOTrainer ``trainer_state.json``: noisy train entries (one NaN loss), eval entries every 10 steps."""
    rng = random.Random(5)
    hist: list[dict[str, Any]] = []
    for step in range(5, 5 * steps + 5, 5):
        e: dict[str, Any] = {
            "clip_ratio/high_max": 0.01, "clip_ratio/high_mean": 0.01, "clip_ratio/low_mean": 0.01,
            "clip_ratio/low_min": 0.01, "clip_ratio/region_mean": 0.01, "completions/clipped_ratio": 0.125,
            "completions/max_length": 256.0, "completions/max_terminated_length": 240.0,
            "completions/mean_length": 150.0 + step / 10, "completions/mean_terminated_length": 140.0,
            "completions/min_length": 20.0, "completions/min_terminated_length": 20.0, "entropy": 0.61 - step / 1000,
            "frac_reward_zero_std": 0.25, "grad_norm": 0.8, "kl": 0.0002 * step, "learning_rate": 1e-6,
            "loss": 0.0001 * step, "num_tokens": 12000.0 * step, "reward": 0.3 + step / 1000, "reward_std": 0.4,
            "rewards/accuracy_reward/mean": 0.2 + step / 1000, "rewards/accuracy_reward/std": 0.4,
            "rewards/format_reward/mean": 0.1, "rewards/format_reward/std": 0.3,
        }
        e = {k: _noisy(rng, v) for k, v in e.items()}
        e.update(step=step, epoch=round(step / 400, 4))
        if step == 5 * nan_at:
            e["loss"] = math.nan
        hist.append(e)
        if step % 50 == 0:
            hist.append({"epoch": round(step / 400, 4), "eval_loss": _noisy(rng, 0.02), "eval_runtime": 60.1,
                         "eval_reward": 0.4 + step / 1000, "eval_samples_per_second": 2.1, "step": step})
    state = {"global_step": 5 * steps, "log_history": hist, "max_steps": 5 * steps, "logging_steps": 5}
    path = root / f"checkpoint-{5 * steps}" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(state))


def _names(text: str) -> list[str]:
    """The row names of a one-run summary's table."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("col "))
    end = next(i for i, line in enumerate(lines) if line.startswith("alerts"))
    return [line.split()[0] for line in lines[start + 1 : end]]


def _tail_head(path: Path, capsys: Cap) -> list[str]:
    rc, out, _ = run_cli(["tail", str(path), "-n", "1", "--width", "0"], capsys)
    assert rc == 0
    return out.splitlines()[0].split()


# ------------------------------------------------------------------------------------------ 2. summary columns
def test_summary_leads_with_the_tables_columns_and_the_validation_score(tmp_path: Path, capsys: Cap) -> None:
    write_verl_real(tmp_path / "exp" / "metrics.jsonl")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    names = _names(out)
    assert len(names) == 20
    for headline in ("val/reward@1", "resp_len", "t_step", "tok/s", "score", "pg_loss", "gnorm"):
        assert headline in names, (headline, names)
    # the lead is the table's own columns in the table's order (a constant lr left out), then the validation score
    head = _tail_head(tmp_path, capsys)
    lead = names[: names.index("val/reward@1") + 1]
    assert lead == [h for h in head if h in lead] and lead[:3] == head[1:4] and "lr" not in names
    assert names.index("pg_clipfrac_lower") > names.index("val/reward@1")


def test_summary_keeps_a_loss_with_one_nan_and_the_eval_columns(tmp_path: Path, capsys: Cap) -> None:
    write_trl_noisy(tmp_path / "grpo")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    names = _names(out)
    assert len(names) == 20
    assert {"loss", "reward", "eval_loss", "eval_rew", "gnorm"} <= set(names), names
    assert names[0] == "loss"  # the schema's columns, then promoted ones, then the rest
    assert names.index("eval_rew") < names.index("accuracy_reward") < names.index("clip/high_max")
    assert "eval_runtime" not in names  # hidden by the schema


def test_a_logged_nan_is_not_an_absence(tmp_path: Path, capsys: Cap) -> None:
    """No schema: the 20 most present varying keys; a key with one NaN logged is as present as the others."""
    rng = random.Random(1)
    rows = [{"step": s, **{f"m{j:02d}": rng.random() for j in range(22)}} for s in range(30)]
    rows[7]["m00"] = math.nan  # json.dumps writes the bare literal
    write_rows(tmp_path / "g" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    assert _names(out) == [f"m{j:02d}" for j in range(20)]


def test_summary_of_an_all_nan_loss_shows_nan(tmp_path: Path, capsys: Cap) -> None:
    rng = random.Random(2)
    write_rows(tmp_path / "r" / "metrics.jsonl",
               [{"step": s, "loss": math.nan, "reward": rng.random(), "x": rng.random()} for s in range(10)])
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    lines = out.splitlines()
    assert rc == 0 and "loss - nan - - -" in lines, out


def test_summary_columns_and_max_columns_still_narrow(tmp_path: Path, capsys: Cap) -> None:
    write_verl_real(tmp_path / "exp" / "metrics.jsonl")
    head = _tail_head(tmp_path, capsys)
    _, out, _ = run_cli(["summary", str(tmp_path), "--max-columns", "3"], capsys)
    assert _names(out) == head[1:4]
    _, out, _ = run_cli(["summary", str(tmp_path), "--columns", "val-core*,t_step"], capsys)
    assert _names(out) == ["val/reward@1", "t_step"]
    _, out, _ = run_cli(["summary", str(tmp_path), "--max-columns", "0"], capsys)
    assert "col " not in out


def test_summary_arms_share_the_rows(tmp_path: Path, capsys: Cap) -> None:
    write_verl_real(tmp_path / "a" / "metrics.jsonl", val_every=10)
    write_verl_real(tmp_path / "b" / "metrics.jsonl", val_every=1000, seed=4)  # b: the step-0 validation only
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("col "))
    table = [line.split() for line in lines[start + 1 :] if not line.startswith(("a alerts", "b alerts"))]
    assert len(table) == 40
    assert [r[0] for r in table[1::2]] == ["b"] * 20 and [r[1] for r in table[0::2]] == ["a"] * 20
    assert "val/reward@1" in [r[0] for r in table]
    val = next(i for i, r in enumerate(table) if r[0] == "val/reward@1")
    assert table[val + 1][:3] == ["b", table[val + 1][1], table[val + 1][1]]  # one value: first == last


# ---------------------------------------------------------------------------------- 5. csv and md carry every key
def _jsonl_keys(path: Path, capsys: Cap, *extra: str) -> list[str]:
    _, out, _ = run_cli(["tail", str(path), "-n", "0", "--format", "jsonl", *extra], capsys)
    keys: dict[str, None] = {}
    for line in out.splitlines():
        keys.update(dict.fromkeys(json.loads(line)))
    return list(keys)


def _csv_head(path: Path, capsys: Cap, *extra: str) -> list[str]:
    rc, out, err = run_cli(["tail", str(path), "-n", "0", "--format", "csv", *extra], capsys)
    assert rc == 0 and err == ""
    return next(csv.reader(io.StringIO(out)))


def _md_head(path: Path, capsys: Cap) -> list[str]:
    rc, out, _ = run_cli(["tail", str(path), "-n", "0", "--format", "md"], capsys)
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("| "))
    return [c.strip() for c in line.strip("|").split(" | ")]


@pytest.mark.parametrize(
    ("write", "dropped"),
    [(lambda d: write_trl_state(d / "trl", steps=6, eval_every=3), ["eval_runtime", "eval_samples_per_second"]),
     (lambda d: write_verl(d / "verl" / "metrics.jsonl"), ["training/global_step"]),
     (lambda d: write_tinker(d / "tk"), ["progress/batch"]),
     (lambda d: write_rows(d / "g" / "metrics.jsonl", [{"step": s, "ts": 1.7e9 + s, "loss": 1 / (s + 1)}
                                                       for s in range(3)]), ["ts"])],
    ids=["trl", "verl", "tinker", "ts"],
)
def test_csv_and_md_carry_every_key_jsonl_carries(tmp_path: Path, capsys: Cap, write: Any, dropped: list[str]) -> None:
    write(tmp_path)
    keys = _jsonl_keys(tmp_path, capsys)
    head = _csv_head(tmp_path, capsys)
    assert set(dropped) <= set(head)
    assert sorted(head) == sorted(keys)
    md = _md_head(tmp_path, capsys)
    assert len(md) == len(head) - 2 and len(set(md)) == len(md)  # every key but run and arm, headed apart
    # the table's own columns first, in its order; the keys it hides after them
    fol = Follower([tmp_path])
    fol.scan()
    fol.finish()
    ((schema, group),) = by_schema(list(fol.stores.values()))
    shown = [c.key for c in layout(group, schema)]
    assert head[2 : 2 + len(shown)] == shown and set(dropped) <= set(head[2 + len(shown) :])


def test_columns_still_narrow_csv_and_jsonl_alike(tmp_path: Path, capsys: Cap) -> None:
    write_trl_state(tmp_path / "trl", steps=6, eval_every=3)
    assert _csv_head(tmp_path, capsys, "--columns", "loss") == ["run", "arm", "step", "loss"]
    assert sorted(_jsonl_keys(tmp_path, capsys, "--columns", "loss")) == ["arm", "loss", "run", "step"]
    assert _csv_head(tmp_path, capsys, "--columns", "eval_run*") == ["run", "arm", "step", "eval_runtime"]


def test_legend_of_a_directory_of_several_trainers_has_one_legend_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each trainer's runs get their own legend, as tail and the app lay each out (not the first run's for all)."""
    write_verl(tmp_path / "a_verl" / "grpo.jsonl")
    write_tinker(tmp_path / "b_tinker")
    write_rows(tmp_path / "c_plain" / "run.jsonl", [{"step": i, "my_metric": 0.5 + i} for i in range(5)])
    rc, out, _ = run_cli(["legend", str(tmp_path)], capsys)
    assert rc == 0
    heads = [line for line in out.splitlines() if line.endswith(":") and " columns" in line]
    assert [h.split()[0] for h in heads] == ["verl", "tinker", "generic"], heads
    assert "a_verl/grpo.jsonl" in heads[0] and "c_plain/run.jsonl" in heads[2]
    verl, tinker, plain = out.split("\n\n")
    assert "mfu" in verl and "mfu" not in tinker  # verl's own column, in its own legend only
    assert "my_metric" in plain and "my_metric" not in verl
    # one trainer's runs: one legend, titled as before
    rc, out, _ = run_cli(["legend", str(tmp_path / "a_verl")], capsys)
    assert rc == 0 and out.startswith("verl columns:\n")


def test_the_demo_without_dir_leaves_no_files_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `steptable demo` left a /tmp/steptable-demo-* directory (2000 steps x 3 arms by default); --dir keeps."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rc, out, err = run_cli(["demo", "--stdout", "--steps", "3", "--interval", "0"], capsys)
    assert rc == 0 and "rew" in out
    assert list(tmp_path.glob("steptable-demo-*")) == []
    assert "was temporary and is removed with its files (those named above too); --dir DIR keeps the run" in err
    kept = tmp_path / "kept"
    rc, _, _ = run_cli(["demo", "--stdout", "--steps", "3", "--interval", "0", "--dir", str(kept)], capsys)
    assert rc == 0 and list(kept.rglob("metrics.jsonl"))
