"""Where the time of a TensorBoard full ingest goes, piece by piece, against the JSONL path's whole ingest of the
same rows measured in the same process (CPU time, best of ``--repeat`` each).

    python bench/bench_tb_pieces.py --steps 5000 --data /tmp/rs_rec5k    # the runs bench_records.py writes

The pieces are those of ``steptable.ingest.readers.tbsteps.Layout.read`` on the file's longest run of steps of one
layout, timed one by one over the same pieces of bytes it reads: the step check (``_agree``), the layout check
(``_same``), the checksums (``crc32c.all_good`` with google-crc32c, ``crc32c.good_blocks`` without), the columns
(``_columns``), and the store taking the rows; beside them the whole ingest (``Follower.scan()`` + ``finish()``) with
and without google-crc32c, and reading the file's bytes. Last, the whole command as users run it, interpreter start
and imports included: ``steptable summary PATH`` on the JSONL and on the TensorBoard run (CPU of the child process,
round robin, best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_records import generate

from steptable.ingest.files.follow import Follower
from steptable.ingest.readers import crc32c as crc
from steptable.ingest.readers import tbsteps, tensorboard
from steptable.ingest.store import RunStore


def best(fn: Callable[[], Any], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        c0 = time.process_time()
        fn()
        out.append(time.process_time() - c0)
    return min(out)


def command(path: Path, repeat: int, without: str | None = None) -> float:
    """CPU seconds (its own and its children's, best of ``repeat``) of ``steptable summary PATH`` as users run it;
    ``without``: a module made unimportable first."""
    block = f"import sys; sys.modules[{without!r}] = None; " if without else ""
    code = block + ("import sys; from steptable.cli.main import main; "
                    "sys.argv = ['steptable', 'summary', sys.argv[1]]; main()")
    out = []
    for _ in range(repeat):  # (under PYTHONPATH: this checkout's steptable, as bench_records.py measures it)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(out)


def ingest(path: Path) -> None:
    f = Follower([path])
    f.scan()
    f.finish()


def longest_run(data: bytes) -> tuple[tbsteps.Layout, int, int]:
    """(layout, start, whole blocks) of the longest run of steps the parser reads in bulk."""
    parser = tensorboard.EventParser("bench")
    off = 0
    found: tuple[tbsteps.Layout | None, int, int] = (None, 0, 0)
    while off < len(data):
        used, parsed = parser.parse(memoryview(data)[off:], off, True)
        if parsed.cols is not None and parser._layout is not None and len(parsed.steps) > found[2]:
            found = (parser._layout, off, len(parsed.steps))
        if not used:
            break
        off += used
    layout, start, blocks = found
    assert layout is not None
    return layout, start, blocks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", type=Path, required=True, help="where bench_records.py keeps (or writes) the runs")
    args = ap.parse_args()
    paths = generate(args.data, args.steps)
    (event,) = paths["tensorboard"].glob("events.out.tfevents.*")
    ingest(paths["jsonl"])  # (imports and tables made once, outside the timings)
    ingest(paths["tensorboard"])
    anchor = best(lambda: ingest(paths["jsonl"]), args.repeat)
    rows: list[tuple[str, float]] = [("TensorBoard full ingest (google-crc32c)",
                                      best(lambda: ingest(paths["tensorboard"]), args.repeat))]
    real = tensorboard._crc32c
    tensorboard._crc32c = lambda: tensorboard.crc32c_py  # type: ignore[assignment]
    try:
        rows.append(("TensorBoard full ingest (stdlib crc32c)", best(lambda: ingest(paths["tensorboard"]),
                                                                     args.repeat)))
    finally:
        tensorboard._crc32c = real  # type: ignore[assignment]
    data = event.read_bytes()
    rows.append(("reading the file's bytes", best(event.read_bytes, args.repeat)))
    layout, start, blocks = longest_run(data)
    size, chunk = layout.size, max(1, tbsteps.CHUNK // layout.size)
    pieces = [bytes(data[start + b * size : start + min(b + chunk, blocks) * size]) for b in range(0, blocks, chunk)]
    counts = [len(p) // size for p in pieces]
    ideal = {n: layout._ideal_of(n) for n in set(counts)}
    steps: dict[str, Callable[[bytes, int], Any]] = {
        "step check (_agree)": layout._agree,
        "layout check (_same)": layout._same,
        "checksums, google-crc32c (crc32c.all_good)": lambda p, n: crc.all_good(
            p, n, size, layout.crc_at, ideal[n], real()),
        "checksums, stdlib (crc32c.good_blocks)": lambda p, n: crc.good_blocks(
            p, n, size, layout.data, layout.varying, layout.crc_at, layout.bases),
        "columns (_columns)": layout._columns,
    }
    for name, fn in steps.items():
        def each(fn: Callable[[bytes, int], Any] = fn) -> list[Any]:
            return [fn(p, n) for p, n in zip(pieces, counts, strict=True)]

        rows.append((f"  {name}", best(each, args.repeat)))
    got = layout.read(data, start, start + blocks * size)
    assert got is not None
    parsed = got[1]
    rows.append(("  the store taking the rows (RunStore.add)", best(
        lambda: RunStore("b", event, "tensorboard", "b").add(parsed, float("nan")), args.repeat)))
    print(f"JSONL full ingest (anchor): {anchor:.4f} s CPU; TensorBoard run read in bulk: {blocks} of "
          f"{args.steps} steps, {blocks * size / 1e6:.1f} MB")
    for name, t in rows:
        print(f"{name:48s} {t:7.4f} s = {t / anchor:5.2f}x JSONL")
    # the whole command, interpreter start and imports included (round robin, best of --repeat each)
    cmd: dict[str, list[float]] = {"jsonl": [], "tensorboard": [], "tensorboard without google-crc32c": []}
    for _ in range(args.repeat):
        cmd["jsonl"].append(command(paths["jsonl"], 1))
        cmd["tensorboard"].append(command(paths["tensorboard"], 1))
        cmd["tensorboard without google-crc32c"].append(command(paths["tensorboard"], 1, "google_crc32c"))
    whole = {k: min(v) for k, v in cmd.items()}
    for name, t in whole.items():
        print(f"{'steptable summary, ' + name:48s} {t:7.4f} s = {t / whole['jsonl']:5.2f}x JSONL's command")


if __name__ == "__main__":
    main()
