"""Ray Tune trial directories read as runs: ``result.json`` (JSONL, step ``training_iteration``), one run per trial,
``params.json`` as the config, the trial's ``progress.csv`` and TensorBoard events not read as runs of their own;
live growth and damaged copies. Every file is written by a real ``tune.Tuner`` run."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from steptable.ingest.files.follow import Follower
from tests.helpers import run_cli
from tests.ingest.writers import RAY_STEPS, read_once, rows_of

pytest.importorskip("ray.tune")


def _trial(exp: Path, lr: str) -> Path:
    (path,) = exp.glob(f"trainable_*lr={lr}*")
    return path


def test_one_run_per_trial_config_from_params(ray_trials: Path) -> None:
    f = read_once(ray_trials)
    stores = sorted(f.stores.values(), key=lambda s: s.arm)
    assert [s.kind for s in stores] == ["jsonl", "jsonl"]  # (not progress.csv, not the events: the same rows)
    a = stores[0]
    assert a.arm == _trial(ray_trials, "0.1").name and a.path.name == "result.json"
    assert list(a.steps) == list(range(1, RAY_STEPS + 1)) and a.step_key == "training_iteration"
    rows = rows_of(a)
    assert [r["loss"] for r in rows] == pytest.approx([1.0 / (i + 1) for i in range(RAY_STEPS)])
    assert math.isnan(rows[1]["x"]) and rows[2]["eval/acc"] == pytest.approx(0.2)
    assert a.meta["config"] == {"lr": 0.1} and a.meta["config_path"].name == "params.json"
    assert stores[1].meta["config"] == {"lr": 0.2} and not a.bad and not stores[1].bad


def _copy(trial: Path, dst: Path, lines: int) -> tuple[Path, list[bytes]]:
    """The trial directory with the first ``lines`` lines of its result.json; returns that file and all its lines."""
    shutil.copytree(trial, dst)
    result = dst / "result.json"
    every = result.read_bytes().splitlines(keepends=True)
    result.write_bytes(b"".join(every[:lines]))
    return result, every


def test_followed_live(ray_trials: Path, tmp_path: Path) -> None:
    result, every = _copy(_trial(ray_trials, "0.1"), tmp_path / "trial", 2)
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    assert list(store.steps) == [1, 2]
    with open(result, "ab") as fh:
        fh.write(every[2] + every[3][:40])  # a row, and one still being written
    f.scan()
    assert list(store.steps) == [1, 2, 3] and not store.bad
    with open(result, "ab") as fh:
        fh.write(b"".join(every[3:])[40:])
    f.scan()
    assert list(store.steps) == list(range(1, RAY_STEPS + 1)) and not store.bad


def test_damaged_copy_reported_with_position_good_rows_kept(ray_trials: Path, tmp_path: Path) -> None:
    result, every = _copy(_trial(ray_trials, "0.2"), tmp_path / "trial", RAY_STEPS)
    damaged = list(every)
    damaged[1] = every[1][: len(every[1]) // 2] + b"\n"  # a row cut by a crash
    damaged[3] = b"\x00" * 30 + b"\xff\xfe not json\n"
    result.write_bytes(b"".join(damaged))
    (store,) = read_once(tmp_path).stores.values()
    assert list(store.steps) == [1, 3, 5]
    assert [r["loss"] for r in rows_of(store)] == pytest.approx([1.0, 1 / 3, 1 / 5])
    assert sorted({b.lineno for b in store.bad}) == [2, 4]
    assert all(b.path.endswith("result.json") for b in store.bad)


def test_a_result_json_without_params_is_no_run(ray_trials: Path, tmp_path: Path) -> None:
    """Elsewhere a ``result.json`` is often one JSON document: only a trial's (params.json beside it) is read."""
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "result.json").write_text(json.dumps({"acc": 0.9, "f1": 0.8}, indent=2))
    assert read_once(tmp_path).stores == {}


def test_tail_and_summary_find_the_trials(ray_trials: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(ray_trials)], capsys)
    assert code == 0, err
    recs = [json.loads(line) for line in out.splitlines()]
    assert len(recs) == 2 * RAY_STEPS and {r["arm"] for r in recs} == {
        _trial(ray_trials, "0.1").name, _trial(ray_trials, "0.2").name}
    assert sorted({r["training_iteration"] for r in recs}) == list(range(1, RAY_STEPS + 1))
    code, out, err = run_cli(["summary", str(ray_trials)], capsys)
    assert code == 0, err
    assert out.count(f"steps 1-{RAY_STEPS}") == 2
