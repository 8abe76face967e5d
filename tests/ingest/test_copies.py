"""Copies of one training (steptable.ingest.copies): the same rows through several loggers are one run; seeds, even
seeds that share a schedule, and runs of one logger are not."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.copies import SAMPLED, Copies, canonical, same_training
from steptable.ingest.files.follow import Follower
from steptable.ingest.parsed import Parsed
from steptable.ingest.store import RunStore
from tests.helpers import spy_whole_copies
from tests.ingest import writers


def f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def store(run: str, rows: list[dict[str, Any]], kind: str = "jsonl") -> RunStore:
    st = RunStore(run, f"/nonexistent/{run}", kind=kind, arm=run)
    st.add(Parsed(steps=[r["step"] for r in rows], rows=[{k: v for k, v in r.items() if k != "step"} for r in rows]),
           now=math.nan)
    return st


def training(seed: int, steps: int = 20, every: int = 2) -> list[dict[str, Any]]:
    """An HF-like log: a noisy loss, a warmed-up then decayed learning rate, the epoch, an eval every 10 steps."""
    rng = random.Random(seed)
    rows = []
    for s in range(every, steps + 1, every):
        row: dict[str, Any] = {"step": s, "loss": 3.0 - 0.01 * s + rng.gauss(0, 0.05),
                               "learning_rate": 1e-4 * min(s / 6, (steps - s + 1) / (steps - 6)), "epoch": s / 16}
        if s % 10 == 0:
            row["eval_loss"] = 3.0 - 0.01 * s + rng.gauss(0, 0.05)
        rows.append(row)
    return rows


def as_tracker(rows: list[dict[str, Any]], float32: bool = False) -> list[dict[str, Any]]:
    """The rows as transformers' tracker callbacks log them (``train/`` and ``eval/`` prefixes), float32 as
    TensorBoard keeps them."""
    out = []
    for r in rows:
        named = {("step" if k == "step" else k.replace("eval_", "eval/") if k.startswith("eval_") else f"train/{k}"): v
                 for k, v in r.items()}
        out.append({k: (f32(v) if float32 and k != "step" else v) for k, v in named.items()})
    return out


def test_transformers_tracker_names_are_the_trainer_states() -> None:
    assert [canonical(k) for k in ("train/loss", "eval/loss", "test/acc", "loss", "eval_loss", "rollout/x")] == [
        "loss", "eval_loss", "test_acc", "loss", "eval_loss", "rollout/x"]


def test_the_same_rows_in_float32_under_tracker_names_are_one_training() -> None:
    state = store("out/trainer_state.json", training(0), kind="trainer_state")
    tb = store("out/runs/Nov29_16-45-24_host", as_tracker(training(0), float32=True), kind="tensorboard")
    wandb = store("wandb/run-x.wandb", as_tracker(training(0)), kind="wandb")
    assert same_training(state, tb) and same_training(tb, wandb)
    assert Copies().update({s.run: s for s in (state, tb, wandb)}) == {state.run: wandb.run, tb.run: wandb.run}


def test_seeds_are_not_copies_even_where_their_schedules_agree() -> None:
    """Seeds through two loggers (one seed's W&B run beside another's JSONL, as a sweep of mixed loggers has)."""
    a, b = store("a_seed0", training(0)), store("a_seed1", as_tracker(training(1)), kind="wandb")
    assert not same_training(a, b)
    only_schedules = [{k: v for k, v in r.items() if k in ("step", "learning_rate", "epoch")} for r in training(0)]
    a2, b2 = store("x_seed0", only_schedules), store("x_seed1", only_schedules, kind="wandb")
    assert not same_training(a2, b2)  # a warmed-up then decayed rate and the epoch agree across seeds
    assert Copies().update({s.run: s for s in (a, b, a2, b2)}) == {}


def test_one_value_apart_is_another_run() -> None:
    rows = training(0)
    other = [dict(r) for r in rows]
    assert same_training(store("a", rows), store("b", other, kind="csv"))
    other[-1]["loss"] += 1e-4
    assert not same_training(store("a", rows), store("b", other, kind="csv"))


def test_runs_of_one_logger_are_never_copies() -> None:
    """An arm whose change starts at step 100 logs its baseline's rows until then (one seed, one data order)."""
    rows = training(0)
    assert not same_training(store("vanilla", rows), store("routeA", [dict(r) for r in rows]))
    assert Copies().update({"v": store("v", rows), "r": store("r", [dict(r) for r in rows])}) == {}


