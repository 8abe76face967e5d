"""TensorBoard steps read in bulk (steptable.ingest.readers.tbsteps) read the same rows and report the same damage
as the record walk, on event files written by torch's SummaryWriter: steps whose varint grows a byte, tags of
several lengths, a layout that changes, a tag order that swaps, damaged copies, a file read as it grows, with and
without google-crc32c."""

from __future__ import annotations

import functools
import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.follow import Follower
from steptable.ingest.readers import tbsteps, tensorboard
from tests.ingest.writers import event_file, only, read_once, rows_of, same

pytest.importorskip("tensorboard")

STEPS = 300  # (the step varint grows from 1 to 2 bytes at 128)


def _wide_run(logdir: Path, steps: int = STEPS, swap_at: int | None = None, extra_at: int | None = None) -> None:
    """Tags of several lengths (one not ASCII), NaN and inf among the values; ``swap_at``: from that step on, two
    tags of one length are written in the other order; ``extra_at``: that step logs one more tag."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(1)
    w = SummaryWriter(str(logdir), max_queue=100_000, flush_secs=3600)
    tags = ["train/loss", "train/reward", "x", "grp/métrique", "eval/aa", "eval/bb"]
    for s in range(steps):
        order = list(tags)
        if swap_at is not None and s >= swap_at:
            order[-2:] = order[-1:-3:-1]
        for t in order:
            v = rng.gauss(0, 1) * 10 ** rng.randint(-3, 3)
            if s % 37 == 5 and t == "x":
                v = math.nan
            elif s % 41 == 7 and t == "train/reward":
                v = -math.inf
            w.add_scalar(t, v, s)
        if s == extra_at:
            w.add_scalar("eval/once", 1.5, s)
    w.close()


def _read(root: Path, monkeypatch: pytest.MonkeyPatch, bulk: bool) -> tuple[list[dict[str, Any]], list[str], int]:
    """(rows, problems, runs read in bulk) of a one-shot read of ``root``."""
    runs = []
    read = tbsteps.Layout.read

    def counted(self: tbsteps.Layout, *args: Any) -> Any:
        got = read(self, *args)
        runs.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(tbsteps.Layout, "read", counted)
        m.setattr(tensorboard, "EventParser", functools.partial(tensorboard.EventParser, bulk=bulk))
        store = only(read_once(root))
    return rows_of(store), [b.reason for b in store.bad], sum(runs)


def _record_at(data: bytes | bytearray, at: int) -> tuple[int, int]:
    """(start, end) of the record holding byte ``at``, found by walking the records' lengths from the start."""
    i = 0
    while True:
        end = i + 16 + int.from_bytes(data[i : i + 8], "little")
        if end > at:
            return i, end
        i = end


