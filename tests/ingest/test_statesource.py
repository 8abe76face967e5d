"""The HF trainer_state source: the furthest checkpoint's state file shown, re-read whole when it changes."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

from steptable.ingest import Follower
from tests.ingest.helpers import trainer_state


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
