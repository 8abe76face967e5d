"""steptable.demo.run: the synthetic three-arm run written live through StepLogger: its first rows come before
torch has loaded, it writes the generations the viewer reads, and a second Ctrl-C inside close still closes every
arm."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.app.sidefiles import build_index, side_paths
from steptable.demo import run as demo
from steptable.demo import run as demo_mod
from steptable.logger.steplogger import StepLogger


def test_a_second_ctrl_c_in_one_close_still_closes_every_arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second interrupt, raised by the first arm's close(), does not end the loop over the loggers: the other arms
    are closed too (each has its table.txt, and its run reads as ended, not in progress)."""
    real_close = StepLogger.close
    calls: list[str | None] = []

    def close(self: StepLogger, *args: Any, **kwargs: Any) -> Any:
        calls.append(self.arm)
        out = real_close(self, *args, **kwargs)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the second Ctrl-C, landing while the first arm closes
        return out

    monkeypatch.setattr(StepLogger, "close", close)
    with pytest.raises(KeyboardInterrupt):
        demo.run_demo(tmp_path, steps=3, interval=0, console=False)
    assert calls == list(demo.ARMS)
    for arm in demo.ARMS:
        assert (tmp_path / arm / "table.txt").exists(), arm
        info = json.loads((tmp_path / arm / f"steptable.{arm}.json").read_text())
        assert info.get("closed") is not None, arm


class _Monitor:
    def synthetic_step(self, step: int, hack_p: float) -> dict[str, float]:
        return {"auroc": 0.5, "stale": 0}


def test_the_demo_writes_its_first_rows_while_torch_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every arm's first row is written before the monitors are made (torch's import takes 2-4 s, all that time
    the app would say "No runs ... yet"). Here the "import" ends only once every arm's first row is on disk
    (bounded)."""
    files = [tmp_path / a / "metrics.jsonl" for a in demo_mod.ARMS]
    seen: list[bool] = []

    def slow_monitor(seed: int) -> _Monitor:
        for _ in range(1000):
            if all(f.exists() and f.stat().st_size for f in files):
                break
            threading.Event().wait(0.01)
        seen.append(all(f.exists() and f.stat().st_size for f in files))
        return _Monitor()

    monkeypatch.setattr(demo_mod, "_make_monitor", slow_monitor)
    monkeypatch.setattr(demo_mod, "_torch_installed", lambda: True, raising=False)
    demo_mod.run_demo(tmp_path, steps=3, interval=0, console=False)
    assert seen and all(seen)
    rows = [json.loads(line) for line in (tmp_path / "routeA" / "metrics.jsonl").read_text().splitlines()]
    assert rows[0].get("auroc") is None  # the first row went without the monitor (nan), the rest have it
    assert [r["auroc"] for r in rows[1:]] == [0.5, 0.5]


def test_the_demo_writes_generations_the_viewer_reads(tmp_path: Path) -> None:
    """The demo writes generations side files, which v opens (not "no generations side files")."""
    demo_mod.run_demo(tmp_path, steps=21, interval=0, console=False)
    for arm in demo_mod.ARMS:
        paths = side_paths({"generations": [tmp_path / arm / "generations.jsonl"]})
        index = build_index(paths)
        assert index.steps == [0, 10, 20]
        samples = index.samples(10)
        assert len(samples) == demo_mod.GEN_SAMPLES
        assert all(s.title == "generation" and s.prompt and s.completion and s.reward in (0.0, 1.0) for s in samples)
