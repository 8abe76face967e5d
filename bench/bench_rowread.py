"""What StepLogger.log costs a row, and what reading a row of tensors costs, each against an anchor in the same run.

    python bench/bench_rowread.py               # 2,000 rows a round (3. and 4.: 500), best of 5 interleaved rounds
    python bench/bench_rowread.py --rows 500

The row is the 23 keys TRL's GRPOTrainer logs (bench_callback.py's). Printed, each as CPU us a row and its ratio:

1. ``StepLogger.log`` of the row as plain floats (JSONL only, no console), against the least a JSONL logger does
   with it: ``json.dumps`` and one ``os.write`` of the line to a file of its own;
2. ``read_row`` (steptable.logger.rowrecord) of the same row, against ``dict.copy()``;
3. ``read_row`` of the row as 0-d float32 CPU tensors (a GRPO loop's ``loss.detach()``...), against reading each
   with ``.item()`` (what it did before a row's tensors were read together), and the host reads a row (aten
   ``_local_scalar_dense`` and copies to the CPU, counted by a dispatch mode); then the same with CPU tensors
   gathered as a device's are (``READ_EACH`` emptied: the path a GPU row takes, its cost on the host);
4. with CUDA: the row as 0-d CUDA tensors behind a queued matmul, wall time of ``read_row`` against ``.item()``
   each (both wait for the matmul once; the reads after it are what differs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_callback import KEYS  # (TRL GRPOTrainer's keys)

from steptable import StepLogger
from steptable.logger.rowrecord import read_row
from steptable.table import rowvalues


def rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"step": i, **{k: rng.uniform(-1, 1) for k in KEYS}} for i in range(n)]


def best(fns: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """The best of ``rounds`` of each timing, the timings interleaved round by round."""
    out = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            out[k] = min(out[k], fn())
    return out


def per_row(fn: Callable[[Any], Any], items: list[Any], clock: Callable[[], float] = time.process_time) -> float:
    t = clock()
    for x in items:
        fn(x)
    return (clock() - t) / len(items) * 1e6


def host_reads(fn: Callable[[], Any]) -> int:
    """Host reads while ``fn`` runs: aten's scalar reads and copies to the CPU."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Reads(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if name in ("_local_scalar_dense", "item") or (
                    name == "_to_copy" and kwargs.get("device") is not None
                    and torch.device(kwargs["device"]).type == "cpu"):
                Reads.n += 1
            return func(*args, **kwargs)

    with Reads():
        fn()
    return Reads.n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    floats = rows(a.rows)
    with tempfile.TemporaryDirectory() as tmp:
        log = StepLogger(run_dir=Path(tmp) / "run", console=False)
        for r in rows(50, seed=1):  # the first rows' set-up (columns, files) left out
            log.log(r)
        fd = os.open(Path(tmp) / "anchor.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)

        def anchor_line(r: dict[str, Any]) -> None:
            os.write(fd, (json.dumps(r) + "\n").encode())

        t = best({"log": lambda: per_row(log.log, floats), "anchor": lambda: per_row(anchor_line, floats),
                  "read": lambda: per_row(read_row, floats), "copy": lambda: per_row(dict.copy, floats)}, a.rounds)
        log.close()
        os.close(fd)
    print(f"1. StepLogger.log, {len(KEYS) + 1} plain values: {t['log']:.2f} us CPU a row; json.dumps + os.write "
          f"(anchor) {t['anchor']:.2f} us; ratio {t['log'] / t['anchor']:.2f}x")
    print(f"2. read_row, plain values: {t['read']:.3f} us; dict.copy (anchor) {t['copy']:.3f} us; "
          f"ratio {t['read'] / t['copy']:.2f}x")
    try:
        import torch
    except ImportError:
        print("3.-4. skipped: no torch")
        return
    torch.set_num_threads(1)
    part = floats[: max(a.rows // 4, 1)]
    cpu_rows(torch, [{k: v if k == "step" else torch.tensor(v) for k, v in r.items()} for r in part], a.rounds)
    if torch.cuda.is_available():
        cuda_rows(torch, [{k: v if k == "step" else torch.tensor(v, device="cuda") for k, v in r.items()}
                          for r in part], a.rounds)


def each(r: dict[str, Any]) -> dict[str, Any]:
    """The anchor: each tensor read with its own ``.item()``."""
    return {k: v.item() if hasattr(v, "item") else v for k, v in r.items()}


def cpu_rows(torch: Any, tensors: list[dict[str, Any]], rounds: int) -> None:
    t = best({"read": lambda: per_row(read_row, tensors), "each": lambda: per_row(each, tensors)}, rounds)
    n = host_reads(lambda: read_row(tensors[0]))
    print(f"3. read_row, {len(KEYS)} 0-d CPU tensors: {t['read']:.2f} us CPU a row, {n} host reads; "
          f".item() each (anchor) {t['each']:.2f} us; ratio {t['read'] / t['each']:.2f}x")
    if not hasattr(rowvalues, "READ_EACH"):
        return
    kept = rowvalues.READ_EACH
    rowvalues.READ_EACH = frozenset()
    try:
        g = best({"read": lambda: per_row(read_row, tensors)}, rounds)["read"]
        n = host_reads(lambda: read_row(tensors[0]))
    finally:
        rowvalues.READ_EACH = kept
    print(f"   gathered as a device's (READ_EACH emptied): {g:.2f} us CPU a row, {n} host read(s); "
          f"ratio {g / t['each']:.2f}x the anchor")


def cuda_rows(torch: Any, tensors: list[dict[str, Any]], rounds: int) -> None:
    m = torch.randn(4096, 4096, device="cuda")

    def behind(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        def run(r: dict[str, Any]) -> Any:
            m @ m  # work queued before the row is read, as a training step leaves it
            return fn(r)
        return run

    torch.cuda.synchronize()
    t = best({"read": lambda: per_row(behind(read_row), tensors, time.perf_counter),
              "each": lambda: per_row(behind(each), tensors, time.perf_counter),
              "mm": lambda: per_row(behind(lambda r: torch.cuda.synchronize()), tensors, time.perf_counter)}, rounds)
    print(f"4. read_row, {len(KEYS)} 0-d CUDA tensors behind a 4096^2 matmul: {t['read']:.1f} us wall a row; "
          f".item() each (anchor) {t['each']:.1f} us; the matmul and one sync alone {t['mm']:.1f} us; "
          f"ratio {t['read'] / t['each']:.2f}x")


if __name__ == "__main__":
    main()