def test_a_copy_behind_the_other_is_a_copy_while_it_agrees_and_another_run_once_it_does_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    full = training(0, steps=40)
    wandb = store("w", as_tracker(full), kind="wandb")
    state = store("s", full[:10], kind="trainer_state")  # as far as the last checkpoint
    copies = Copies()
    assert copies.update({"w": wandb, "s": state}) == {"s": "w"}
    whole = spy_whole_copies(monkeypatch)  # a run followed on: its new rows are checked, not its history again
    state.add(Parsed(steps=[r["step"] for r in full[10:12]], rows=[
        {k: v for k, v in r.items() if k != "step"} for r in full[10:12]]), now=math.nan)
    assert copies.update({"w": wandb, "s": state}) == {"s": "w"} and whole == []
    # rows replaced by a resume (no row more): checked again
    resumed = store("r", full[:12], kind="csv")
    assert copies.update({"w": wandb, "r": resumed}) == {"r": "w"}
    resumed.add(Parsed(steps=[22, 24], rows=[{"loss": 9.0}, {"loss": 9.5}]), now=math.nan)
    assert len(resumed) == 12 and resumed.resumes and copies.update({"w": wandb, "r": resumed}) == {}
    # a branch that left the common history (another run resumed from a checkpoint of it) is another run from there
    state.add(Parsed(steps=[26, 28], rows=[{"loss": 9.0}, {"loss": 9.5}]), now=math.nan)
    assert copies.update({"w": wandb, "s": state}) == {}


def test_of_copies_that_stop_at_different_steps_the_one_that_goes_furthest_is_kept() -> None:
    """A trainer reporting to TensorBoard, killed and resumed: the first process's event file holds the rows to the
    kill, the resumed one's from the checkpoint on, the trainer state all of them. Each event file is a copy of the
    state, so the three are one training; the first event file (the crashed piece) was kept by kind, the rest of the
    training hidden. The one that goes furthest (then has most rows) is kept; among equals the kind decides."""
    full = training(0, steps=32)
    first = store("runs/a", as_tracker(full[:10], float32=True), kind="tensorboard")
    resumed = store("runs/b", as_tracker(full[8:], float32=True), kind="tensorboard")
    state = store("trainer_state.json", full, kind="trainer_state")
    runs = {"runs/a": first, "runs/b": resumed, "trainer_state.json": state}
    assert Copies(stay=False).update(runs) == {"runs/a": "trainer_state.json", "runs/b": "trainer_state.json"}
    whole = store("runs/c", as_tracker(full, float32=True), kind="tensorboard")  # as far as the state: by kind
    assert Copies(stay=False).update({"runs/c": whole, "trainer_state.json": state}) == {"trainer_state.json": "runs/c"}


def test_copies_need_a_metric_that_went_up_and_down_twice_over_what_they_share() -> None:
    def rows(losses: list[float]) -> list[dict[str, Any]]:
        return [{"step": 2 * i, "loss": v, "learning_rate": 1e-4} for i, v in enumerate(losses)]

    def pair(losses: list[float]) -> bool:
        return same_training(store("a", rows(losses)), store("b", rows(losses), kind="wandb"))

    assert pair([3.0, 2.9, 3.1, 2.8])
    assert not pair([3.0, 2.9, 3.1])  # too few
    assert not pair([3.0, 2.9, 3.1, 3.2])


