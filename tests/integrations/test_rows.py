"""What every adapter shares: no framework imported by steptable itself, a one-line hint without the extra, and the
automatic columns of the first row."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from steptable.logger.autocols import auto_columns

ADAPTERS = {
    "hf": "transformers",
    "lightning": "lightning",
    "accelerate": "accelerate",
    "sb3": "stable_baselines3",
}


def test_importing_steptable_imports_no_framework() -> None:
    code = ("import sys, steptable, steptable.integrations.rows, steptable.integrations.tinker\n"
            "from steptable import StepLogger\n"
            f"print(sorted(m for m in {sorted([*ADAPTERS.values(), 'tinker_cookbook'])!r} if m in sys.modules))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("adapter", "framework"), sorted(ADAPTERS.items()))
def test_without_the_extra_one_line_names_it(adapter: str, framework: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [framework, *(m for m in sys.modules if m.startswith(framework + "."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed (submodules a test before loaded too)
    monkeypatch.delitem(sys.modules, f"steptable.integrations.{adapter}", raising=False)
    with pytest.raises(ImportError) as caught:
        importlib.import_module(f"steptable.integrations.{adapter}")
    msg = str(caught.value)
    assert msg == f"steptable.integrations.{adapter} needs {framework}: pip install 'steptable[{adapter}]'"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_use_steptable_without_tinker_cookbook_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.integrations.tinker import use_steptable

    monkeypatch.setitem(sys.modules, "tinker_cookbook", None)
    monkeypatch.setitem(sys.modules, "tinker_cookbook.utils", None)
    monkeypatch.setitem(sys.modules, "tinker_cookbook.utils.ml_log", None)
    with pytest.raises(ImportError, match=r"pip install 'steptable\[tinker\]'"):
        use_steptable(object())


def test_auto_columns_take_the_trl_schema_for_trl_keys() -> None:
    row = {"step": 1, "loss": 0.1, "reward": 0.5, "reward_std": 0.2, "kl": 0.01, "completions/mean_length": 120.0,
           "grad_norm": 1.2, "learning_rate": 1e-6, "epoch": 0.1, "frac_reward_zero_std": 0.25}
    cols = auto_columns(row, expect=["eval_loss"], max_width=200)
    heads = {c.key: c.header for c in cols}
    assert heads["reward"] == "reward" and heads["frac_reward_zero_std"] == "zero_sd"  # the trl schema's headers
    assert "eval_loss" in heads and cols[0].key == "step"


def test_auto_columns_rank_generic_keys_and_fit_the_width() -> None:
    row = {"step": 0, **{f"metric_{i:02d}": i * 0.37 for i in range(40)}, "note": "x"}
    cols = auto_columns(row, max_width=80)
    assert cols[0].key == "step" and sum(c.width + 1 for c in cols) - 1 <= 80
    assert all(c.desc == "" for c in cols[1:])  # "as logged" says nothing: no legend line paid for it
    assert auto_columns(row, max_width=400)[-1].key == "note"  # text ranks after numbers


def test_a_run_log_with_an_unknown_schema_says_so_and_lays_out_its_rows_as_detected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable.integrations.rows import RunLog

    run = RunLog(tmp_path / "run", schema="no-such-schema", expect=("eval_loss",), rank=0)
    run.add({"loss": 0.5, "learning_rate": 1e-6}, step=1)
    run.add({"loss": 0.25, "learning_rate": 1e-6}, step=2)
    run.close()
    out = capsys.readouterr()
    assert "schema 'no-such-schema' not used" in out.out + out.err
    # as the generic schema lays them out: the expected evaluation key kept, and leading
    assert run.logger is not None and [c.key for c in run.logger.cols] == ["step", "eval_loss", "loss", "learning_rate"]


def test_runs_going_at_the_same_time_keep_the_first_runs_verbose_log(tmp_path: Path) -> None:
    """Two RunLogs open at once (the sinks are the process's): the second does not take the verbose log over, so
    the first run's later rows never land in the second run's file, read as the second run's; one run after the
    other, each has its own (tests/integrations/test_hf.py)."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from steptable.integrations.rows import RunLog
        root = Path(sys.argv[1])
        a = RunLog(root / "a", "a", console=True, rank=0)
        for s in range(3):
            a.add({"loss_a": 101 + s}, s)
        b = RunLog(root / "b", "b", console=True, rank=0)
        for s in range(3):
            b.add({"loss_b": 201 + s}, s)
        for s in range(3, 6):
            a.add({"loss_a": 101 + s}, s)
        a.close()
        b.close()
        c = RunLog(root / "c", "c", console=True, rank=0)
        c.add({"loss_c": 301}, 0)
        c.close()
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    a_log = "".join(p.read_text() for p in (tmp_path / "a").glob("*.log"))
    b_log = "".join(p.read_text() for p in (tmp_path / "b").glob("*.log"))
    assert sorted(re.findall(r"\b(10\d)\n", a_log)) == [str(101 + s) for s in range(6)], a_log
    assert not re.findall(r"\b(10\d)\n", b_log), b_log
    assert "301" in "".join(p.read_text() for p in (tmp_path / "c").glob("*.log"))  # (both ended: its own again)


def test_a_run_log_of_a_rank_that_writes_nothing_leaves_sigterm_at_its_default(tmp_path: Path) -> None:
    """A RunLog holds its open row for SIGTERM only where it may write it: a rank known to write nothing (given,
    or torchrun's RANK) gets no handler, which would only delay its death in a hung collective (as a StepLogger's)."""
    caught = {}
    for how in ("rank=1", "env", "rank=0"):
        script = textwrap.dedent(f"""
            import os, signal, sys
            if {how!r} == "env":
                os.environ["RANK"] = "1"
            from steptable.integrations.rows import RunLog
            run = RunLog(sys.argv[1], console=False{", rank=" + how[-1] if how != "env" else ""})
            print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        """)
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / how)], capture_output=True, text=True,
                              timeout=120, cwd=Path(__file__).resolve().parents[2], env=env)
        caught[how] = done.stdout.strip()
    assert caught == {"rank=1": "False", "env": "False", "rank=0": "True"}
