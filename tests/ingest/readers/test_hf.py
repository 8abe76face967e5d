"""steptable.ingest.readers.hf: HF Trainer / TRL trainer_state.json: train, eval and summary entries told
apart, the newest checkpoint read whole, a half-written one retried, entries it cannot use reported once."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, load
from steptable.ingest.readers.hf import classify_log_entry


def test_trainer_state_entries_it_cannot_use_are_reported_once(tmp_path: Path) -> None:
    """Entries that are not objects are skipped, an entry without an integer step is kept under the step before it
    (as in JSONL), and each is reported once, though the Trainer rewrites the file at every checkpoint."""
    run = tmp_path / "runs" / "hf"
    run.mkdir(parents=True)
    path = run / "trainer_state.json"
    history: list[Any] = [1, "x", None, {"step": 3, "loss": 0.5}, {"loss": 0.2}, {"step": "4", "loss": 0.1},
                          {"step": 5.5, "loss": 1.0}]
    path.write_text(json.dumps({"log_history": history}))
    f = Follower([tmp_path / "runs"])
    f.scan()
    assert f.errors == [
        f"{path}: log_history[0]: not an object (int); skipped",
        f"{path}: log_history[1]: not an object (str); skipped",
        f"{path}: log_history[2]: not an object (NoneType); skipped",
        f"{path}: log_history[4]: step missing: entry kept under step 3",
        f"{path}: log_history[6]: step not an integer (5.5): entry kept under step 4",
    ]
    store = f.stores["hf/trainer_state.json"]
    assert list(store.steps) == [3, 4] and store.bad_count == 5
    history.append({"step": 6, "loss": 0.05})
    path.write_text(json.dumps({"log_history": history}))
    f.scan()
    assert len(f.errors) == 5 and store.bad_count == 5 and list(store.steps) == [3, 4, 6]


def trainer_state(path: Path, steps: int, nan: bool = True) -> None:
    history: list[dict[str, Any]] = []
    for s in range(1, steps + 1):
        history.append({"loss": 1.0 / s, "grad_norm": float("nan") if nan and s == 2 else 0.5,
                        "learning_rate": 1e-5, "epoch": s / 10, "step": s})
        if s % 2 == 0:
            history.append({"eval_loss": 0.9, "eval_runtime": 1.0, "epoch": s / 10, "step": s})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"global_step": steps, "log_history": history}, indent=2))


def test_trainer_state_newest_checkpoint_reread_whole(tmp_path: Path) -> None:
    run = tmp_path / "outputs" / "qwen-grpo"
    trainer_state(run / "checkpoint-2" / "trainer_state.json", 2)
    later = time.time() + 5
    trainer_state(run / "checkpoint-4" / "trainer_state.json", 4)
    os.utime(run / "checkpoint-4" / "trainer_state.json", (later, later))
    f = Follower([tmp_path / "outputs"])
    f.scan()
    store = f.stores["qwen-grpo/trainer_state.json"]
    assert store.kind == "trainer_state" and store.arm == "qwen-grpo"
    assert list(store.steps) == [1, 2, 3, 4] and store.path.parent.name == "checkpoint-4"
    assert store.row(1)["eval_loss"] == 0.9 and math.isnan(store.row(1)["grad_norm"])  # bare NaN, merged eval
    trainer_state(run / "checkpoint-6" / "trainer_state.json", 6)
    os.utime(run / "checkpoint-6" / "trainer_state.json", (later + 5, later + 5))
    gen = store.generation
    assert f.scan() == {"qwen-grpo/trainer_state.json"}
    assert list(store.steps) == list(range(1, 7)) and store.bad == []
    # the new checkpoint's history extends the last one: only its new entries are added (tail -f reprinted the whole
    # history, and --alerts-only repeated every alert, at each checkpoint)
    assert store.generation == gen and store.row(1)["eval_loss"] == 0.9 and math.isnan(store.row(1)["grad_norm"])
    # a shorter history modified later (a restart in the same directory, a copy that reordered times): the furthest
    # state stays shown, and the reader is told which file holds less
    trainer_state(run / "checkpoint-8" / "trainer_state.json", 3)
    os.utime(run / "checkpoint-8" / "trainer_state.json", (later + 10, later + 10))
    f.scan()
    assert list(store.steps) == list(range(1, 7)) and store.generation == gen
    assert any("checkpoint-8" in e and "holds less" in e for e in f.errors)


def test_a_half_written_newest_trainer_state_shows_the_older_one_while_following(tmp_path: Path) -> None:
    run = tmp_path / "run"
    trainer_state(run / "checkpoint-3" / "trainer_state.json", 3)
    newest = run / "checkpoint-5" / "trainer_state.json"
    trainer_state(newest, 5)
    newest.write_text(newest.read_text()[:300])  # the Trainer died while saving
    later = time.time() + 5
    os.utime(newest, (later, later))
    f = Follower([tmp_path])
    for _ in range(3):  # a follower polls: the same bytes failing twice are reported, then the older state shown
        f.scan()
    store = f.stores["run/trainer_state.json"]
    assert list(store.steps) == [1, 2, 3] and any("showing the older" in e for e in f.errors)


def test_trainer_state_half_written_is_retried(tmp_path: Path) -> None:
    path = tmp_path / "run" / "checkpoint-1" / "trainer_state.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"log_history": [{"loss": 1.0, "st')
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["run/trainer_state.json"]
    assert len(store) == 0 and f.errors == []
    f.scan()  # still broken, unchanged: now it is reported, once
    f.scan()
    assert len(f.errors) == 1 and f.errors[0].startswith(f"{path}: invalid JSON")
    trainer_state(path, 3)
    f.scan()
    assert list(store.steps) == [1, 2, 3]


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        ({"loss": 0.1, "grad_norm": 1.0, "learning_rate": 1e-5, "epoch": 0.1, "step": 10}, "train"),
        ({"eval_loss": 0.2, "eval_runtime": 3.0, "eval_samples_per_second": 9.1, "epoch": 0.1, "step": 10}, "eval"),
        ({"train_runtime": 99.0, "train_loss": 0.1, "total_flos": 1e12, "epoch": 1.0, "step": 100}, "summary"),
        ({"train/loss": 0.1, "train/reward": 0.5, "step": 3}, "train"),
        ({"eval/reward": 0.4, "step": 3}, "eval"),
        ({"test_loss": 0.3, "step": 9}, "eval"),
        ({"step": 5, "epoch": 1.0}, "train"),
    ],
)
def test_classify_log_entry(entry: dict[str, Any], kind: str) -> None:
    assert classify_log_entry(entry) == kind


def test_trainer_state_final_summary_is_run_metadata(every_trainer_log: dict[str, Path]) -> None:

    stores = load([every_trainer_log["trl"]])
    (store,) = stores.values()
    assert "train_runtime" not in store.keys  # not merged into the last step's row
    assert "train_runtime" in store.meta["train_summary"]


def test_the_furthest_checkpoint_wins_over_the_newest_mtime(tmp_path: Path) -> None:
    """States written by transformers' own TrainerState; a copy then makes the older checkpoint the newest file."""
    from transformers.trainer_callback import TrainerState

    run = tmp_path / "out"
    for n in (10, 20):
        state = TrainerState(global_step=n, max_steps=20)
        state.log_history = [{"loss": 1.0 / s, "step": s} for s in range(1, n + 1)]
        (run / f"checkpoint-{n}").mkdir(parents=True)
        state.save_to_json(str(run / f"checkpoint-{n}" / "trainer_state.json"))
    later = time.time() + 5
    os.utime(run / "checkpoint-10" / "trainer_state.json", (later, later))
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    assert list(store.steps) == list(range(1, 21)) and store.path.parent.name == "checkpoint-20"
    notes = [e for e in f.errors if "holds less" in e]
    assert len(notes) == 1 and "checkpoint-10" in notes[0]
    f.scan()
    assert len([e for e in f.errors if "holds less" in e]) == 1  # said once
