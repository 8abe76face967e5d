"""Pathological lines: each reader's speed on them (bytes/s, at two sizes: linear time keeps it flat) and how
soon ``tail -f`` exits after a TERM while it parses the worst one.

    python bench/bench_fuzz.py            # lines of 256 KB and 2 MB
    python bench/bench_fuzz.py --quick    # 64 KB and 512 KB

1. Each case's line parsed by its reader (JSONL chunk parser, trainer_state.json, console log), in MB/s, against the
   anchor: a file of ordinary rows of the same size parsed by the same reader in the same run. The ratio of the two
   sizes' speeds says whether the time is linear (about 1) or grows with the square (the size ratio, 8).
2. ``steptable tail -f`` on a file whose last line is the worst case at 4 MB: seconds from SIGTERM to exit.
   Goal: under 1 s.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from steptable.ingest.readers.console import ConsoleParser
from steptable.ingest.readers.hf import parse_trainer_state
from steptable.ingest.readers.jsonl import JsonlParser


def cases(n: int) -> dict[str, tuple[str, bytes]]:
    """name -> (reader, data of about n bytes)."""
    nan = b'{"step":1,"x":[' + b",".join([b"NaN"] * (n // 4)) + b"]}\n"
    return {
        "long integer": ("jsonl", b'{"step":1,"loss":' + b"9" * n + b"}\n"),
        "bare NaN list": ("jsonl", nan),
        "1e999 list": ("jsonl", b'{"step":1,"x":[' + b",".join([b"1e999"] * (n // 6)) + b"]}\n"),
        "lone surrogate + backslashes": ("jsonl", b'{"step":1,"s":"\\ud800","t":"' + b"\\\\" * (n // 2) + b'"}\n'),
        "trainer_state long integer": ("state", b'{"log_history":[{"step":1,"loss":' + b"9" * n + b"}]}"),
        "console long value": ("console", b"step:1 - loss:" + b"9" * n + b" - kl:0.1\n"),
    }


def normal(reader: str, n: int) -> bytes:
    if reader == "console":
        line = b"step:%d - loss:0.12345 - kl:0.01 - reward:1.5\n"
    else:
        line = b'{"step":%d,"loss":0.12345,"kl":0.01,"reward":1.5}\n'
    rows = [line % i for i in range(max(1, n // len(line % 0)))]
    if reader == "state":
        return b'{"log_history":[' + b",".join(r.rstrip(b"\n") for r in rows) + b"]}"
    return b"".join(rows)


def parse_with(reader: str) -> Callable[[bytes], object]:
    if reader == "jsonl":
        return lambda data: JsonlParser("bench").parse(data, 1)
    if reader == "state":
        return parse_trainer_state
    return lambda data: ConsoleParser("bench").parse(data)


def rate(fn: Callable[[bytes], object], data: bytes) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - t)
    return len(data) / best / 1e6


def term_exit(line: bytes) -> float:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "metrics.jsonl"
        path.write_bytes(b'{"step":0,"loss":1}\n' * 1000 + line)
        proc = subprocess.Popen([sys.executable, "-m", "steptable", "tail", "-f", str(path), "--format", "jsonl"],
                                cwd=Path(__file__).resolve().parents[1], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(0.3)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=600)
        return time.monotonic() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    small, big = (64_000, 512_000) if a.quick else (256_000, 2_000_000)
    print(f"{'case':32} {'MB/s ' + str(small // 1000) + 'K':>11} {'MB/s ' + str(big // 1000) + 'K':>11} "
          f"{'vs normal':>10} {'small/big':>10}")
    for name in cases(small):
        reader, d_small = cases(small)[name]
        d_big = cases(big)[name][1]
        fn = parse_with(reader)
        r_small, r_big = rate(fn, d_small), rate(fn, d_big)
        anchor = rate(fn, normal(reader, len(d_big)))
        print(f"{name:32} {r_small:11.1f} {r_big:11.1f} {r_big / anchor:9.2f}x {r_small / r_big:9.2f}x")
    print()
    for name in ("long integer", "bare NaN list", "lone surrogate + backslashes"):
        line = cases(4_000_000)[name][1]
        print(f"tail -f, TERM while parsing a 4 MB '{name}' line: exit after {term_exit(line):.2f} s (goal < 1 s)")


if __name__ == "__main__":
    main()
