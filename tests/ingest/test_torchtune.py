"""torchtune's ``DiskLogger`` file (``log_<ts>.txt``, lines ``Step N | key:value ...``) read as a run: values, NaN,
a step logged twice, live growth, and damaged copies reported with their line, good rows kept. Every file is written
by torchtune's own ``DiskLogger``."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from steptable.ingest.files.follow import Follower
from tests.helpers import run_cli
from tests.ingest.writers import TUNE_STEPS, read_once, rows_of

pytest.importorskip("torchtune")


def test_rows_values_and_the_arm(torchtune_log: Path) -> None:
    (store,) = read_once(torchtune_log.parent.parent.parent).stores.values()
    assert store.kind == "console" and store.arm == "lora-sft" and store.path == torchtune_log
    assert list(store.steps) == list(range(1, TUNE_STEPS + 1))
    rows = rows_of(store)
    assert [r["loss"] for r in rows] == pytest.approx([1.0 / (i + 1) for i in range(TUNE_STEPS)])
    assert rows[2]["grad_norm"] == 1.0 and rows[0]["lr"] == 2e-5 and math.isnan(rows[1]["x"])
    assert rows[-1]["tokens_per_second_per_gpu"] == 1234.5 and rows[-1]["x"] == 5.0  # (one step, two calls)
    assert not store.bad


def test_followed_live(torchtune_log: Path, tmp_path: Path) -> None:
    every = torchtune_log.read_bytes().splitlines(keepends=True)
    path = tmp_path / "run" / torchtune_log.name
    path.parent.mkdir()
    path.write_bytes(b"".join(every[:2]))
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    assert list(store.steps) == [1, 2]
    with open(path, "ab") as fh:
        fh.write(every[2] + every[3][:12])  # a row, and one still being written ("Step 4 | los")
    f.scan()
    assert list(store.steps) == [1, 2, 3] and not store.bad
    with open(path, "ab") as fh:
        fh.write(b"".join(every[3:])[12:])
    f.scan()
    assert list(store.steps) == list(range(1, TUNE_STEPS + 1)) and not store.bad


def test_damaged_copy_reported_with_position_good_rows_kept(torchtune_log: Path, tmp_path: Path) -> None:
    every = torchtune_log.read_bytes().splitlines(keepends=True)
    damaged = [
        every[0],
        every[1][:20] + every[2],  # line 2 cut by a crash, the next row written after it
        every[3].replace(b"Step 4", b"Step 4\xff"),  # the step no longer an integer
        every[4].replace(b"lr:2e-05", b"lr:"),  # a key without its value
        *every[5:],
    ]
    path = tmp_path / "run" / torchtune_log.name
    path.parent.mkdir()
    shutil.copy(torchtune_log, path)
    path.write_bytes(b"".join(damaged))
    (store,) = read_once(tmp_path).stores.values()
    assert list(store.steps) == [1, 3, 5, 6]
    rows = rows_of(store)
    assert rows[1]["loss"] == pytest.approx(1 / 3) and "lr" not in rows[2] and rows[2]["loss"] == 0.2
    assert [(b.lineno, b.reason.split(":")[0]) for b in store.bad] == [
        (2, "line cut short and continued by the next row"), (3, "step '4\ufffd' not an integer"),
        (4, "'lr' has no value")]


def test_tail_and_summary_find_the_log(torchtune_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = torchtune_log.parent.parent
    code, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(root)], capsys)
    assert code == 0, err
    recs = [json.loads(line) for line in out.splitlines()]
    assert [r["step"] for r in recs] == list(range(1, TUNE_STEPS + 1)) and {r["arm"] for r in recs} == {"lora-sft"}
    code, out, err = run_cli(["summary", str(root)], capsys)
    assert code == 0, err
    assert f"lora-sft: steps 1-{TUNE_STEPS}" in out
