"""W&B history records -> JSON lines: the stdlib path the reader uses against wandb's own compiled protobuf classes,
on the history records of the run ``bench_records.py`` writes, in one process (CPU time, best of ``--repeat``).

    python bench/bench_wandb_decode.py --steps 5000 --data /tmp/rs_rec5k

Anchor: :func:`~steptable.ingest.readers.wandbwire.history_lines` over groups of ``wandb.GROUP`` records (what the
reader does). Beside it: :func:`~steptable.ingest.readers.wandbwire.history_line` record by record (the reader's
path for records of another layout); wandb's classes (upb, C) parsing the records only, and parsing them and making
the same JSON lines (what a reader built on them would have to do); and importing those classes (a fresh
interpreter: it imports ``wandb``). Without wandb installed only the stdlib rows are printed.

``--floor``: the pieces a W&B read cannot do without, each timed alone in this process against the whole read of the
same rows from the JSONL file (``Follower.scan()`` + ``finish()``, warm): reading the file's bytes, walking its chunks
with their checksums (no record read), the rewrite above, and the typed decode of its lines in pieces of
``jsonl.PIECE`` bytes, as they come (each record with its keys in wandb's order) and with every line's keys in the
decoder's field order (what JSONL rows have).
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from bench_records import generate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable.ingest.files.follow import Follower
from steptable.ingest.readers.fastpath import TypedDecoder, learn
from steptable.ingest.readers.jsonl import PIECE
from steptable.ingest.readers.protowire import fields
from steptable.ingest.readers.wandb import GROUP
from steptable.ingest.readers.wandblog import BLOCK, CHUNK_HEADER, HEADER
from steptable.ingest.readers.wandbwire import history_line, history_lines
from tests.ingest.readers.helpers import wandb_records

HISTORY = 2  # Record.history


def history_records(run_dir: Path) -> list[bytes]:
    """The HistoryRecord bytes of every history Record of the run file under ``run_dir``."""
    (path,) = run_dir.rglob("run-*.wandb")
    out = []
    for raw in wandb_records(path):
        got = [raw[a:b] for num, wire, a, b in fields(raw, 0, len(raw)) if num == HISTORY and wire == 2]
        out.extend(got)
    return out


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The least CPU seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        c0 = time.process_time()
        fn()
        times.append(time.process_time() - c0)
    return min(times)


def walk_chunks(data: bytes) -> int:
    """Every chunk of a ``.wandb`` file's bytes checked against its checksum, nothing read: the least a reader in
    Python does per chunk. Returns the chunks that passed."""
    unpack, crc32 = struct.Struct("<IHB").unpack_from, zlib.crc32
    type_crc = [crc32(bytes([t])) for t in range(256)]
    i, n, good = len(HEADER), len(data), 0
    while n - i >= CHUNK_HEADER:
        left = BLOCK - i % BLOCK
        if left < CHUNK_HEADER:
            i += left
            continue
        crc, length, kind = unpack(data, i)
        end = i + CHUNK_HEADER + length
        if kind == 0:
            i += left
            continue
        good += crc32(data[i + CHUNK_HEADER : end], type_crc[kind]) == crc
        i = end
    return good


def floor(run_dir: Path, jsonl: Path, groups: list[list[bytes]], repeat: int) -> list[tuple[str, float]]:
    """(label, CPU seconds) of the pieces of a W&B read, the JSONL read of the same rows first (the anchor)."""
    (path,) = run_dir.rglob("run-*.wandb")

    def ingest(p: Path) -> None:
        f = Follower([str(p)])
        f.scan()
        f.finish()

    data = path.read_bytes()
    lines = b"\n".join(x for x in (history_lines(g) for g in groups) if x is not None) + b"\n"
    shape: dict[str, Any] = {}
    for obj in msgspec.json.Decoder().decode_lines(lines[: lines.index(b"\n") + 1]):
        learn(shape, obj)
    typed = TypedDecoder(shape, "_step")
    rows = msgspec.json.Decoder().decode_lines(lines)
    order = ["_step", *(k for k in shape if k != "_step")]  # (the decoder's field order: the step first)
    ordered = b"".join(msgspec.json.encode({k: r[k] for k in order if k in r}) + b"\n" for r in rows)

    def pieces(text: bytes) -> list[bytes]:  # (of about PIECE bytes, whole lines: as the reader decodes them)
        out, i = [], 0
        while i < len(text):
            j = text.find(b"\n", i + PIECE) + 1 or len(text)
            out.append(text[i:j])
            i = j
        return out

    shuffled_pieces, ordered_pieces = pieces(lines), pieces(ordered)
    return [("JSONL file: full ingest, warm (anchor)", best(lambda: ingest(jsonl), repeat)),
            ("W&B file: full ingest, warm", best(lambda: ingest(path), repeat)),
            ("W&B file: reading its bytes", best(path.read_bytes, repeat)),
            ("W&B file: its chunks and their checksums (bytes read), nothing read", best(lambda: walk_chunks(data),
                                                                                          repeat)),
            (f"rewrite to JSON lines (history_lines, groups of {GROUP})",
             best(lambda: [history_lines(g) for g in groups], repeat)),
            ("typed decode of those lines (keys in wandb's order)",
             best(lambda: [typed.decode(x) for x in shuffled_pieces], repeat)),
            ("typed decode, the same lines with keys in the fields' order",
             best(lambda: [typed.decode(x) for x in ordered_pieces], repeat))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", type=Path, help="the runs bench_records.py wrote (written here if not yet)")
    ap.add_argument("--floor", action="store_true", help="time the pieces of a whole W&B read against JSONL's read")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(args.data or Path(tmp), args.steps, ("jsonl", "wandb"))
        records = history_records(paths["wandb"])
        groups = [records[i : i + GROUP] for i in range(0, len(records), GROUP)]
        if args.floor:
            pieces = floor(paths["wandb"], paths["jsonl"], groups, args.repeat)
            print(f"{len(records)} history records; CPU, best of {args.repeat}")
            for label, dt in pieces:
                print(f"  {label:68s} {dt:7.4f} s  = {dt / pieces[0][1]:5.2f}x JSONL ingest")
            return
    rows: list[tuple[str, float]] = []
    anchor = best(lambda: [history_lines(g) for g in groups], args.repeat)
    if any(history_lines(g) is None for g in groups[1:]):
        print("(some groups are not all of the usual layout: the reader reads them record by record)")
    rows.append((f"stdlib history_lines, groups of {GROUP} (anchor)", anchor))
    rows.append(("stdlib history_line, record by record", best(lambda: [history_line(r, 0, len(r)) for r in records],
                                                               args.repeat)))
    try:
        from wandb.proto import wandb_internal_pb2 as pb
    except ImportError:
        print("wandb not installed: its classes are not measured")
    else:
        parse = pb.HistoryRecord.FromString

        def upb_lines() -> bytes:
            out = []
            for r in records:
                items = parse(r).item
                out.append(b"{" + b",".join(b'"%s":%s' % ("/".join(it.nested_key).encode(), it.value_json.encode())
                                            for it in items) + b"}")
            return b"\n".join(out)

        assert upb_lines() == b"\n".join(history_line(r, 0, len(r)) or b"" for r in records)
        rows.append(("wandb's classes (upb): parse only", best(lambda: [parse(r) for r in records], args.repeat)))
        rows.append(("wandb's classes (upb): parse + the same JSON lines", best(upb_lines, args.repeat)))
        code = ("import time; c = time.process_time(); from wandb.proto import wandb_internal_pb2; "
                "print(time.process_time() - c)")
        imports = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                        text=True).stdout) for _ in range(args.repeat)]
        rows.append(("importing wandb's classes (fresh interpreter)", min(imports)))
    print(f"{len(records)} history records, {sum(map(len, records)) / 1e6:.1f} MB; CPU, best of {args.repeat}")
    for label, dt in rows:
        print(f"  {label:52s} {dt:7.4f} s  = {dt / anchor:6.2f}x anchor")


if __name__ == "__main__":
    main()
