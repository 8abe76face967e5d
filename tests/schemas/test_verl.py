"""steptable.schemas.verl: verl's validation columns and layout, step 0 with validation keys only (golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steptable.schemafiles.resolve import detect
from steptable.schemas import SCHEMAS, layout
from tests.schemas.helpers import check_layout, verl_validation_keys
from tests.trainer_logs import write_verl


def test_verl_validation_layout() -> None:
    """Through the verl schema's layout (declared headers reserved): same headers, none with a counter."""

    class Run:
        def __init__(self, keys: list[str]) -> None:
            self.keys = keys
            self.meta: dict[str, str] = {}

        def column(self, key: str) -> list[float]:
            return [0.5, 0.25]

        def __len__(self) -> int:
            return 2

    keys = ["step", "actor/entropy", "critic/score/mean", "timing_s/step", *verl_validation_keys(["openai/gsm8k"])]
    cols = layout([Run(keys)], SCHEMAS["verl"])  # type: ignore[list-item]
    headers = {c.key: c.header.strip() for c in cols}
    assert len(set(headers.values())) == len(headers)
    assert headers["val-aux/openai/gsm8k/acc/worst@2/std"] == "acc/worst@2/std"
    assert not [h for h in headers.values() if "~" in h or "opena" in h]


def test_verl_step_zero_validation_only() -> None:
    keys = ["step", "val-core/openai/gsm8k/reward/mean@1", "val-aux/openai/gsm8k/reward/std@1"]
    assert detect(Path("p/exp.jsonl"), keys).name == "verl"
    assert detect(Path("p/run.log"), ["step", "val/test_score/countdown"]).name == "tinyzero"


Golden = Callable[[str, str], None]


def test_verl(tmp_path: Path, golden: Golden) -> None:
    text = check_layout(golden, "verl", write_verl(tmp_path / "proj" / "exp.jsonl"), "verl", max_width=160)
    assert text.splitlines()[0].split()[:4] == ["step", "score", "reward", "pg_loss"]
