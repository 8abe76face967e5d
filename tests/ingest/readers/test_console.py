"""steptable.ingest.readers.console: TinyZero / verl console lines (``step:N - key:value``) found among noise,
ended at a carriage return, keys without their hyperlinks and colours."""

from __future__ import annotations

import math
from pathlib import Path

from steptable.ingest import Follower
from steptable.ingest.readers.console import parse_console_line
from tests.ingest.helpers import only

TINYZERO_LOG = """\
2025-01-01 12:00:00,000 INFO worker.py:1 -- Started a local Ray instance.
(main_task pid=4242) Training from scratch
\x1b[36m(main_task pid=4242)\x1b[0m step:0 - critic/kl:0.000 - actor/entropy_loss:0.693 - mfu/actor:0.12 - \
val/test_score/countdown:0.05
(main_task pid=4242) step:1 - critic/kl:0.001 - actor/entropy_loss:nan - mfu/actor:0.13
Traceback (most recent call last):
  File "/x/ray_trainer.py", line 910, in fit
    metrics.update({'step:': global_step})
ValueError: step:abc - not a metric
(WorkerDict pid=99) global_step:7 - loss:1.0
(main_task pid=4242) step:2 - critic/kl:0.002 - actor/entropy_loss:0.690 - mfu/actor:0.14
"""


def test_tinyzero_console_lines_amid_noise(tmp_path: Path) -> None:
    path = tmp_path / "countdown" / "train.log"
    path.parent.mkdir()
    path.write_text(TINYZERO_LOG)
    (tmp_path / "countdown" / "notes.txt").write_text("nothing to see\nstep: here\n")
    f = Follower([tmp_path])
    f.scan()
    store = only(f.stores)
    assert store.run == "countdown/train.log" and store.arm == "countdown" and store.kind == "console"
    assert list(store.steps) == [0, 1, 2]
    assert store.value(0, "val/test_score/countdown") == 0.05 and math.isnan(store.value(1, "actor/entropy_loss"))
    assert store.column("critic/kl").tolist() == [0.0, 0.001, 0.002] and "loss" not in store.keys
    with open(path, "a") as fh:
        fh.write("(main_task pid=4242) step:3 - critic/kl:0.003 - actor/entropy_loss:0.68 - mfu/actor:0.15\n")
    assert f.scan() == {"countdown/train.log"} and len(store) == 4


def test_console_log_becomes_a_run_when_metrics_appear(tmp_path: Path) -> None:
    path = tmp_path / "job" / "slurm-1.out"
    path.parent.mkdir()
    path.write_text("loading model...\n")
    f = Follower([tmp_path])
    assert f.scan() == set() and f.stores == {}
    with open(path, "a") as fh:
        fh.write("step:0 - actor/pg_loss:0.5\n")
    assert f.scan() == {"job/slurm-1.out"}


def test_console_line_values() -> None:
    row = parse_console_line("critic/kl:0.001 - actor/entropy_loss:nan - mfu/actor:np.float64(0.25) - n:3 - x:abc")
    assert row is not None
    assert row["critic/kl"] == 0.001 and math.isnan(row["actor/entropy_loss"]) and row["mfu/actor"] == 0.25
    assert row["n"] == 3 and row["x"] == "abc"


def test_console_metrics_end_at_a_carriage_return() -> None:
    """A progress bar redrawn over the metrics line (tqdm writes ``\\r``) is not part of the last value; a metrics
    line drawn after a bar on the same line is still found; CRLF endings read as LF."""
    from steptable.ingest.readers.console import ConsoleParser

    chunk = (b"step:1 - loss:0.5 - acc:0.25\r 40%|####      | 4/10 [00:04<00:06]\n"
             b" 50%|#####     | 5/10\rstep:2 - loss:0.4 - acc:0.5\r\n")
    parsed = ConsoleParser("x").parse(chunk)
    assert parsed.steps == [1, 2]
    assert parsed.rows == [{"step": 1, "loss": 0.5, "acc": 0.25}, {"step": 2, "loss": 0.4, "acc": 0.5}]


def test_console_hyperlinks_and_colours_are_not_part_of_keys() -> None:
    """A coloured log whose keys are OSC 8 hyperlinks (ended by ESC \\ or BEL): the keys read as their text; an
    unterminated OSC does not swallow the next line."""
    from steptable.ingest.readers.console import ConsoleParser

    chunk = (b"step:1 - \x1b]8;;http://x\x1b\\loss\x1b]8;;\x1b\\:0.5 - \x1b]8;;http://y\x07acc\x1b]8;;\x07:0.25"
             b" - \x1b[31mkl\x1b[0m:0.1\n\x1b]0;title\nstep:2 - loss:0.4\n")
    parsed = ConsoleParser("x").parse(chunk)
    assert parsed.rows == [{"step": 1, "loss": 0.5, "acc": 0.25, "kl": 0.1}, {"step": 2, "loss": 0.4}]
