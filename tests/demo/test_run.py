"""`steptable demo` stopped by two quick Ctrl-Cs (``timeout -s INT`` signals the child, then its process group)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from steptable.demo import run as demo
from steptable.logger.steplogger import StepLogger


def test_a_second_ctrl_c_in_one_close_still_closes_every_arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second interrupt, raised by the first arm's close(), ended the loop over the loggers: the other arms were
    never closed (no table.txt, their runs read as still in progress)."""
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
