"""The command tests' fixtures: a demo run, and two unrelated CSV logs side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.demo.run import run_demo
from tests.trainer_logs import write_lightning, write_sb3


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short demo run (three arms, 30 steps) written once per test module."""
    d = tmp_path_factory.mktemp("demo")
    run_demo(d, steps=30, interval=0, console=False)
    return d


@pytest.fixture
def lightning_sb3(tmp_path: Path) -> Path:
    """A Lightning CSVLogger run and an SB3 run side by side."""
    write_lightning(tmp_path / "lightning_logs" / "version_0")
    write_sb3(tmp_path / "sb3_ppo")
    return tmp_path
