"""steptable.schemas.generic: a run no trainer's schema claims is laid out from its data (golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect
from steptable.schemas import layout
from tests.helpers import write_rows
from tests.schemas.helpers import check_layout, read_one, render_runs
from tests.trainer_logs import write_generic

Golden = Callable[[str, str], None]


def test_generic(tmp_path: Path, golden: Golden) -> None:
    path = write_generic(tmp_path / "run.jsonl")
    text = check_layout(golden, "generic", path, "generic")
    assert text.splitlines()[0].split()[0] == "step"
    narrow = render_runs([read_one(path)], detect(path, read_one(path).keys), max_width=60)
    golden("schema_generic60.txt", narrow)


def test_evaluation_metrics_lead_though_they_are_on_few_rows(tmp_path: Path) -> None:
    """An evaluation every 10th step ranks, by presence, below a constant setting; it is the run's headline and
    leads the undeclared keys, in a narrow layout too. Its own timings (HF's eval_runtime) are ranked as any key."""
    path = tmp_path / "run.jsonl"
    rows = []
    for step in range(1, 41):
        row: dict[str, float] = {"step": step, "loss": 1 / step, "clip_range": 0.2, "lr": 3e-4}
        if step % 10 == 0:
            row |= {"eval/mean_reward": 20.0 + step, "val_loss": 2 / step, "eval_runtime": 1.5 + step / 100}
        rows.append(row)
    write_rows(path, rows)
    run = read_one(path)
    schema = detect(path, run.keys)
    assert schema.name == "generic"
    keys = [c.key for c in layout([run], schema)]
    assert keys[:3] == ["step", "eval/mean_reward", "val_loss"]
    assert keys.index("loss") < keys.index("eval_runtime")
    narrow = [c.key for c in layout([run], schema, max_width=40)]
    assert "eval/mean_reward" in narrow and "clip_range" not in narrow
