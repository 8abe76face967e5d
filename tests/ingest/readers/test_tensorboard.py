"""TensorBoard event files read as runs: simple_value and scalar tensors, step 0, several files of one run and
damaged copies (live growth: tests/ingest/test_recordsource.py). Every file is written by torch's SummaryWriter or
tensorboard's own writer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.ingest.writers import event_file, only, read_once, rows_of, torch_run

pytest.importorskip("tensorboard")


def _tensor_run(logdir: Path, steps: range) -> None:
    """Scalars as tensors (tf.summary.scalar's form), through tensorboard's own event writer."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    w = EventFileWriter(str(logdir))
    for i in steps:
        value = summary_pb2.Summary.Value(tag="eval/acc", tensor=tensor_util.make_tensor_proto(np.float32(i / 10)))
        w.add_event(event_pb2.Event(step=i, wall_time=1.7e9 + i, summary=summary_pb2.Summary(value=[value])))
    w.close()


def test_simple_values_tags_and_step_zero(tmp_path: Path) -> None:
    torch_run(tmp_path / "runs" / "exp1", range(5))
    store = only(read_once(tmp_path))
    assert store.kind == "tensorboard" and store.arm == "exp1"
    assert list(store.steps) == [0, 1, 2, 3, 4]  # step 0 is not on the wire
    rows = rows_of(store)
    assert [r["train/loss"] for r in rows] == pytest.approx([1.0 / (i + 1) for i in range(5)], rel=1e-6)
    assert math.isnan(rows[1]["x"]) and rows[3]["x"] == 3.0
    assert store.has_clock and not store.bad


def test_scalar_tensors(tmp_path: Path) -> None:
    _tensor_run(tmp_path / "tb", range(4))
    store = only(read_once(tmp_path))
    assert list(store.steps) == [0, 1, 2, 3]
    assert [r["eval/acc"] for r in rows_of(store)] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert store.wall_times[1] == pytest.approx(1.7e9 + 1)


def test_several_files_of_one_run_merged_by_step(tmp_path: Path) -> None:
    run = tmp_path / "run"
    torch_run(run, range(3))
    _tensor_run(run, range(2, 5))  # a second writer in the same directory (a resumed run): a later file
    store = only(read_once(tmp_path))
    assert list(store.steps) == [0, 1, 2, 3, 4]
    rows = rows_of(store)
    assert rows[2]["train/loss"] == pytest.approx(1 / 3) and rows[2]["eval/acc"] == pytest.approx(0.2)


@pytest.mark.parametrize("damage", ["cut", "flip", "flip_length", "flip_length_far"])
def test_damaged_copy_reported_with_position_good_rows_kept(tmp_path: Path, damage: str) -> None:
    src = tmp_path / "src"
    torch_run(src, range(6))
    data = bytearray(event_file(src).read_bytes())
    good = {r["step"]: r for r in rows_of(only(read_once(src)))}
    at = data.find(b"train/loss", len(data) // 2)  # a record in the middle
    assert at > 0
    if damage == "cut":
        data = data[:at]
    elif damage == "flip":
        data[at + 3] ^= 0x01
    else:  # the length field of the record holding it (12 bytes of header before its payload): a little longer (its
        # end inside the file), or 16 MB longer (past the file's end: not a record cut short)
        start = max(i for i in range(at - 40, at - 12)
                    if at < i + 12 + int.from_bytes(data[i:i + 8], "little") < len(data))
        data[start + (3 if damage == "flip_length_far" else 0)] ^= 0x01 if damage == "flip_length_far" else 0x40
    dst = tmp_path / "bad" / "run" / event_file(src).name
    dst.parent.mkdir(parents=True)
    dst.write_bytes(bytes(data))
    f = read_once(tmp_path / "bad")
    store = only(f)
    reasons = [b.reason for b in store.bad]
    assert reasons and all(r.startswith("byte ") for r in reasons), reasons
    want = {"cut": "record cut short", "flip": "checksum mismatch", "flip_length": "damaged record length",
            "flip_length_far": "damaged record length"}[damage]
    assert any(want in r for r in reasons), reasons
    kept = {r["step"]: r for r in rows_of(store)}
    assert kept and len(kept) >= 3
    for step, row in kept.items():
        for k, v in row.items():
            if k != "wall_time" and not (isinstance(v, float) and math.isnan(v)):  # (a row's clock: its first event's)
                assert good[step][k] == v
    lost = sum(len(r) for r in good.values()) - sum(len(r) for r in kept.values())
    assert lost >= 1  # the damaged record's cell


def test_empty_event_file_reported(tmp_path: Path) -> None:
    path = tmp_path / "run" / "events.out.tfevents.1.host.1.0"
    path.parent.mkdir()
    path.write_bytes(b"")
    store = only(read_once(tmp_path))
    assert len(store) == 0 and [b.reason for b in store.bad] == ["empty file"]


def test_read_without_tensorboard_or_google_crc32c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stdlib decoder and the pure-Python crc32c read the same rows."""
    import sys

    from steptable.ingest.readers import tensorboard as reader

    torch_run(tmp_path / "run", range(3))
    want = rows_of(only(read_once(tmp_path)))
    for name in ("tensorboard", "google_crc32c", "google.protobuf"):
        monkeypatch.setitem(sys.modules, name, None)  # (an import of it fails, as when it is not installed)
    assert reader._crc32c() is reader.crc32c_py
    monkeypatch.setattr(reader, "_crc32c", lambda: reader.crc32c_py)
    store = only(read_once(tmp_path))
    got = rows_of(store)
    assert len(got) == 3 and not store.bad
    assert all(g["train/loss"] == w["train/loss"] and g["step"] == w["step"] for g, w in zip(got, want, strict=True))
