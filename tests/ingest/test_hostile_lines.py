"""Pathological lines: out-of-range numbers, bare NaN lists, lone surrogates among many backslashes, a console
value past int()'s 4,300-digit limit. Each costs at most its own cell; the repairs scan a line once (their speed is
bench/bench_fuzz.py's; here: what they keep, and that a command stops at once while it parses the worst one)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steptable.ingest.jsonfix import quote_bignums, quote_nonfinite, replace_lone_surrogates
from steptable.ingest.parse import decode_line, flatten
from steptable.ingest.readers.console import ConsoleParser, console_value
from steptable.ingest.readers.hf import parse_trainer_state
from tests.helpers import readline_within, run_cli

ROOT = Path(__file__).resolve().parents[2]


def row_of(line: bytes) -> dict[str, object]:
    raw = decode_line(line)
    assert raw is not None
    return flatten(raw)


def test_an_integer_past_the_decoders_range_is_one_float_cell() -> None:
    row = row_of(b'{"step": 1, "loss": ' + b"9" * 50_000 + b', "kl": 0.5}')
    assert row["loss"] == math.inf and row["kl"] == 0.5
    row = row_of(b'{"step": 2, "big": 123456789012345678901234567890, "neg": -99999999999999999999}')
    assert row["big"] == 123456789012345678901234567890 and row["neg"] == -99999999999999999999
    row = row_of(b'{"step": 3, "max": 18446744073709551615, "min": -9223372036854775808}')
    assert row["max"] == 2**64 - 1 and row["min"] == -(2**63)  # (in range: kept exact)


def test_number_and_nan_repairs_leave_strings_alone() -> None:
    line = b'{"step":1,"s":"1e999 NaN \\" 99999999999999999999999","x":1e999,"n":NaN}'
    assert quote_bignums(line) == line.replace(b'"x":1e999', b'"x":"Infinity"')
    assert b'"n":"NaN"' in quote_nonfinite(line) and b'"1e999 NaN' in quote_nonfinite(line)
    unclosed = b'{"a":"' + b'\\"' * 1000 + b" NaN"  # a string running to the end: no token in it
    assert quote_nonfinite(unclosed) == unclosed


def test_a_long_list_of_bare_nan_is_read_whole() -> None:
    row = row_of(b'{"step":1,"x":[' + b",".join([b"NaN"] * 200_000) + b"]}")
    assert row["x"] == ["NaN"] * 200_000  # (the sentinel a list keeps; a cell's is read back as a float)


def test_a_lone_surrogate_among_many_backslashes() -> None:
    line = b'{"step":1,"s":"\\ud800","t":"' + b"\\\\" * 80_000 + b'"}'
    assert replace_lone_surrogates(b'"\\\\\\ud800"') == b'"\\\\\\ufffd"'  # an odd run: an escape
    assert replace_lone_surrogates(b'"\\\\ud800"') == b'"\\\\ud800"'  # an even run: text
    row = row_of(line)
    assert row["s"] == "\ufffd" and row["t"] == "\\" * 80_000


def test_a_trainer_state_with_a_50k_digit_integer_keeps_its_entries() -> None:
    data = b'{"log_history": [{"step": 1, "loss": 0.5}, {"step": 2, "loss": ' + b"9" * 50_000 + b"}]}"
    parsed = parse_trainer_state(data)
    assert list(parsed.steps) == [1, 2] and parsed.rows is not None and parsed.rows[1]["loss"] == math.inf


def test_a_console_value_past_the_digit_limit_costs_one_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert console_value("9" * 5000) == math.inf and console_value("-" + "1" * 4500) == -math.inf
    lines = [f"step:{i} - loss:{1 / (i + 1):.4f} - kl:0.1\n" for i in range(50)]
    lines[25] = "step:25 - loss:" + "9" * 5000 + " - kl:0.1\n"
    parsed = ConsoleParser("t").parse("".join(lines).encode())
    assert len(parsed.steps) == 50 and parsed.rows is not None and parsed.rows[25]["kl"] == 0.1
    (tmp_path / "train.log").write_text("".join(lines))
    rc, out, err = run_cli(["tail", str(tmp_path / "train.log"), "-n", "0", "--format", "jsonl"], capsys)
    assert rc == 0 and len(out.splitlines()) == 50 and "internal error" not in err


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("what", ["bigint", "nan"])
def test_tail_f_stops_soon_after_term_while_parsing_the_worst_line(tmp_path: Path, what: str) -> None:
    """The 8 MiB line limit's worst lines took minutes in the repairs; a TERM waited for them. Generous bound:
    the behaviour, not the speed (bench/bench_fuzz.py has the figures)."""
    body = b"9" * 4_000_000 if what == "bigint" else b"[" + b",".join([b"NaN"] * 1_500_000) + b"]"
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"step":0,"loss":1}\n' * 1000 + b'{"step":1,"x":' + body + b"}\n")
    proc = subprocess.Popen([sys.executable, "-m", "steptable", "tail", "-f", str(path), "--format", "jsonl"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert readline_within(proc.stdout, 30), "no row within 30 s"  # reading has begun (the first rows are out)
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)
        assert time.monotonic() - sent < 5.0
    finally:
        proc.kill()  # (a failed or timed-out test leaves no process behind)
        proc.wait()
