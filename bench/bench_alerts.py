"""False alarms and detections of the alert detectors over a corpus of synthetic runs.

    python bench/bench_alerts.py                  # 4 families x 20 seeds of healthy runs, the incidents, the big file
    python bench/bench_alerts.py --rows 2000 --seeds 5 --no-big

Healthy runs log the keys the detectors watch (loss, grad_norm, reward, entropy, kl, response_length/clip_ratio)
plus a clock, in four families: stationary noise, drifting (a loss that decays, a reward that climbs, an entropy
that slowly falls, a KL that grows), stepped schedules (levels that jump at a learning-rate schedule's steps) and
heavy tails (Student-t noise, df 3). Every alert on a healthy run is a false alarm: the figure is warnings per
1,000,000 cells (rows x logged columns), the worst seed and all seeds together (goal: at most 1 per 1M). Each
incident is injected into a healthy run of every family at a random step and must be reported by its detector
within a few rows of it: the detection list says which were. With the big file (/work/shared/tools/bigfile.py:
100,000 rows x 42 uniform-noise columns, 4.2M cells), the warnings on it too. Alerts are read as ``summary``,
``tail --alerts-only`` and ``watch`` read them (``steptable.alerts.history.scan`` over the stored columns).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from steptable.alerts.engine import Alert
from steptable.alerts.history import scan

KEYS = ("loss", "grad_norm", "reward", "entropy", "kl", "response_length/clip_ratio")
FAMILIES = ("stationary", "drifting", "stepped", "heavy")
T0 = 1_700_000_000.0
DT = 10.0  # seconds per step (with a little jitter)

Run = dict[str, list[float]]  # key -> one value per row (and "_t": the row's wall time)


def healthy(family: str, seed: int, rows: int) -> Run:
    """A run that is fine from its first row to its last: the family's shape plus noise, one seed's draw."""
    rnd = random.Random(f"{family}-{seed}")

    def noise() -> float:
        if family == "heavy":  # Student-t, 3 degrees of freedom, scaled to unit spread
            return rnd.gauss(0, 1) / math.sqrt(sum(rnd.gauss(0, 1) ** 2 for _ in range(3)) / 3) / math.sqrt(3)
        return rnd.gauss(0, 1)

    out: Run = {k: [] for k in (*KEYS, "_t")}
    t = T0
    for i in range(rows):
        p = i / rows
        if family == "drifting":
            lv = {"loss": 0.2 + 0.8 * math.exp(-4 * p), "grad_norm": 2.0 - p, "reward": 0.2 + 0.5 * p,
                  "entropy": 1.2 - 0.5 * p, "kl": 0.002 + 0.05 * p, "response_length/clip_ratio": 0.02 + 0.1 * p}
        elif family == "stepped":  # a schedule's steps: the level jumps at each fifth of the run
            k = int(5 * p)
            lv = {"loss": 0.8 * 0.8 ** k, "grad_norm": 1.5 * 0.7 ** k, "reward": 0.3 + 0.08 * k,
                  "entropy": 1.0 - 0.1 * k, "kl": 0.01 * (1 + k), "response_length/clip_ratio": 0.05 + 0.03 * k}
        else:
            lv = {"loss": 0.5, "grad_norm": 1.0, "reward": 0.5, "entropy": 1.0, "kl": 0.02,
                  "response_length/clip_ratio": 0.05}
        rel = {"loss": 0.1, "grad_norm": 0.2, "reward": 0.1, "entropy": 0.05, "kl": 0.3,
               "response_length/clip_ratio": 0.3}
        for key in KEYS:
            v = lv[key] * (1 + rel[key] * noise())
            if key in ("grad_norm", "entropy", "kl", "response_length/clip_ratio"):
                v = abs(v)  # (non-negative quantities)
            if key == "response_length/clip_ratio":
                v = min(v, 1.0)
            out[key].append(round(v, 6))
        t += DT * (1 + 0.1 * rnd.random())
        out["_t"].append(t)
    return out


def _ramp(run: Run, key: str, at: int, f: Callable[[float, int], float], span: int | None = None) -> None:
    for i in range(at, len(run[key]) if span is None else min(len(run[key]), at + span)):
        run[key][i] = f(run[key][i], i - at)


#: incident -> (how it is injected into a healthy run at row ``at``, the alert kind that must report it)
INCIDENTS: dict[str, tuple[Callable[[Run, int], None], str]] = {
    "nan": (lambda r, at: _ramp(r, "loss", at, lambda v, j: math.nan, 1), "nonfinite"),
    "loss spike": (lambda r, at: _ramp(r, "loss", at, lambda v, j: v * 20, 1), "spike"),
    "grad blow-up": (lambda r, at: _ramp(r, "grad_norm", at, lambda v, j: v * min(20, 1.1 ** j)), "grad_rise"),
    "reward collapse": (lambda r, at: _ramp(r, "reward", at, lambda v, j: v * max(0.0, 1 - j / 10) * 0.05),
                        "reward_collapse"),
    "entropy collapse": (lambda r, at: _ramp(r, "entropy", at, lambda v, j: v * max(0.03, 1 - j / 20)),
                         "entropy_collapse"),
    "kl blow-up": (lambda r, at: _ramp(r, "kl", at, lambda v, j: v * 50 + 2), "kl_blowup"),
    "saturation": (lambda r, at: _ramp(r, "response_length/clip_ratio", at, lambda v, j: 0.95 + 0.04 * (v % 1),
                                       40), "saturation"),
    "flat": (lambda r, at: _ramp(r, "reward", at, lambda v, j: 0.25), "flat"),
    "stall": (lambda r, at: _ramp(r, "_t", at, lambda v, j: v + 3600.0), "stall"),
}
DETECT_WITHIN = 60  # rows after the injection by which its alert must have come


def alerts(run: Run) -> list[Alert]:
    n = len(run["_t"])
    return scan(list(range(n)), {k: run[k] for k in KEYS}, run["_t"])


def cells(run: Run) -> int:
    return len(run["_t"]) * len(KEYS)


def false_alarms(rows: int, seeds: int) -> dict[str, object]:
    per: list[tuple[float, str, int, list[Alert]]] = []
    for fam in FAMILIES:
        for seed in range(seeds):
            run = healthy(fam, seed, rows)
            found = alerts(run)
            per.append((1e6 * len(found) / cells(run), fam, seed, found))
    total_cells = sum(cells(healthy(FAMILIES[0], 0, rows)) for _ in per)
    total = sum(len(f) for *_, f in per)
    worst = max(per, key=lambda p: p[0])
    kinds: dict[str, int] = {}
    for *_, found in per:
        for a in found:
            kinds[f"{a.kind} {a.column}".strip()] = kinds.get(f"{a.kind} {a.column}".strip(), 0) + 1
    fam_totals = {fam: sum(len(p[3]) for p in per if p[1] == fam) for fam in FAMILIES}
    return {"runs": len(per), "cells": total_cells, "alerts": total, "per_1M": 1e6 * total / total_cells,
            "worst_per_1M": worst[0], "worst": f"{worst[1]} seed {worst[2]}", "by_kind": kinds,
            "by_family": fam_totals, "worst_lines": [a.line() for a in worst[3][:5]]}


def detections(rows: int, seeds: int) -> dict[str, dict[str, int]]:
    """Incident -> {"detected": runs where its kind fired within DETECT_WITHIN rows, "runs": runs injected}."""
    out: dict[str, dict[str, int]] = {}
    for name, (inject, kind) in INCIDENTS.items():
        hit = tried = 0
        for fam in FAMILIES:
            for seed in range(seeds):
                run = healthy(fam, seed, rows)
                at = random.Random(f"{name}-{fam}-{seed}").randrange(rows // 3, rows - 2 * DETECT_WITHIN)
                inject(run, at)
                tried += 1
                # (a stall is reported at the row before the gap)
                hit += any(a.kind == kind and at - 1 <= a.step <= at + DETECT_WITHIN for a in alerts(run))
        out[name] = {"detected": hit, "runs": tried}
    return out


def big_file(path: Path) -> dict[str, float]:
    """The alerts ``summary`` gives on the big stationary-noise file (written by bigfile.py when absent)."""
    tool = Path("/work/shared/tools/bigfile.py")
    subprocess.run([sys.executable, str(tool), str(path)], check=True)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "steptable", "summary", str(path)], capture_output=True, text=True)
    secs = time.perf_counter() - t
    first = next((ln for ln in out.stdout.splitlines() if "alerts" in ln), "")
    n = int(first.split("alerts", 1)[1].split()[0]) if first.split("alerts", 1)[1:] else 0
    rows = sum(1 for _ in path.open())
    cols = len(json.loads(path.open().readline())) - 1
    return {"alerts": n, "cells": rows * cols, "per_1M": 1e6 * n / (rows * cols), "summary_s": secs,
            "lines": out.stdout.strip().splitlines()[-5:]}  # type: ignore[dict-item]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--no-big", action="store_true")
    ap.add_argument("--big", default=str(Path(tempfile.gettempdir()) / "steptable-bench-big" / "metrics.jsonl"))
    a = ap.parse_args()
    fa = false_alarms(a.rows, a.seeds)
    print(f"healthy corpus: {fa['runs']} runs x {a.rows} rows x {len(KEYS)} columns = {fa['cells']:,} cells")
    print(f"  warnings per 1M cells: {fa['per_1M']:.2f} all seeds ({fa['alerts']} alerts), worst seed "
          f"{fa['worst_per_1M']:.2f} ({fa['worst']}); goal <= 1")
    print(f"  by family: {fa['by_family']}")
    print(f"  by kind: {fa['by_kind']}")
    for line in fa["worst_lines"]:  # type: ignore[attr-defined]
        print(f"    {line}")
    det = detections(a.rows, a.seeds)
    print(f"incidents (each in {len(FAMILIES)} families x {a.seeds} seeds, reported within {DETECT_WITHIN} rows):")
    for name, d in det.items():
        print(f"  {name:17} {d['detected']}/{d['runs']}")
    if not a.no_big:
        Path(a.big).parent.mkdir(parents=True, exist_ok=True)
        big = big_file(Path(a.big))
        print(f"big file: {big['alerts']} alerts over {big['cells']:,} cells = {big['per_1M']:.2f} per 1M "
              f"(summary {big['summary_s']:.1f} s)")
        for line in big["lines"]:  # type: ignore[attr-defined]
            print(f"    {line}")


if __name__ == "__main__":
    main()