def test_a_named_file_is_kept_over_its_copies(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("")
    named = RunStore("s.jsonl", str(path), kind="trainer_state", arm="s")
    named.add(Parsed(steps=[r["step"] for r in training(0)], rows=[
        {k: v for k, v in r.items() if k != "step"} for r in training(0)]), now=math.nan)
    wandb = store("w", as_tracker(training(0)), kind="wandb")
    stores = {"s.jsonl": named, "w": wandb}
    assert Copies([str(path), str(tmp_path)]).distinct(stores) == {"s.jsonl": named}  # the file names it
    assert Copies([str(tmp_path)]).distinct(stores) == {"w": wandb}  # (a directory names none of its runs)
    assert Copies().distinct(stores) == {"w": wandb}
    assert Copies().distinct(stores, keep=["w", "s.jsonl"]) == stores  # both named: both kept


def test_long_runs_are_compared_at_sampled_steps_spread_to_the_end() -> None:
    rows = training(0, steps=4 * SAMPLED * 2, every=2)
    a, b = store("a", rows), store("b", [dict(r) for r in rows], kind="wandb")
    assert same_training(a, b)
    c = store("c", [dict(r) for r in rows], kind="csv")
    c.add(Parsed(steps=[rows[-1]["step"] + 2], rows=[{"loss": 1.0}]), now=math.nan)
    b.add(Parsed(steps=[rows[-1]["step"] + 2], rows=[{"loss": 2.0}]), now=math.nan)
    assert not same_training(b, c)  # the last shared step is always compared


def test_a_sweep_compares_only_runs_whose_first_values_meet() -> None:
    runs = {f"r{i}": store(f"r{i}", training(i)) for i in range(300)}
    runs["copy"] = store("copy", as_tracker(training(7)), kind="tensorboard")
    copies = Copies()
    assert copies.update(runs) == {"copy": "r7"}
    assert len(copies._pairs) == 1  # the shared schedule values of 301 runs pair none of them


def test_a_real_trainer_reporting_to_every_tracker_is_one_run_per_training(hf_every_tracker: Path) -> None:
    follower = Follower([hf_every_tracker])
    follower.scan()
    follower.finish()
    kinds = sorted(s.kind for s in follower.stores.values())
    assert kinds == sorted(["wandb", "trackio", "tensorboard", "trainer_state"] * 4)
    kept = Copies().distinct(follower.stores)
    assert sorted((s.kind, s.arm) for s in kept.values()) == [
        ("wandb", f"{arm}_seed{seed}") for arm, seed, _ in sorted(writers.HF_TRAININGS)]
    for arm, seed, _ in writers.HF_TRAININGS:  # each training's four files are copies of its W&B run, of no other
        name = f"{arm}_seed{seed}"
        (w,) = [s for s in kept.values() if s.arm == name]
        copies = [s for s in follower.stores.values() if s.arm == name and s is not w]
        assert len(copies) == 3 and all(same_training(w, c) for c in copies)
        assert not any(same_training(w, s) for s in follower.stores.values() if s.arm != name)


def test_the_run_shown_first_stays_the_one_shown_when_a_better_copy_turns_up() -> None:
    """Followed live: W&B's offline file fills in chunks, after trackio's rows were printed; the rows shown go on
    from trackio (W&B's would print them again), while a fresh read, or a list, keeps W&B."""
    full = as_tracker(training(0, steps=40))
    trackio = store("trackio/p.db#a", full[:8], kind="trackio")
    wandb = RunStore("wandb/run-a.wandb", "/nonexistent/w", kind="wandb", arm="a")
    copies, listed = Copies(), Copies(stay=False)
    assert copies.update({s.run: s for s in (trackio, wandb)}) == listed.update({s.run: s for s in (trackio, wandb)})
    wandb.add(Parsed(steps=[r["step"] for r in full[:15]], rows=[{k: v for k, v in r.items() if k != "step"}
                                                                 for r in full[:15]]), now=math.nan)
    assert copies.update({s.run: s for s in (trackio, wandb)}) == {wandb.run: trackio.run}
    assert Copies().update({s.run: s for s in (trackio, wandb)}) == {trackio.run: wandb.run}
    # a list of runs (the watch's run list, summary --top) keeps the same one whatever order they were read in
    assert listed.update({s.run: s for s in (trackio, wandb)}) == {trackio.run: wandb.run}
