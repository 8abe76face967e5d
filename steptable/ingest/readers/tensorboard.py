"""TensorBoard event files (``events.out.tfevents.*``): scalar summaries as rows, read as they are written.

A file is a sequence of TFRecords (length u64, masked crc32c of the length, data, masked crc32c of the data), each an
``Event`` protobuf decoded with tensorboard's own classes (``tensorboard.compat.proto.event_pb2``: the
``steptable[tensorboard]`` extra; crc32c from ``google-crc32c`` when installed, else tensorboard's pure-Python one).

Each scalar summary value is a cell named by its tag (``train/loss`` kept as is): ``simple_value`` (torch's
SummaryWriter, tensorboardX) or a scalar tensor (tensorboard's and TF2's ``tf.summary.scalar``). Events of one step
written one after another make one row; ``wall_time`` of its first event is the row's clock. A step absent on the
wire (protobuf leaves 0 out) is step 0.

Damage: a record whose data checksum fails is reported with its byte offset and skipped; a length whose checksum
fails is searched past for the next record whose length checksum holds; a record cut by a concurrent write waits for
the rest (reported when a one-shot read ends on it). Every good record is kept.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from steptable.ingest.parse import BadLine
from steptable.ingest.parsed import Parsed

EXTRA = "tensorboard"
_LEN = struct.Struct("<QI")
_CRC = struct.Struct("<I")
#: a record longer than this is taken for a damaged length (a scalar event is ~50 bytes; an image summary MBs)
MAX_RECORD = 256 << 20
#: tensorflow DataType -> struct format of one element of ``tensor_content``
_DTYPES = {1: "<f", 2: "<d", 3: "<i", 9: "<q", 19: "<e", 4: "<B", 6: "<b", 10: "<?"}
_VALS = {1: "float_val", 2: "double_val", 3: "int_val", 9: "int64_val", 19: "half_val", 10: "bool_val"}


def available() -> bool:
    try:
        import tensorboard.compat.proto.event_pb2  # noqa: F401
    except Exception:  # ImportError, or a protobuf version it refuses
        return False
    return True


def _crc32c() -> Callable[[bytes], int]:
    try:
        import google_crc32c

        value: Callable[[bytes], int] = google_crc32c.value
        return value
    except ImportError:
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import crc32c

        pure: Callable[[bytes], int] = crc32c
        return pure


def _masker(crc32c: Callable[[bytes], int]) -> Callable[[bytes], int]:
    def masked(data: bytes) -> int:
        x = crc32c(data)
        return (((x >> 15) | (x << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    return masked


class EventParser:
    """Bytes of one event file (from its start, in pieces) -> :class:`Parsed` rows keyed by ``step``."""

    def __init__(self, label: str) -> None:
        from tensorboard.compat.proto import event_pb2

        self._event = event_pb2.Event
        self._masked = _masker(_crc32c())
        self.label = label
        self.reset()

    def reset(self) -> None:
        self.pos = 0
        self._resync = False  # searching for the next record whose length checksum holds

    def parse(self, data: bytes, base: int, final: bool = False) -> tuple[int, Parsed]:
        """Parse whole records of ``data`` (file bytes from offset ``base``, where the last call stopped). Returns
        (bytes consumed, rows). ``final``: nothing more will come: a cut record at the end is reported."""
        bad: list[BadLine] = []
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        masked = self._masked
        i, n = 0, len(data)
        if final and n == 0 and base == 0:
            bad.append(BadLine(self.label, 0, "empty file"))
        while n - i >= 12:
            length, len_crc = _LEN.unpack_from(data, i)
            if masked(data[i : i + 8]) != len_crc or length > MAX_RECORD:
                if not self._resync:
                    bad.append(BadLine(self.label, 0, f"byte {base + i}: damaged record length; searching on"))
                    self._resync = True
                i += 1
                continue
            self._resync = False
            end = i + 12 + length + 4
            if end > n:
                break  # cut by a concurrent write: wait for the rest
            payload = data[i + 12 : i + 12 + length]
            if masked(payload) != _CRC.unpack_from(data, end - 4)[0]:
                bad.append(BadLine(self.label, 0, f"byte {base + i}: checksum mismatch; record skipped"))
                i = end
                continue
            self._event_row(payload, base + i, steps, rows, bad)
            i = end
        if final and i < n:
            what = "damaged data" if self._resync else "record cut short"
            bad.append(BadLine(self.label, 0, f"byte {base + i}: {what} ({n - i} bytes at the end); not read"))
        self.pos = base + i
        return i, Parsed(steps=steps, rows=rows, bad=bad, step_key="step")

    def _event_row(self, raw: bytes, at: int, steps: list[int], rows: list[dict[str, Any]],
                   bad: list[BadLine]) -> None:
        try:
            ev = self._event.FromString(raw)
        except Exception as e:  # protobuf's DecodeError: checksums passed but the record is not an Event
            bad.append(BadLine(self.label, 0, f"byte {at}: not a readable event ({type(e).__name__}); skipped"))
            return
        if not ev.HasField("summary"):
            return
        cells: dict[str, Any] = {}
        for v in ev.summary.value:
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                cells[v.tag] = v.simple_value
            elif kind == "tensor":
                x = _scalar(v.tensor)
                if x is not None:
                    cells[v.tag] = x
        if not cells:
            return
        step = ev.step
        if steps and steps[-1] == step:
            rows[-1].update(cells)
            return
        cells["step"] = step
        cells["wall_time"] = ev.wall_time
        steps.append(step)
        rows.append(cells)


def _scalar(t: Any) -> float | int | bool | None:
    """The value of a scalar (rank 0, or a single element) tensor proto of a numeric dtype, else None."""
    if len(t.tensor_shape.dim) > 1 or any(d.size != 1 for d in t.tensor_shape.dim):
        return None
    if t.tensor_content:
        fmt = _DTYPES.get(t.dtype)
        if fmt is None or len(t.tensor_content) != struct.calcsize(fmt):
            return None
        x: float | int | bool = struct.unpack(fmt, t.tensor_content)[0]
        return x
    field = _VALS.get(t.dtype)
    if field is None:
        return None
    vals = getattr(t, field)
    if len(vals) != 1:
        return None
    if t.dtype == 19:  # half_val holds the float16's bits
        x = struct.unpack("<e", struct.pack("<H", vals[0]))[0]
        return x
    out: float | int | bool = vals[0]
    return out
