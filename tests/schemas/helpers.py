"""Runs for the schema tests: in-memory rows, a fixture file read into its one store, the golden layout of a
run under its detected schema, the routing seed's rows and column order, headers as a reader sees them."""

from __future__ import annotations

import math
import random
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.ingest import RunStore, load
from steptable.schemafiles.resolve import detect
from steptable.schemas import Schema, layout, legend_for
from steptable.table import render
from steptable.table.formatting import display_width

Golden = Callable[[str, str], None]

#: the seed's per-step row, column for column (tests/table/test_render.py pins the same order)
SEED_ORDER = [
    "step", "ref_eq", "rew", "rew_s", "gt_s", "gt_t", "hack_s", "hack_t", "hack_deployed", "solve_deployed",
    "hk_c", "hk_m", "lp_s", "lp_t", "loss", "gn", "lr", "auroc", "cos", "qmass", "keep", "resid", "rout", "tlo",
    "thi", "stale", "hack_abl", "solve_abl",
]


def read_one(path: Path) -> RunStore:
    stores = [s for s in load(path).values() if s.path == path]
    assert len(stores) == 1
    return stores[0]


def render_runs(runs: Sequence[RunStore], schema: Schema, max_width: int | None = None) -> str:
    """Tables of all runs under one layout (arms line up), then the legend of that layout."""
    cols = layout(runs, schema, max_width=max_width)
    parts = []
    for r in runs:
        table = render.table(cols, [schema.derive(row) for row in r.rows()])
        if len(runs) > 1:
            parts.append(render.title_line(r.arm or r.run, render.width(cols)))
        parts.append(table)
        widths = {display_width(line) for line in table.splitlines()}
        assert widths == {render.width(cols)}, "every line of a table has the header's width"
    parts.append(legend_for(list(runs), schema))
    return "\n".join(parts) + "\n"


def check_layout(golden: Golden, name: str, path: Path, schema_name: str, max_width: int | None = None) -> str:
    run = read_one(path)
    schema = detect(run.path, run.keys)
    assert schema.name == schema_name
    text = render_runs([run], schema, max_width)
    golden(f"schema_{name}.txt", text)
    return text


def routing_rows() -> list[dict[str, object]]:
    rng = random.Random(7)
    rows: list[dict[str, object]] = []
    for step in range(6):
        rows.append({
            "step": step, "ref_eq": step * 0.25, "rew": rng.uniform(-1, 1), "rew_s": rng.uniform(-1, 1),
            "gt_s": (rng.randint(0, 32), 32), "gt_t": [rng.randint(0, 32), 32], "hack_s": (step, 32),
            "hack_t": (3, 32), "hack_deployed": math.nan if step % 3 else 0.125,
            "solve_deployed": None if step % 3 else 0.5, "hk_c": step, "hk_m": 0, "lp_s": -0.93, "lp_t": -0.61,
            "loss": -0.0123, "gn": 10 ** (step - 2), "lr": 1e-5, "auroc": 0.5 + step / 20, "cos": -0.02,
            "qmass": 0.3, "keep": 0.5, "resid": 0.25, "rout": 0.25, "tlo": -0.7, "thi": 1.1, "stale": step,
            "hack_abl": (1, 8), "solve_abl": (5, 8), "sec": 12.5,
        })
    return rows


def seen(header: str) -> str:
    """What a reader sees of ``header``: the invisible characters out, accents composed."""
    return unicodedata.normalize("NFC", "".join(ch for ch in header if ch not in INVISIBLE))


def verl_validation_keys(sources: list[str]) -> list[str]:
    """The keys verl's process_validation_metrics gives for val_kwargs.n=4 (the core variable is acc)."""
    keys = []
    for src in sources:
        for var in ("reward", "acc", "score"):
            for n in (1, 2, 4):
                stats = [f"mean@{n}"]
                if n > 1:
                    stats += [f"std@{n}", *(f"{s}@{n}/{m}" for s in ("best", "worst", "maj") for m in ("mean", "std"))]
                for stat in stats:
                    core = var == "acc" and stat.startswith(("mean", "maj", "best")) and f"@{n}" == "@4"
                    keys.append(f"{'val-core' if core else 'val-aux'}/{src}/{var}/{stat}")
    return keys


class Rows:
    """An in-memory run (what ``RunView`` asks for), built from row dicts."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], path: str = "run/metrics.jsonl") -> None:
        self.rows = [dict(r) for r in rows]
        self.keys = list(dict.fromkeys(k for r in rows for k in r))
        self.path = Path(path)

    def column(self, key: str) -> list[Any]:
        return [r.get(key) for r in self.rows]

    def __len__(self) -> int:
        return len(self.rows)


#: characters a terminal draws as nothing (joiners, selectors), as they turn up in logged keys
INVISIBLE = "\u200c\u200d\u034f\ufe00\ufe0f\U000e0100\u180b"
