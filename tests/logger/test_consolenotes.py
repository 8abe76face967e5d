"""steptable.logger.consolenotes: the lines a StepLogger prints around its rows; here, the columns a header no longer
has room for."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from steptable import StepLogger
from steptable.logger.autocols import AutoColumns
from steptable.logger.consolenotes import left_out


def test_columns_a_header_leaves_out_are_named_once(captured: list[str]) -> None:
    """A column printed on the first rows and gone from a later header (the others widened past the line) was
    dropped without a word: it read as never logged again. The line that names it comes with that header, once."""
    lg = StepLogger(AutoColumns(max_width=40), alerts=False)
    for step in range(40):
        lg.log({"step": step, "grow": -0.5 * 10 ** (step / 4), **{f"m{i}": 0.25 + i / 100 for i in range(12)}})
    lg.close()
    lines = [line.rstrip("\n") for line in captured]
    # (a header's unit, "grow e4", is no column)
    headers = [{h for h in line.split()[1:] if not re.fullmatch(r"e-?\d+", h)} for line in lines
               if re.match(r"I step ", line)]
    gone = set().union(*(a - b for a, b in itertools.pairwise(headers)))
    assert gone, headers  # (the widening left columns out)
    told = [line for line in lines if line.startswith("I left out: ")]
    named = {k for line in told for k in re.findall(r"[\w/]+", line.split(": ", 1)[1].split(" (")[0])}
    assert gone <= named and len(told) == len(set(told)), (gone, told)
    assert all(len(line) <= 40 for line in told)  # (in the line's room: it wraps nowhere)


def test_the_line_fits_its_room_counting_what_does_not() -> None:
    keys = [f"metric_{i:02d}" for i in range(8)]
    assert left_out(keys[:2], None) == "left out: metric_00, metric_01 (all in table.txt)"
    short = left_out(keys, 60)
    assert len(short) <= 60 and short.startswith("left out: metric_00") and re.search(r" \+\d+ \(all in", short)
    assert left_out(keys, 10) == "left out: 8 column(s) (all in table.txt)"  # (no name fits: the count)


def test_a_logger_without_a_run_dir_names_no_table_file(tmp_path: Path, captured: list[str]) -> None:
    """A console-only logger said the columns it left out were "(all in table.txt)": it writes no table.txt. With a
    run directory the line names the file it writes there."""
    row = {f"metric_{i:02d}": 0.25 + i / 100 for i in range(12)}
    for run_dir in (None, tmp_path):
        with StepLogger(AutoColumns(max_width=40), run_dir=run_dir, alerts=False) as lg:
            lg.log({"step": 0, **row})
    told = [line for line in captured if line.startswith("I left out: ")]
    assert len(told) == 2 and told[0].rstrip().endswith("(no run_dir)"), told
    assert told[1].rstrip().endswith("(all in table.txt)") and (tmp_path / "table.txt").exists()


_LEFT_OUT_RUN = """
from steptable import StepLogger
from steptable.logger.autocols import AutoColumns
with StepLogger(AutoColumns(max_width=40), alerts=False, console=True) as lg:
    for step in range(4):  # (from step 1 the first column takes the room of several: they go at once)
        big = -0.5 if step == 0 else -1234567.5
        lg.log({"step": step, "g1": big, "g2": big, **{f"m{i}": 0.25 for i in range(12)}})
"""


def test_the_columns_left_out_are_named_in_their_order_whatever_the_hash_seed() -> None:
    """The names came out of a set, in an order that changed with each process's string hashing."""
    import os
    import subprocess
    import sys

    said = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run([sys.executable, "-c", _LEFT_OUT_RUN], capture_output=True, text=True, env=env,
                              timeout=120)
        said.add(tuple(line.split("left out: ")[1] for line in (done.stdout + done.stderr).splitlines()
                       if "left out: " in line))
    assert len(said) == 1 and next(iter(said)), said
