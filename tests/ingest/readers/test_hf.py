"""steptable.ingest.readers.hf: HF Trainer / TRL trainer_state.json: train, eval and summary entries told
apart, the newest checkpoint read whole, a half-written one retried, entries it cannot use reported once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, load
from steptable.ingest.readers.hf import classify_log_entry
from tests.ingest.helpers import trainer_state


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


