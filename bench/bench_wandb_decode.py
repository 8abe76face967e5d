"""W&B history records -> JSON lines: the stdlib path the reader uses against wandb's own compiled protobuf classes,
on the history records of the run ``bench_records.py`` writes, in one process (CPU time, best of ``--repeat``).

    python bench/bench_wandb_decode.py --steps 5000 --data /tmp/rs_rec5k

Anchor: :func:`~steptable.ingest.readers.wandbwire.history_lines` over groups of ``wandb.GROUP`` records (what the
reader does). Beside it: :func:`~steptable.ingest.readers.wandbwire.history_line` record by record (the reader's
path for records of another layout); wandb's classes (upb, C) parsing the records only, and parsing them and making
the same JSON lines (what a reader built on them would have to do); and importing those classes (a fresh
interpreter: it imports ``wandb``). Without wandb installed only the stdlib rows are printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_records import generate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from steptable.ingest.readers.protowire import fields
from steptable.ingest.readers.wandb import GROUP
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", type=Path, help="the runs bench_records.py wrote (written here if not yet)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(args.data or Path(tmp), args.steps)
        records = history_records(paths["wandb"])
    groups = [records[i : i + GROUP] for i in range(0, len(records), GROUP)]
    rows: list[tuple[str, float]] = []
    anchor = best(lambda: [history_lines(g) for g in groups], args.repeat)
    if any(history_lines(g) is None for g in groups[1:]):
        print("(some records are not of the usual layout (a step whose varint holds value_json's tag bytes): "
              "their group is read record by record)")
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
