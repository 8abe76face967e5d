"""A W&B run's facts from its run and exit records (steptable.ingest.readers.wandbfacts); on files wandb wrote, with
the reader: tests/ingest/readers/test_wandb.py (the exit code, the config) and test_wandbwalk.py (the run's end)."""

from __future__ import annotations

from typing import Any

from steptable.ingest.readers.wandbfacts import RunFacts


def test_run_record_gives_name_project_and_config_without_wandbs_own() -> None:
    meta: dict[str, Any] = {}
    RunFacts().run({"name": "arm", "project": "", "start": 0.0,
                    "config": [(b"_wandb", b"{}"), (b"lr", b"0.001"), (b"note", b"not json")]}, meta)
    assert meta == {"name": "arm", "project": "", "config": {"lr": 0.001, "note": "not json"}}


def test_the_run_closed_at_its_last_rows_clock_else_at_its_start_plus_runtime() -> None:
    facts, meta = RunFacts(), {}
    facts.run({"name": "", "project": "p", "start": 1000.0, "config": []}, meta)
    facts.exit((0, 50), b'{"_step":3,"_timestamp":1040.5}', meta)
    assert meta["runinfo"] == {"closed": 1040.5}
    facts = RunFacts()
    facts.run({"name": "", "project": "p", "start": 1000.0, "config": []}, meta)
    facts.exit((-9, 50), b"", meta)
    assert meta["runinfo"] == {"closed": 1050.0, "end": "exit_code_minus_9"}
