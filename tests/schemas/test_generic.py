"""steptable.schemas.generic: a run no trainer's schema claims is laid out from its data (golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect
from tests.schemas.helpers import check_layout, read_one, render_runs
from tests.trainer_logs import write_generic

Golden = Callable[[str, str], None]


def test_generic(tmp_path: Path, golden: Golden) -> None:
    path = write_generic(tmp_path / "run.jsonl")
    text = check_layout(golden, "generic", path, "generic")
    assert text.splitlines()[0].split()[0] == "step"
    narrow = render_runs([read_one(path)], detect(path, read_one(path).keys), max_width=60)
    golden("schema_generic60.txt", narrow)