def _same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return len(a) == len(b) and all(x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
                                    for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("case", ["plain", "swap", "extra"])
def test_bulk_reads_the_rows_the_walk_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    _wide_run(tmp_path / "run", swap_at=200 if case == "swap" else None, extra_at=150 if case == "extra" else None)
    walk, walk_bad, _ = _read(tmp_path, monkeypatch, bulk=False)
    got, bad, runs = _read(tmp_path, monkeypatch, bulk=True)
    assert runs >= 2  # (1-byte steps, then 2-byte steps: the bulk path is what was read)
    assert not bad and not walk_bad
    assert [r["step"] for r in got] == list(range(STEPS))
    assert _same_rows(got, walk)
    if case == "swap":  # a tag order swapped mid-run: values stay under their own tags
        assert got[250]["eval/aa"] == walk[250]["eval/aa"] and got[250]["eval/bb"] == walk[250]["eval/bb"]
    if case == "extra":
        assert got[150]["eval/once"] == 1.5 and "eval/once" not in got[151]


@pytest.mark.parametrize("crc", ["google", "stdlib"])
@pytest.mark.parametrize("damage", ["value", "tag", "checksum", "length", "wall", "cut"])
def test_damage_inside_a_run_reported_as_the_walk_reports_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              damage: str, crc: str) -> None:
    if crc == "stdlib":
        monkeypatch.setattr(tensorboard, "_crc32c", lambda: tensorboard.crc32c_py)
    src = tmp_path / "src"
    _wide_run(src)
    data = bytearray(event_file(src).read_bytes())
    at = data.find(b"eval/aa", len(data) * 2 // 3)  # a record of a step in the middle of a run
    head, end = _record_at(data, at)
    if damage == "value":
        data[end - 6] ^= 0x10
    elif damage == "tag":
        data[at + 2] ^= 0x01
    elif damage == "checksum":
        data[end - 1] ^= 0x80
    elif damage == "length":
        data[head] ^= 0x02
    elif damage == "wall":
        data[head + 14] ^= 0x01
    else:
        data = data[: end - 3]
    dst = tmp_path / "bad" / "run" / event_file(src).name
    dst.parent.mkdir(parents=True)
    dst.write_bytes(bytes(data))
    walk, walk_bad, _ = _read(tmp_path / "bad", monkeypatch, bulk=False)
    got, bad, runs = _read(tmp_path / "bad", monkeypatch, bulk=True)
    assert runs >= 2
    assert bad == walk_bad and bad and all(r.startswith("byte ") for r in bad), (bad, walk_bad)
    assert _same_rows(got, walk)
    assert len(got) >= STEPS * 2 // 3 - 1


def test_without_google_crc32c_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _wide_run(tmp_path / "run")
    want, _, _ = _read(tmp_path, monkeypatch, bulk=True)
    monkeypatch.setattr(tensorboard, "_crc32c", lambda: tensorboard.crc32c_py)
    got, bad, runs = _read(tmp_path, monkeypatch, bulk=True)
    assert runs >= 2 and not bad and _same_rows(got, want)


def test_growing_file_in_pieces_reads_the_one_shot_rows(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _wide_run(src, steps=160)
    data = event_file(src).read_bytes()
    want = rows_of(only(read_once(src)))
    dst = tmp_path / "live" / "exp" / event_file(src).name
    dst.parent.mkdir(parents=True)
    f = Follower([tmp_path / "live"])
    rng = random.Random(3)
    cut = 0
    with open(dst, "wb") as fh:
        while cut < len(data):  # pieces of a step's records to several steps, most cut inside a record
            nxt = min(len(data), cut + rng.randint(1, 1500))
            fh.write(data[cut:nxt])
            fh.flush()
            cut = nxt
            f.scan()
            if f.stores:
                assert not only(f).bad and not f.errors
    store = only(f)
    assert store.generation == 0
    assert _same_rows(rows_of(store), want)


def test_a_tag_named_step_is_left_to_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "run"))
    for s in range(20):
        w.add_scalar("loss", 1.0 / (s + 1), s)
        w.add_scalar("step", float(s * 10), s)
    w.close()
    walk, _, _ = _read(tmp_path, monkeypatch, bulk=False)
    got, bad, runs = _read(tmp_path, monkeypatch, bulk=True)
    assert runs == 0 and not bad and _same_rows(got, walk)


def test_steps_laid_out_each_their_own_way_then_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tags that change every step (no layout repeats: the walk reads them, and tries less and less often), then
    steps alike (read in bulk again)."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "run"), max_queue=100_000, flush_secs=3600)
    for s in range(400):
        for k in range(5):
            w.add_scalar(f"m{(s * 3 + k) % 7}/v{k}" if s < 150 else f"stable/v{k}", float(s * 10 + k), s)
    w.close()
    walk, _, _ = _read(tmp_path, monkeypatch, bulk=False)
    got, bad, runs = _read(tmp_path, monkeypatch, bulk=True)
    assert runs >= 1 and not bad and _same_rows(got, walk)
    assert got[399]["stable/v4"] == 3994.0 and got[10]["m3/v1"] == 101.0
