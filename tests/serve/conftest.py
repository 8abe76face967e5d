"""Fixtures of the serve tests: a demo run, and a server over it for the module."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from steptable.demo.run import run_demo

    out = tmp_path_factory.mktemp("demo")
    run_demo(out, steps=30, interval=0, console=False)
    return out


@pytest.fixture(scope="module")
def server(demo_dir: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``steptable serve`` over the demo run: its port and process."""
    from tests.serve.helpers import serving  # (aiohttp: the modules that use it skip without it)

    with serving(demo_dir) as started:
        yield started
