"""The stdlib TensorBoard wire decoder reads the same events as tensorboard's own protobuf classes, on files
SummaryWriter and tensorboard's writer wrote: scalars as simple values and as tensors of each numeric dtype, and
text summaries (``add_text``, a string tensor of several elements)."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.readers.tbwire import tb_event, tb_texts


def _events(path: Path) -> list[bytes]:
    data = path.read_bytes()
    out, i = [], 0
    while i + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        out.append(data[i + 12 : i + 12 + n])
        i += 12 + n + 4
    return out


def _scalars(ev: Any) -> list[tuple[str, Any]]:
    from tensorboard.util import tensor_util

    out = []
    for v in ev.summary.value:
        if v.WhichOneof("value") == "simple_value":
            out.append((v.tag, v.simple_value))
        elif v.WhichOneof("value") == "tensor":
            out.append((v.tag, tensor_util.make_ndarray(v.tensor).item()))
    return out


def test_tensorboard_events_decode_as_tensorboards_classes_do(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "torch"))
    for i in range(4):
        w.add_scalar("train/loss", 1.0 / (i + 1), i)
        w.add_scalar("x", math.nan if i == 1 else -float(i), i)
    w.close()
    ew = EventFileWriter(str(tmp_path / "tb"))
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.float16, np.bool_, np.int8, np.uint8]
    for i, dt in enumerate(dtypes):
        values = [summary_pb2.Summary.Value(tag=f"t/{np.dtype(dt).name}", tensor=tensor_util.make_tensor_proto(
            np.array(dt(i + 1)) if dt is not np.bool_ else np.array(True)))]
        values.append(summary_pb2.Summary.Value(tag="one", tensor=tensor_util.make_tensor_proto(
            np.array([2.5], dtype=np.float32))))
        ew.add_event(event_pb2.Event(step=i * 1000, wall_time=1.7e9 + i, summary=summary_pb2.Summary(value=values)))
    ew.close()
    seen = 0
    for path in sorted(tmp_path.rglob("events.out.tfevents.*")):
        for raw in _events(path):
            ev = event_pb2.Event.FromString(raw)
            got = tb_event(raw)
            if not ev.HasField("summary"):
                assert got is None
                continue
            assert got is not None
            wall, step, values = got
            assert (wall, step) == (ev.wall_time, ev.step)
            want = _scalars(ev)
            assert [t for t, _ in values] == [t for t, _ in want]
            for (_, a), (_, b) in zip(values, want, strict=True):
                assert a == b or (math.isnan(a) and math.isnan(b))
            seen += 1
    assert seen == 4 * 2 + len(dtypes)  # (torch writes one event per add_scalar)


def test_text_summaries_decode_as_tensorboards_classes_do(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "torch"))
    w.add_text("val/generations", "**Input:** é\n\n**Output:** \x1b[2J", 7)
    w.add_scalar("loss", 1.0, 7)
    w.close()
    ew = EventFileWriter(str(tmp_path / "tb"))  # (a text tensor of two elements, tf.summary.text's form)
    value = summary_pb2.Summary.Value(tag="notes", tensor=tensor_util.make_tensor_proto(np.array([b"a", b"b"])))
    ew.add_event(event_pb2.Event(step=3, summary=summary_pb2.Summary(value=[value])))
    ew.close()
    got = []
    for path in sorted(tmp_path.rglob("events.out.tfevents.*")):
        for raw in _events(path):
            ev = event_pb2.Event.FromString(raw)
            texts = [(v.tag, "\n\n".join(s.decode() for s in v.tensor.string_val)) for v in ev.summary.value
                     if v.HasField("tensor") and v.tensor.dtype == 7]
            assert tb_texts(raw) == ((ev.step, texts) if texts else None)
            got += texts
    assert got == [("notes", "a\n\nb"), ("val/generations/text_summary", "**Input:** é\n\n**Output:** \x1b[2J")]
