"""steptable.schemas.tinker: tinker-cookbook's metrics and side files (golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemas import side_file
from tests.schemas.helpers import check_layout
from tests.trainer_logs import write_tinker


def test_tinker_side_files_each_claimed(tmp_path: Path) -> None:
    out = write_tinker(tmp_path)
    kinds = {name: (side_file(p) or (None, None))[1] for name, p in out.items() if name not in ("log_path", "metrics")}
    assert {n: sf.kind if sf else None for n, sf in kinds.items()} == {
        "config": "config", "checkpoints": "checkpoints", "rollouts": "rollout_summaries", "timing": "timing_spans",
    }
    assert side_file(out["metrics"]) is None


Golden = Callable[[str, str], None]


def test_tinker(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "tinker", write_tinker(tmp_path)["metrics"], "tinker", max_width=140)
    assert "test_rew" in text.splitlines()[0]
