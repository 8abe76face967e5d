"""Alerts review 8: a live reader's engine at a mid-run resume keeps the run-long levels the one-shot read has; no
spike when a column leaves an exact-0 stretch; no z against a reference that never varied, and no E "to floor" from
the floor itself; the merged non-finite line names every column with its value."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.helpers import write_rows


def test_tail_and_summary_agree_on_a_tinker_kl_logged_without_its_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # tail fed the layout's rows (the alias filled in as optim/kl_sample_train_v1) to its alerts, summary and the
    # app the stored ones: an E in tail, "alerts 0" in summary
    from tests.helpers import run_cli

    rng = random.Random(3)
    rows = [{"step": s, "progress/done_frac": s / 300, "env/all/reward/total": 0.5 + rng.gauss(0, 0.02),
             "optim/lr": 1e-5, "kl_sample_train_v1": (0.001 if s < 250 else 0.24) * (1 + rng.gauss(0, 0.05))}
            for s in range(300)]
    write_rows(tmp_path / "tinker" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and "step 250 kl_sample_train_v1 blow-up" in out, out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "E step 250 kl_sample_train_v1 blow-up" in out, out
