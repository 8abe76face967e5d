"""Fixtures of tests/ingest (runs written by wandb, trackio) shared with the command tests."""

from tests.ingest.conftest import trackio_dir, wandb_run

__all__ = ["trackio_dir", "wandb_run"]
