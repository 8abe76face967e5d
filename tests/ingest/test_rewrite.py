"""steptable.ingest.rewrite: a followed CSV that its trainer writes again from the top (Lightning's CSVLogger
truncates and writes it whole, SB3's CSVOutputFormat writes over itself) when a key appears. Read in the middle of
that rewrite (the tests poll at the exact moment, from inside the library's own write), the rows shown stay as they
are; once written, the new column arrives on them. A file that really is shorter or another file still replaces
them."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.source as source_mod
from steptable.ingest import Follower
from steptable.ingest.rewrite import QUIET_S
from tests.ingest.helpers import follower_store


def _lightning(root: Path, rows: int) -> Any:
    """A Lightning CSVLogger (saving only when asked) that has saved ``rows`` training rows."""
    from lightning.fabric.loggers import CSVLogger

    logger = CSVLogger(str(root), name="exp", version=0, flush_logs_every_n_steps=10**9)
    for s in range(rows):
        logger.log_metrics({"train_loss": round(1.0 / (s + 1), 6)}, step=s)
    logger.save()
    return logger


def _cut_dict_writer(monkeypatch: pytest.MonkeyPatch, at: int, then: Callable[[], None]) -> None:
    """Lightning's rewrite (csv.DictWriter.writerows of every row) flushed after ``at`` rows, ``then`` called there."""
    real = csv.DictWriter

    class Cut(real):  # type: ignore[valid-type,misc]
        def __init__(self, f: Any, fieldnames: Any, **kw: Any) -> None:
            super().__init__(f, fieldnames, **kw)
            self.file = f

        def writerows(self, rows: Any) -> None:
            rows = list(rows)
            if len(rows) <= at:  # (the rows of the save itself, appended after the rewrite)
                super().writerows(rows)
                return
            super().writerows(rows[:at])
            self.file.flush()
            then()
            super().writerows(rows[at:])

    monkeypatch.setattr(csv, "DictWriter", Cut)


def test_lightning_rewrite_read_midway_keeps_the_rows_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logger = _lightning(tmp_path, 300)
    fo = Follower([tmp_path])
    fo.scan()
    store = follower_store(fo)
    assert len(store) == 300
    midway: list[tuple[int, int]] = []

    def poll() -> None:
        fo.scan()
        midway.append((len(store), store.generation))

    _cut_dict_writer(monkeypatch, 150, poll)
    logger.log_metrics({"train_loss": 0.25, "val_loss": 0.5}, step=300)
    logger.save()  # val_loss is new: Lightning truncates metrics.csv and writes every row again
    monkeypatch.undo()
    fo.scan()
    assert midway == [(300, 0)]  # read with half its rows written: nothing shown changed
    assert len(store) == 301 and store.generation == 0 and not fo.errors
    assert store.column("val_loss")[-1] == 0.5 and store.column("train_loss")[299] == round(1 / 300, 6)


def test_tail_f_prints_no_reset_for_a_lightning_rewrite_read_midway(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What `steptable tail -f` printed for it: "file reset", then the whole history again."""
    from tests.cli.helpers import emit, follow_tail

    logger = _lightning(tmp_path, 40)
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl", "-n", "0"])
    emit(follower, tail)
    _cut_dict_writer(monkeypatch, 20, lambda: emit(follower, tail))
    logger.log_metrics({"train_loss": 0.25, "val_loss": 0.5}, step=40)
    logger.save()
    monkeypatch.undo()
    emit(follower, tail)
    lines = out.getvalue().splitlines()
    assert len(lines) == 41 and "reset" not in out.getvalue(), lines[-3:]
    assert json.loads(lines[-1])["val_loss"] == 0.5


def test_sb3_rewrite_in_place_read_midway_keeps_the_rows_shown(tmp_path: Path) -> None:
    """SB3 writes the new header and every row over the old bytes: read midway, the file is new lines, one line
    cut where they meet the old ones, then old lines. None of that is shown, nor said as a bad line."""
    from stable_baselines3.common.logger import CSVOutputFormat

    (tmp_path / "PPO_1").mkdir()
    fmt = CSVOutputFormat(str(tmp_path / "PPO_1" / "progress.csv"))
    for it in range(1, 400):
        fmt.write({"time/iterations": it, "time/total_timesteps": 2048 * it, "rollout/ep_rew_mean": it / 8}, {})
    fo = Follower([tmp_path])
    fo.scan()
    store = follower_store(fo)
    midway: list[tuple[int, int]] = []
    real = fmt.file

    class Cut:  # SB3's file, flushed and polled after 200 lines of the rewrite
        def __init__(self) -> None:
            self.lines = 0

        def write(self, s: str) -> None:
            real.write(s)
            self.lines += s.count("\n")
            if s == "\n" and self.lines == 200:
                real.flush()
                fo.scan()
                midway.append((len(store), store.generation))

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    fmt.file = Cut()
    fmt.write({"time/iterations": 400, "time/total_timesteps": 819200, "rollout/ep_rew_mean": 50.0,
               "train/loss": 0.5}, {})
    fmt.file = real
    fmt.close()
    fo.scan()
    assert midway == [(399, 0)]
    assert len(store) == 400 and store.generation == 0 and not fo.errors
    assert list(store.column("rollout/ep_rew_mean"))[:399] == [it / 8 for it in range(1, 400)]
    assert store.column("train/loss")[-1] == 0.5 and list(store.steps)[-1] == 819200


def _clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(source_mod, "_now", lambda: now[0])
    return now


@pytest.mark.filterwarnings("ignore:Experiment logs directory")  # (Lightning's, on a version directory used again)
def test_a_file_written_again_shorter_replaces_the_rows_once_quiet(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A deterministic run started again at the same path: the same first rows, fewer of them. Shown only once the
    file has not grown for QUIET_S (a rewrite being written grows); a follower's finish applies it at once."""
    now = _clock(monkeypatch)
    _lightning(tmp_path, 10)
    fo = Follower([tmp_path])
    fo.scan()
    store = follower_store(fo)
    _lightning(tmp_path, 4)  # (Lightning deletes the old metrics.csv and writes a new one)
    fo.scan()
    assert len(store) == 10 and store.generation == 0
    now[0] += QUIET_S / 2
    fo.scan()
    assert len(store) == 10
    now[0] += QUIET_S
    fo.scan()
    assert list(store.steps) == [0, 1, 2, 3] and store.generation == 1
    _lightning(tmp_path, 2)
    fo.scan()
    assert len(store) == 4
    fo.finish()
    assert list(store.steps) == [0, 1]


def test_a_file_written_over_in_place_with_other_rows_replaces_them_a_poll_later(tmp_path: Path) -> None:
    """Other rows written over the file without truncating it: held one poll (an in-place rewrite read midway
    looks like that), then shown."""
    from stable_baselines3.common.logger import CSVOutputFormat

    path = tmp_path / "PPO_1" / "progress.csv"
    path.parent.mkdir()
    fmt = CSVOutputFormat(str(path))
    for it in range(1, 6):
        fmt.write({"time/total_timesteps": 100 * it, "loss": 1.0}, {})
    fmt.close()
    fo = Follower([tmp_path])
    fo.scan()
    store = follower_store(fo)
    with open(path, "r+") as f:  # (no truncation: as long as the old content, other values)
        f.write(path.read_text().replace("1.0", "2.0"))
    fo.scan()
    assert list(store.column("loss")) == [1.0] * 5
    fo.scan()
    assert list(store.column("loss")) == [2.0] * 5 and store.generation == 1
