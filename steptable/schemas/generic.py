"""generic: any other JSONL (or CSV, console) run. Nothing is declared; ``layout`` builds the columns from the data.

The step comes first (``step``, or the first of ``base.STEP_KEYS`` the file has); then the evaluation metrics
(:data:`RULES`: ``eval/...``, ``val_loss``, ``test/...``, as the trainer schemas promote theirs), then every other key
ranked by how much it tells (present on most rows, varying, numeric before text), with prefix-aware short headers
and widths taken from the data; ``max_width`` keeps the leading ones that fit. Every key stays reachable by a column
filter (``layout(..., patterns=[...])``).
"""

from __future__ import annotations

from steptable.schemas.base import Schema
from steptable.schemas.parts import EVALUATION, Rule

#: An evaluation is logged every so many steps, so its metrics are on few rows and would rank below a constant
#: setting (SB3's ``eval/mean_reward`` behind ``train/clip_range``); they are the run's headline, so they lead. The
#: evaluation's own timings (HF Trainer's, as its TensorBoard and W&B files name them) are ranked as any key.
RULES = (
    *(Rule(p, "seconds the evaluation took") for p in ("eval/runtime", "eval_runtime")),
    *(Rule(p, "evaluation throughput ({key})") for p in ("eval/*_per_second", "eval_*_per_second")),
    *(Rule(p, EVALUATION, promote=True) for p in ("eval/*", "eval_*", "val/*", "val_*", "test/*", "test_*")),
)

SCHEMA = Schema("generic", (), "any JSONL: columns chosen from the data", rules=RULES)
