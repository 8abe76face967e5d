"""W&B run files read as runs: rows, step, clock columns, nested keys, non-finite values, name, end, tables and
damaged copies (live growth: tests/ingest/test_recordsource.py). Every file here is written by wandb itself
(offline)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from steptable.ingest import recordsource
from steptable.ingest.readers.wandb import WandbParser
from tests.ingest import writers
from tests.ingest.readers.helpers import WANDB_READS, on_trainer_steps, wandb_read_by, wandb_records
from tests.ingest.writers import WANDB_STEPS, copy_dir, only, read_once, rows_of, same, wandb_file

pytest.importorskip("wandb")


@pytest.fixture(autouse=True, params=WANDB_READS)
def _reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test with the walk in C (where it is built) and with the loop in Python alone."""
    wandb_read_by(request.param, monkeypatch)


def test_history_rows_steps_values_and_name(wandb_run: Path) -> None:
    store = only(read_once(wandb_run))
    assert store.kind == "wandb" and store.arm == "grpo-a"
    assert list(store.steps) == list(range(WANDB_STEPS))  # (the table, logged alone at a step of its own: no row)
    rows = rows_of(store)
    for i in range(WANDB_STEPS):
        r = rows[i]
        assert r["_step"] == i and r["train/loss"] == pytest.approx(1.0 / (i + 1))
        assert r["nested/a"] == i and r["nested/b/c"] == 2 * i
        assert r["_timestamp"] > 1.6e9 and r["_runtime"] >= 0
    assert math.isnan(rows[2]["x"]) and rows[3]["y"] == math.inf and rows[1]["y"] == -1.0
    assert not any(k.startswith("samples") for r in rows for k in r)  # a table is no metric
    assert store.has_clock  # _timestamp is a wall clock
    assert store.meta["config"] == {"lr": 0.001}
    assert store.meta["runinfo"]["closed"] > 1.6e9 and "end" not in store.meta["runinfo"]
    assert not store.bad


def test_a_trainers_run_is_stepped_by_its_global_step_not_wandbs_log_count(hf_tracked: Path) -> None:
    """transformers' W&B callback logs ``train/global_step`` in each row; an evaluation is a ``log`` call of its
    own (W&B's ``_step`` counts calls): the rows are the trainer's steps, its evaluation in the row of its step."""
    on_trainer_steps(only(read_once(wandb_file(hf_tracked))), hf_tracked)


@pytest.fixture(scope="module")
def lightning_wandb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Lightning fit logged by its WandbLogger (offline) and its CSVLogger beside it (``csv/``), validating at
    each epoch's end. Returns the directory holding both."""
    pytest.importorskip("lightning")
    root = tmp_path_factory.mktemp("lightning_wandb")
    writers.run_writer(f"""
        import torch, lightning as L
        from lightning.pytorch.loggers import CSVLogger, WandbLogger
        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 1)
            def training_step(self, batch, i):
                loss = self.lin(batch[0]).pow(2).mean()
                self.log("train_loss", loss)
                return loss
            def validation_step(self, batch, i):
                self.log("val_loss", self.lin(batch[0]).pow(2).mean())
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), 0.1)
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 2)), batch_size=4)
        trainer = L.Trainer(max_epochs=2, log_every_n_steps=2, enable_progress_bar=False, enable_model_summary=False,
                            num_sanity_val_steps=0, enable_checkpointing=False, default_root_dir={str(root)!r},
                            logger=[WandbLogger(project="p", name="pl", save_dir={str(root)!r}),
                                    CSVLogger({str(root / "csv")!r})])
        trainer.fit(M(), data, data)
    """, {"WANDB_DIR": str(root)})
    return root


