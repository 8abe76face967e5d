"""A live reader's alerts at a resume read the rows the store holds now, not the crashed run's replaced ones: a run
restarted from step 0 in its directory was a "reward collapse" against the old run's rewards under tail -f and in
the app, while a one-shot read said nothing."""

from __future__ import annotations

from pathlib import Path

from tests.alerts.helpers import reward_rows, write_finished_run
from tests.cli.helpers import Live
from tests.helpers import write_rows


def test_tail_f_after_a_restart_from_step_0_says_no_collapse(tmp_path: Path) -> None:
    path = write_finished_run(tmp_path)
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    write_rows(path, reward_rows(range(30), 0.2, 2))  # a new run from scratch in the same directory: rewards start low
    live.step()
    assert "collapse" not in live.out.getvalue(), live.out.getvalue()


def test_a_resume_mid_run_still_sees_a_real_collapse_after_it(tmp_path: Path) -> None:
    # resumed at step 100 (the rows before it kept): a collapse after the resume is still a collapse
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, reward_rows(range(120), 0.8, 3))
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    write_rows(path, reward_rows(range(100, 130), 0.8, 4) + reward_rows(range(130, 160), 0.05, 5))
    live.step()
    assert "rew collapse" in live.out.getvalue(), live.out.getvalue()
