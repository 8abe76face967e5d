"""A followed CSV rewritten from the top by its trainer (Lightning's CSVLogger, when a key appears): what the poll that
reads the rewrite costs, against the first read of the same file (the anchor, measured in the same run).

    python bench/bench_rewrite.py                       # 10,000 and 100,000 rows, three repeats each, worst reported
    python bench/bench_rewrite.py --rows 200000 --repeat 1

Each repeat writes the run with Lightning's own CSVLogger (three keys a row), follows it (a Follower's first scan:
the anchor), logs one row with a new key and saves (Lightning writes the whole file again), and times the scan that
reads it (steptable.ingest.rewrite: the rows shown are kept, the new column merged onto them). Also checked: no reset
(the store's generation is unchanged) and every row kept.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

from steptable.ingest import Follower


def once(root: Path, rows: int) -> tuple[float, float]:
    from lightning.fabric.loggers import CSVLogger

    logger = CSVLogger(str(root), name="exp", version=0, flush_logs_every_n_steps=10**9)
    for s in range(rows):
        logger.log_metrics({"train_loss": 1.0 / (s + 1), "lr": 1e-4, "acc": s / rows}, step=s)
    logger.save()
    fo = Follower([root])
    t = time.perf_counter()
    fo.scan()
    first = time.perf_counter() - t
    logger.log_metrics({"train_loss": 0.5, "val_loss": 0.7}, step=rows)
    logger.save()
    t = time.perf_counter()
    fo.scan()
    rewrite = time.perf_counter() - t
    (store,) = fo.stores.values()
    assert len(store) == rows + 1 and store.generation == 0, (len(store), store.generation)
    return first, rewrite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")  # (Lightning's notes about its log directory)
    for rows in a.rows:
        got = []
        for _ in range(a.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                got.append(once(Path(tmp), rows))
        ratios = [r / f for f, r in got]
        worst = max(range(len(got)), key=lambda i: ratios[i])
        f, r = got[worst]
        print(f"{rows:>7} rows: first read {f:.2f} s (anchor), the rewrite's poll {r:.2f} s; ratio per repeat "
              f"{' '.join(f'{x:.2f}' for x in ratios)}, worst {ratios[worst]:.2f}x; no reset, every row kept")


if __name__ == "__main__":
    main()