def test_a_lightning_run_is_stepped_by_its_global_step_not_wandbs_log_count(lightning_wandb: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Lightning's WandbLogger logs ``trainer/global_step`` in each row (and tells W&B to chart every metric
    against it); a validation is a ``log`` call of its own: the rows are the trainer's steps, those its CSVLogger
    writes beside it (they were W&B's count of calls, 0-5, with the trainer's step a column of its own)."""
    from tests.helpers import run_cli

    (csv_file,) = lightning_wandb.glob("csv/**/metrics.csv")
    want = sorted({int(line.split(",")[1]) for line in csv_file.read_text().splitlines()[1:]})
    path = wandb_file(lightning_wandb)
    assert list(only(read_once(path)).steps) == want and len(want) >= 3
    rc, out, err = run_cli(["tail", "--columns", "val_loss", str(path)], capsys)
    assert rc == 0 and [line.split()[0] for line in out.splitlines()[1:]] == [str(s) for s in want], out + err


def test_media_logged_without_a_metric_adds_no_row(tmp_path: Path) -> None:
    """A table or an image logged in a call of its own (with the trainer's step or nothing else) leaves a history
    record of W&B's own keys: no row of the run's (it was a blank one). Logged beside a metric, the row stays."""
    pytest.importorskip("wandb")
    writers.run_writer("""
        import numpy as np, wandb
        run = wandb.init(project="p", name="media")
        def table(step):
            return wandb.Table(columns=["prompt", "completion"], data=[["q", f"a at {step}"]])
        run.log({"loss": 1.0}, step=1)
        run.log({"samples": table(2)}, step=2)
        run.log({"samples": table(3), "train/global_step": 3}, step=3)
        run.log({"image": wandb.Image(np.zeros((4, 4, 3), dtype=np.uint8))}, step=4)
        run.log({"samples": table(5), "loss": 0.5}, step=5)
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    store = only(read_once(tmp_path))
    assert list(store.steps) == [1, 5] and [r["loss"] for r in rows_of(store)] == [1.0, 0.5]
    assert sorted(store.meta["tables"].values()) == [2, 3, 5]  # (each table's step is still known)


def test_a_metric_logged_as_none_is_no_value_and_a_nan_stays_one(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """W&B writes a metric logged as None as null and a NaN apart from it ("NaN"): the None is an absent cell (it
    read as NaN, and summary said "E step 4 grad_norm non-finite (NaN)"), the NaN a NaN."""
    from tests.helpers import run_cli

    writers.run_writer("""
        import wandb
        run = wandb.init(project="p", name="nulls")
        for s in range(12):
            run.log({"loss": 1.0 / (s + 1), "grad_norm": None if s % 5 == 4 else 1.0,
                     "reward": float("nan") if s == 10 else 0.5, "nested": {"a": None, "b": s}}, step=s)
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    rows = rows_of(only(read_once(tmp_path)))
    assert [r.get("grad_norm") for r in rows] == [1.0 if s % 5 != 4 else None for s in range(12)]
    assert "nested/a" not in rows[0] and rows[3]["nested/b"] == 3 and math.isnan(rows[10]["reward"])
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "grad_norm non-finite" not in out and "reward non-finite" in out, out + err


def test_a_list_logged_is_its_text_not_a_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A list W&B stores (two parameter groups' learning rates, a pair of ints) is what was logged, shown as its
    text: it read as steptable's own ``n/d`` count (``3/4``, ``1e-3/1e-4``), and as the ratio in summaries."""
    from tests.helpers import run_cli

    writers.run_writer("""
        import wandb
        run = wandb.init(project="p", name="lists")
        for s in range(3):
            run.log({"loss": 1.0 / (s + 1), "lr": [1e-3, 1e-4], "counts": [3, 4], "nested": {"three": [1, 2, 3]}})
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    rows = rows_of(only(read_once(tmp_path)))
    assert [(r["lr"], r["counts"], r["nested/three"]) for r in rows] == [("[0.001, 0.0001]", "[3, 4]", "[1, 2, 3]")] * 3
    rc, out, err = run_cli(["tail", "--columns", "counts", str(tmp_path)], capsys)
    assert rc == 0 and "[3, 4]" in out and "3/4" not in out, out + err


def test_exit_code_marks_how_the_run_ended(wandb_crashed: Path) -> None:
    from steptable.table.runinfo import end_words, ended_by

    store = only(read_once(wandb_crashed))
    assert store.arm == "dies" and len(store) == 3
    assert end_words(ended_by(store.meta["runinfo"]) or "") == "ended with exit_code_3"


def test_found_by_latest_run_link_once(wandb_run: Path) -> None:
    f = read_once(wandb_run / "wandb")  # offline-run-* and latest-run -> it: one run
    assert [s.arm for s in f.stores.values()] == ["grpo-a"]


def test_table_opens_in_the_generations_viewer(wandb_run: Path) -> None:
    from steptable.app.sidefiles import build_index, side_paths

    store = only(read_once(wandb_run))
    idx = build_index(side_paths(store.side_files))
    assert idx.steps == [WANDB_STEPS]
    samples = idx.samples(WANDB_STEPS)
    assert [(s.prompt, s.completion, s.reward) for s in samples] == [("p1", "c1", 1.0), ("p1", "c2", 0.0)]


@pytest.mark.parametrize("where", ["cut", "flip"])
def test_damaged_copy_reported_with_position_good_rows_kept(wandb_run: Path, tmp_path: Path, where: str) -> None:
    data = bytearray(wandb_file(wandb_run).read_bytes())
    good = rows_of(only(read_once(wandb_run)))
    dst = copy_dir(wandb_run, tmp_path)
    third = data.find(b"0.3333333333333333")  # inside the history record of step 2
    if where == "cut":
        data = data[:third]
    else:  # every record holding step 2's loss (its history record and the summary updates beside it)
        at = third
        while at >= 0:
            data[at + 2] ^= 0x20
            at = data.find(b"0.3333333333333333", at + 1)
    dst.write_bytes(bytes(data))
    f = read_once(tmp_path)
    store = only(f)
    reasons = [b.reason for b in store.bad]
    assert reasons and all(r.startswith("byte ") for r in reasons), reasons
    assert any(("cut short" if where == "cut" else "checksum") in r for r in reasons)
    kept = {r["_step"]: r for r in rows_of(store)}
    expect = [0, 1] if where == "cut" else [s for s in range(WANDB_STEPS) if s != 2]
    assert sorted(kept) == expect
    for r in good:
        if r["_step"] in kept:
            assert kept[r["_step"]]["train/loss" if "train/loss" in r else "_step"] == \
                r["train/loss" if "train/loss" in r else "_step"]
    assert any("byte" in e for e in f.errors)


def test_empty_file_reported(tmp_path: Path) -> None:
    path = tmp_path / "wandb" / "offline-run-20260101_000000-abc" / "run-abc.wandb"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    f = read_once(tmp_path)
    store = only(f)
    assert len(store) == 0 and [b.reason for b in store.bad] == ["empty file"]


def test_not_a_wandb_file_reported(tmp_path: Path) -> None:
    path = tmp_path / "run-abc.wandb"
    path.write_bytes(b"hello world, not a run\n" * 4)
    store = only(read_once(tmp_path))
    assert len(store) == 0 and "not a W&B run file" in store.bad[0].reason


def test_read_without_wandb_installed(wandb_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    want = rows_of(only(read_once(wandb_run)))
    for name in ("wandb", "google.protobuf"):
        monkeypatch.setitem(sys.modules, name, None)  # (an import of it fails, as when it is not installed)
    store = only(read_once(wandb_run))
    assert store.arm == "grpo-a" and str(rows_of(store)) == str(want)  # (str: NaN == NaN)


@pytest.mark.parametrize(("read", "text"), [(recordsource.WANDB_READ, 0), (5000, 0), (recordsource.WANDB_READ, 1),
                                            (recordsource.WANDB_READ, 50)])
def test_long_run_read_over_several_calls_as_wandbs_classes_read_it(tmp_path: Path, read: int, text: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of 700 steps (the reader hands rows on in batches: several calls over one read, each going on where
    the last stopped; the summary records beside each history record passed over; read 5,000 bytes at a time: its
    records cut by each read's end; a text value every step or every 50th: their records read one by one, the
    others together): every row is what wandb's own classes decode from the same file."""
    import json

    monkeypatch.setattr(recordsource, "WANDB_READ", read)

    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    root = tmp_path / "long"
    writers.run_writer(f"""
        import math, wandb
        run = wandb.init(project="p", name="long")
        for i in range(700):
            row = {{"loss": 1.0 / (i + 1), "x": math.nan if i % 97 == 5 else i * 0.5, "n": {{"k": i}}}}
            if {text} and i % {text or 1} == 0:
                row["phase"] = f"say \\"p{{i}}\\""
            run.log(row)
        run.finish()
    """, {"WANDB_DIR": str(root)})
    want = []
    for raw in wandb_records(wandb_file(root)):
        rec = pb.Record.FromString(raw)
        if rec.WhichOneof("record_type") == "history":
            want.append({"/".join(it.nested_key) or it.key: json.loads(it.value_json) for it in rec.history.item})
    store = only(read_once(root))
    rows = rows_of(store)
    assert len(want) == 700 and list(store.steps) == list(range(700))
    # (the store keeps one row a step: the parser's batches themselves hold each row once)
    data, parser, at, steps = wandb_file(root).read_bytes(), WandbParser("long"), 0, []
    while True:
        used, parsed = parser.parse(memoryview(data)[at:], at, final=True)
        steps += list(parsed.steps)
        at += used
        if not (parser.more and used):
            break
    assert steps == list(range(700)) and at == len(data)
    for got, row in zip(rows, want, strict=True):
        assert {k for k, v in got.items() if v is not None} == set(row)
        assert all(same(got[k], v) for k, v in row.items()), (got, row)
    assert not store.bad


def test_record_with_good_checksum_but_unreadable_reported(wandb_run: Path, tmp_path: Path) -> None:
    """A history record whose bytes pass the chunk checksum but are no record (its length field runs on: a writer
    bug, not a torn write) is reported with its offset; every other row is kept."""
    import struct
    import zlib

    from steptable.ingest.readers.wandblog import BLOCK, CHUNK_HEADER, FULL, HEADER

    data = bytearray(wandb_file(wandb_run).read_bytes())
    path = copy_dir(wandb_run, tmp_path)
    i, found = len(HEADER), None
    while i + CHUNK_HEADER <= len(data):
        if BLOCK - i % BLOCK < CHUNK_HEADER:
            i += BLOCK - i % BLOCK
            continue
        _, length, kind = struct.unpack_from("<IHB", data, i)
        body = bytes(data[i + CHUNK_HEADER : i + CHUNK_HEADER + length])
        num_end = 1 + next(k for k, b in enumerate(body[1:]) if b < 0x80) + 1  # (Record.num: a varint)
        if kind == FULL and body[num_end] == 0x12 and b"train/loss" in body and found is None:  # a history record
            found = (i, length)
        i += CHUNK_HEADER + length
    assert found is not None
    at, length = found
    junk = b"\x08\x0b\x12" + b"\xff" * (length - 3)  # Record.num, the history tag, then a varint that never ends
    data[at + CHUNK_HEADER : at + CHUNK_HEADER + length] = junk
    struct.pack_into("<I", data, at, zlib.crc32(junk, zlib.crc32(bytes([FULL]))))
    path.write_bytes(bytes(data))
    store = only(read_once(tmp_path))
    reasons = [b.reason for b in store.bad]
    assert reasons == [f"byte {at}: not a readable record (WireError); skipped"], reasons
    assert len(store) == WANDB_STEPS - 1  # (of the 6 steps, one history record lost)


def test_a_run_past_the_key_cap_keeps_its_headline_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """wandb-core writes a record's items in Go map order: with more keys than a run keeps, the kept ones were the
    first in that order, so ``loss`` and ``reward`` were dropped at random. Now the same ones are kept every time."""
    from steptable.ingest import store, table

    monkeypatch.setattr(table, "MAX_KEYS", 12)
    monkeypatch.setattr(store, "MAX_KEYS", 12)
    writers.run_writer("""
        import wandb
        run = wandb.init(project="p", name="keys")
        for i in range(3):
            layers = {f"grad_norm/layer{k:03d}": k + i for k in range(40)}
            run.log({"loss": 1.0 / (i + 1), "reward": float(i), **layers})
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    s = only(read_once(tmp_path))
    assert set(s.keys) == {"_step", "_timestamp", "_runtime", "loss", "reward",
                           *(f"grad_norm/layer{k:03d}" for k in range(7))}, s.keys
    assert [r["loss"] for r in rows_of(s)] == [1.0, 0.5, pytest.approx(1 / 3)]

