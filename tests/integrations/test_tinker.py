"""The tinker-cookbook logger: its ml_log.Logger methods, and the swap for the cookbook's pretty printer (against the
installed tinker-cookbook where there is one)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import sys
from pathlib import Path

import pytest

from steptable.integrations.tinker import StepTableLogger, use_steptable
from tests.integrations.helpers import info_of, rows_of

E = inspect.Parameter.empty
#: ml_log.Logger's methods as tinker-cookbook 0.6 declares them, (name, default) per parameter (checked against the
#: real class where tinker-cookbook is installed)
SIGNATURES = {
    "log_hparams": [("self", E), ("config", E)],
    "log_metrics": [("self", E), ("metrics", E), ("step", None)],
    "enable_event_steps": [("self", E)],
    "log_metrics_event": [("self", E), ("metrics", E), ("step", E), ("step_metric", E), ("metric_axes", None)],
    "log_summary": [("self", E), ("metrics", E)],
    "log_long_text": [("self", E), ("key", E), ("text", E)],
    "close": [("self", E)],
    "sync": [("self", E)],
    "get_logger_url": [("self", E)],
}


def params(fn: object) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]


def test_the_loggers_methods_are_ml_logs() -> None:
    for name, sig in SIGNATURES.items():
        assert params(getattr(StepTableLogger, name)) == sig, name


def test_the_recorded_signatures_are_the_installed_cookbooks() -> None:
    ml_log = pytest.importorskip("tinker_cookbook.utils.ml_log")
    for name in SIGNATURES:
        assert params(getattr(ml_log.Logger, name)) == SIGNATURES[name], name


@dataclasses.dataclass
class Config:
    model_name: str = "tiny"
    learning_rate: float = 4e-5
    group_size: int = 8


def rl_loop(ml_logger: object, steps: int = 6, raise_at: int | None = None) -> None:
    """As the cookbook's RL loop logs: the step's metrics, and at every third step the test set's, at that step."""
    for i in range(steps):
        if i == raise_at:
            raise TimeoutError("sampling client")
        ml_logger.log_metrics({"progress/batch": i, "optim/lr": 4e-5, "env/all/reward/total": 0.1 * i,  # type: ignore[attr-defined]
                               "env/all/ac_tokens_per_turn": 100 + i, "time/total": 1.5}, step=i)
        if i % 3 == 2:
            ml_logger.log_metrics({"test/env/all/reward/total": 0.05 * i}, step=i)  # type: ignore[attr-defined]


def test_alone_one_row_per_step_with_evals_merged(tmp_path: Path) -> None:
    lg = StepTableLogger(tmp_path / "run", arm="rl")
    lg.log_hparams(Config())
    rl_loop(lg)
    lg.close()
    rows = rows_of(tmp_path / "run")
    assert [r["step"] for r in rows] == list(range(6))
    assert [r["step"] for r in rows if "test/env/all/reward/total" in r] == [2, 5]
    assert rows[4]["env/all/reward/total"] == pytest.approx(0.4) and rows[5]["test/env/all/reward/total"] == 0.25
    assert json.loads((tmp_path / "run" / "args.json").read_text()) == dataclasses.asdict(Config())
    assert info_of(tmp_path / "run", "rl")["closed"] is not None


def test_a_log_without_a_step_is_a_row_of_its_own(tmp_path: Path) -> None:
    """``ml_log.Logger.log_metrics(metrics, step=None)``: every step-less call went into one row, each overwriting
    the last. Each is a row at the step after the last call's, as the cookbook's JsonLogger writes a line a call."""
    lg = StepTableLogger(tmp_path / "run", console=False)
    for i in range(5):
        lg.log_metrics({"loss": 1.0 / (i + 1)})
    lg.log_metrics({"loss": 0.1}, step=10)
    lg.log_metrics({"reward": 0.5})
    lg.close()
    rows = rows_of(tmp_path / "run")
    assert [(r["step"], r.get("loss")) for r in rows] == [(0, 1.0), (1, 0.5), (2, 1 / 3), (3, 0.25), (4, 0.2),
                                                          (10, 0.1), (11, None)]
    assert rows[-1]["reward"] == 0.5


@pytest.mark.usefixtures("rank_one")
def test_rank_one_writes_nothing(tmp_path: Path) -> None:
    lg = StepTableLogger(tmp_path / "run")
    lg.log_hparams(Config())
    rl_loop(lg)
    lg.close()
    assert not (tmp_path / "run").exists()


def test_a_loop_that_raises_is_marked_ended_with_its_error(tmp_path: Path) -> None:
    lg = StepTableLogger(tmp_path / "run")
    with pytest.raises(TimeoutError) as caught:
        rl_loop(lg, raise_at=4)
    sys.excepthook(caught.type, caught.value, caught.tb)  # what the interpreter does with it, uncaught
    assert [r["step"] for r in rows_of(tmp_path / "run")] == [0, 1, 2, 3]
    assert info_of(tmp_path / "run")["end"] == "TimeoutError"


def test_use_steptable_swaps_the_pretty_printer(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    ml_log = pytest.importorskip("tinker_cookbook.utils.ml_log")
    caplog.set_level(logging.INFO, logger="tinker_cookbook")
    plain = ml_log.setup_logging(str(tmp_path / "a"), config=Config(), do_configure_logging_module=False)
    rl_loop(plain, steps=2)
    plain.close()
    assert sum("Metric" in r.getMessage() for r in caplog.records) == 2  # a rich table a step
    caplog.clear()

    ml_logger = use_steptable(ml_log.setup_logging(str(tmp_path / "b"), do_configure_logging_module=False),
                              run_dir=tmp_path / "rows")
    rl_loop(ml_logger)
    ml_logger.close()
    assert not any("Metric" in r.getMessage() for r in caplog.records)
    out = capsys.readouterr().out
    assert [ln.split()[1] for ln in out.splitlines() if ln.startswith("I ") and ln.split()[1:2]
            and ln.split()[1].isdigit()] == ["0", "1", "2", "3", "4", "5"]
    assert [r["step"] for r in rows_of(tmp_path / "rows")] == list(range(6))
    cookbook = [json.loads(ln) for ln in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert len(cookbook) == 8  # the JsonLogger's file as it was: one line a call

    with pytest.raises(ValueError, match="log_dir"):
        use_steptable(ml_log.setup_logging(str(tmp_path / "c"), do_configure_logging_module=False),
                      run_dir=tmp_path / "c")
