"""A store read under a projection (RunStore's ``keep``) holds, of the keys it keeps, exactly what a store of every
key holds: the same rows in the same places (resumes, late rows merged in, rows out of order, nulls, NaN, text),
the same keys in the same order; a key it leaves out holds no values and reads as absent."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, RunStore
from tests.helpers import grpo_rows, write_rows
from tests.trainer_logs import write_all


def _same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _read(root: Path, keep: Any) -> dict[str, RunStore]:
    f = Follower([root], keep=keep)
    f.scan()
    f.finish()
    return f.stores


def _hard_rows() -> list[dict[str, Any]]:
    """Resumes (a restart repeating most metrics), late rows of an earlier step (an asynchronous evaluation, merged
    in), a row out of order, nulls and NaN in a left-out key (not measurements: no resume), text, keys that change
    mid-file, one kept key that only appears late."""
    rng = random.Random(5)
    rows: list[dict[str, Any]] = []
    for s in range(200):
        r: dict[str, Any] = {"step": s, "loss": rng.random(), "aux": rng.random() if s % 3 else None,
                             "tag": rng.choice("ab"), "gone_num": s * 2}
        if s >= 120:
            r["late_loss"] = rng.random()  # kept, first seen late
            r["new_metric"] = float("nan") if s % 5 == 0 else rng.random()  # left out, first seen late
            del r["gone_num"]  # a key that stops
        rows.append(r)
    rows += [{"step": 50, "eval/acc": 0.5}]  # a late evaluation: merged into step 50
    rows += [{"step": 150, "aux": None, "tag": "c"}]  # nulls only: not a resume
    rows += [{"step": s, "loss": rng.random(), "aux": rng.random(), "tag": "r"} for s in range(160, 230)]  # resume
    rows += [{"step": 300, "loss": 1.0}, {"step": 250, "loss": 0.5, "aux": 2.0}]  # out of order: inserted
    return rows


def _trees(tmp: Path) -> list[Path]:
    write_rows(tmp / "hard" / "metrics.jsonl", _hard_rows())
    write_rows(tmp / "resumed" / "metrics.jsonl", grpo_rows(range(300)) + grpo_rows(range(200, 260), seed=1))
    (tmp / "mixed").mkdir()  # non-finite spellings, and a left-out column that turns to text
    (tmp / "mixed" / "metrics.jsonl").write_text("".join(
        f'{{"step": {s}, "loss": {["NaN", "1.5", "null", "Infinity"][s % 4]}, "x": '
        f'{json.dumps("t" if s == 30 else s)}}}\n' for s in range(60)))
    trainers = write_all(tmp / "trainers")
    return [tmp / "hard", tmp / "resumed", tmp / "mixed", *trainers.values()]


@pytest.mark.parametrize("kept", [("loss", "late_loss"), ("loss",), ("reward", "x")])
def test_kept_keys_hold_what_a_store_of_every_key_holds(tmp_path: Path, kept: tuple[str, ...]) -> None:
    projected_runs = 0
    for root in _trees(tmp_path / "-".join(kept)):
        whole = _read(root, None)
        projected = _read(root, lambda k: k == "step" or k in kept)
        assert whole.keys() == projected.keys()
        for name, w in whole.items():
            p = projected[name]
            assert p.keys == w.keys, root  # every key, in its place
            assert list(p.steps) == list(w.steps) and p.resumes == w.resumes, root
            held = set(p.held_keys())
            if held == set(w.keys):  # (record formats and HF trainer states store every key)
                continue
            assert held == {k for k in w.keys if k == "step" or k in kept}
            projected_runs += 1
            for i in range(len(w)):
                want = {k: v for k, v in w.row(i).items() if k == "step" or k in kept}
                got = p.row(i)
                assert got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want), (root, i)
            for k in w.keys:
                if k not in p.held_keys():
                    assert p.first_cell(k) is None and set(p.cells(k)) <= {None}
    assert projected_runs >= 4


def test_a_left_out_key_is_kept_from_when_a_reader_asks(tmp_path: Path) -> None:
    write_rows(tmp_path / "run" / "metrics.jsonl", grpo_rows(range(10)))
    f = Follower([tmp_path], keep=lambda k: k in ("step", "loss"))
    f.scan()
    (store,) = f.stores.values()
    assert "kl" in store.keys and "kl" not in store.held_keys()
    with store.lock:
        assert sorted(store.keep_every_key()) == ["grad_norm", "kl", "reward"]
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": 10, "loss": 0.1, "kl": 0.02, "reward": 3}])
    f.scan()
    assert store.held_keys() == store.keys
    assert store.cells("kl")[:10] == [None] * 10  # (not held then: absent)
    assert store.value(10, "kl") == 0.02 and store.value(10, "reward") == 3  # (an integer column stays one)


def test_a_csv_log_stores_every_key(tmp_path: Path) -> None:
    """A CSV that is rewritten from the top (SB3, Lightning adding a key) is settled by comparing and copying whole
    stored rows: it is never read under a projection."""
    path = tmp_path / "run" / "progress.csv"
    path.parent.mkdir()
    path.write_text("step,loss,kl\n" + "".join(f"{s},{s / 10},{s % 3}\n" for s in range(20)))
    (store,) = _read(tmp_path, lambda k: k in ("step", "loss")).values()
    assert store.kind == "csv" and store.held_keys() == store.keys == ["step", "loss", "kl"]
