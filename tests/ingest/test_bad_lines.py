"""Bad input, one case each: every good row is kept, every bad line is reported as ``path:line: reason``."""

from __future__ import annotations

import json
import math
from pathlib import Path

from steptable.ingest import Follower, RunStore
from tests.ingest.helpers import assert_rows, loss_line, train_line


def ingest(tmp_path: Path, data: bytes, name: str = "metrics.jsonl") -> tuple[Follower, RunStore, str]:
    path = tmp_path / "runs" / "arm" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    f = Follower([tmp_path / "runs"])
    f.scan()
    return f, f.stores[f"arm/{name}"], str(path)


def test_malformed_json_mid_file(tmp_path: Path) -> None:
    data = train_line(0) + train_line(1) + b'{"step": 2, "loss": \n' + train_line(3) + b"}{\n" + train_line(4)
    f, store, path = ingest(tmp_path, data)
    assert_rows(store, [0, 1, 3, 4])
    assert [(b.lineno, b.reason[:14]) for b in store.bad] == [(3, "malformed JSON"), (5, "malformed JSON")]
    assert store.bad_count == 2 and f.errors[0].startswith(f"{path}:3: malformed JSON (")


def test_non_utf8_bytes(tmp_path: Path) -> None:
    data = (train_line(0) + b'{"step": 1, "loss": 1.5, "phase": "tr\xff\xfeain"}\n' + train_line(2) + b"\xff\xfe\n"
            + train_line(3))
    _, store, _ = ingest(tmp_path, data)
    assert_rows(store, [0, 1, 2, 3])
    assert store.value(1, "phase") == "tr\ufffd\ufffdain"
    assert [(b.lineno, b.reason) for b in store.bad] == [
        (2, "invalid UTF-8 replaced with U+FFFD (row kept)"),
        (4, "malformed JSON (invalid character (byte 0))"),
    ]


def test_a_line_repaired_then_refused_is_reported_once_as_refused(tmp_path: Path) -> None:
    """Invalid UTF-8 in a string of a line that is malformed JSON besides: no "(row kept)" for a row not kept."""
    data = train_line(0) + b'{"step": 1, "phase": "tr\xffain", "loss": }\n' + b"\xef\xbb\xbf[1, 2]\n" + train_line(3)
    _, store, _ = ingest(tmp_path, data)
    assert_rows(store, [0, 3])
    assert [(b.lineno, b.reason[:16]) for b in store.bad] == [(2, "malformed JSON ("), (3, "not a JSON objec")]


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    _, store, _ = ingest(tmp_path, b"\xef\xbb\xbf" + train_line(0) + train_line(1))
    assert_rows(store, [0, 1])
    assert store.keys == ["step", "loss", "phase"] and store.bad == []


def test_nul_runs_around_a_line_keep_the_row(tmp_path: Path) -> None:
    # copytruncate under a writer without O_APPEND: the next row lands after a hole of NULs, on the same line
    data = train_line(0) + b"\0" * 4096 + train_line(1) + train_line(2)[:-1] + b"\0\0\n" + b"\0" * 7 + b"\n"
    _, store, _ = ingest(tmp_path, data)
    assert_rows(store, [0, 1, 2])
    assert [(b.lineno, b.reason) for b in store.bad] == [
        (2, "NUL bytes around the line removed (row kept)"),
        (3, "NUL bytes around the line removed (row kept)"),
    ]


def test_unpaired_surrogate_escapes_keep_the_row(tmp_path: Path) -> None:
    # Python's json.dumps writes "\udcff" for a str holding a lone surrogate (a surrogateescape-decoded path)
    row = json.dumps({"step": 1, "loss": 1.5, "phase": "/data/\udcff\ud83d\ude00\ud800.bin"}).encode() + b"\n"
    escaped = b'{"step": 2, "loss": 2.5, "phase": "\\\\udcff"}\n'  # an escaped backslash, then "udcff": text
    _, store, _ = ingest(tmp_path, train_line(0) + row + escaped)
    assert_rows(store, [0, 1, 2])
    assert store.value(1, "phase") == "/data/\ufffd\U0001f600\ufffd.bin"
    assert store.value(2, "phase") == "\\udcff"
    assert [(b.lineno, b.reason) for b in store.bad] == [
        (2, "unpaired UTF-16 surrogate escape replaced with U+FFFD (row kept)")
    ]


def test_crlf_line_endings(tmp_path: Path) -> None:
    _, store, _ = ingest(tmp_path, (train_line(0) + train_line(1) + train_line(2)).replace(b"\n", b"\r\n"))
    assert_rows(store, [0, 1, 2])
    assert store.value(2, "phase") == "train" and store.bad == []


def test_line_of_8_mib_or_more_is_skipped(tmp_path: Path) -> None:
    huge = b'{"step": 1, "blob": "' + b"x" * (8 * 1024 * 1024) + b'"}\n'
    _, store, path = ingest(tmp_path, train_line(0) + huge + train_line(2) + train_line(3))
    assert_rows(store, [0, 2, 3])
    assert [str(b) for b in store.bad] == [f"{path}:2: line of 8 MiB or more skipped"]


def test_json_value_that_is_not_an_object(tmp_path: Path) -> None:
    _, store, _ = ingest(tmp_path, train_line(0) + b"[1, 2]\n" + b"null\n" + b'"text"\n' + train_line(4))
    assert_rows(store, [0, 4])
    assert [(b.lineno, b.reason) for b in store.bad] == [
        (2, "not a JSON object (list)"), (3, "not a JSON object (NoneType)"), (4, "not a JSON object (str)")]


def test_number_out_of_range(tmp_path: Path) -> None:
    _, store, _ = ingest(tmp_path, train_line(0) + b'{"step": 1, "loss": 1.5, "big": 2e400}\n' + train_line(2))
    assert_rows(store, [0, 1, 2])
    assert store.value(1, "big") == math.inf and math.isnan(store.column("big")[0])
    assert [(b.lineno, b.reason) for b in store.bad] == [(2, "number out of range read as inf (row kept)")]


def test_1e999_is_an_infinity_read_without_a_word(tmp_path: Path) -> None:
    """``1e999`` is how strict JSON writes an infinity (StepLogger does): no repair to report, on the line path
    and the typed chunk path alike, outside strings only; ``21e999`` beside it is still a repair."""
    body = b"".join(b'{"step": %d, "loss": %s, "kl": -1e999, "t": "1e999"}\n' % (i, b"1e999" if i % 2 else b"0.5")
                    for i in range(400))
    _, store, _ = ingest(tmp_path, body + b'{"step": 400, "loss": 21e999, "kl": 1, "t": "x"}\n')
    assert store.value(1, "loss") == math.inf and store.value(399, "kl") == -math.inf
    assert store.value(2, "loss") == 0.5 and store.value(3, "t") == "1e999" and store.value(400, "loss") == math.inf
    assert [(b.lineno, b.reason) for b in store.bad] == [(401, "number out of range read as inf (row kept)")]


def test_rows_without_a_step_are_placed_after_the_last_step(tmp_path: Path) -> None:
    """A row without a step never lands in (or overwrites) the previous step's row: placed after it, said once."""
    _, store, path = ingest(tmp_path, b'{"step": 0, "loss": 1.0}\n{"step": 1, "loss": 1e400}\n'
                            b'{"loss": 0.3, "extra": 7}\n{"loss": 0.2}\n')
    assert list(store.steps) == [0, 1, 2, 3]
    assert store.value(1, "loss") == math.inf and store.value(1, "extra") is None
    assert store.value(2, "loss") == 0.3 and store.value(2, "extra") == 7 and store.value(3, "loss") == 0.2
    assert [str(b) for b in store.bad] == [
        f"{path}:2: number out of range read as inf (row kept)",
        f"{path}:3: step 'step' missing: row placed after step 1, as step 2 (further rows without a step are placed "
        "the same way, not reported again)",
    ]


def test_csv_rows_without_a_step_are_placed_after_the_last_step(tmp_path: Path) -> None:
    _, store, _ = ingest(tmp_path, b"step,loss\n0,1.0\n1,inf\n,0.3\n", "metrics.csv")
    assert list(store.steps) == [0, 1, 2] and store.value(1, "loss") == math.inf and store.value(2, "loss") == 0.3
    assert len(store.bad) == 1 and "row placed after step 1, as step 2" in store.bad[0].reason


def test_file_without_any_step_key_numbers_rows_by_position(tmp_path: Path) -> None:
    rows = b"".join((json.dumps({"loss": i + 0.5}) + "\n").encode() for i in range(4))
    _, store, _ = ingest(tmp_path, rows)
    assert_rows(store, [0, 1, 2, 3])
    assert store.bad == [] and store.keys == ["loss"]


def test_empty_file(tmp_path: Path) -> None:
    f, store, _ = ingest(tmp_path, b"")
    assert len(store) == 0 and store.bad == [] and f.errors == []
    path = tmp_path / "runs" / "arm" / "metrics.jsonl"
    path.write_bytes(train_line(0))
    assert f.scan() == {"arm/metrics.jsonl"} and list(store.steps) == [0]


def test_bad_lines_in_a_big_file_keep_their_numbers(tmp_path: Path) -> None:
    """Bad lines deep in a file that the fast path reads in chunks: same numbers, all good rows."""
    lines = [train_line(i) for i in range(6000)]
    lines[4321] = b'{"step": 4321, "loss": oops}\n'
    lines[5000] = b'{"step": 5000, "loss": NaN, "phase": "train"}\n'
    _, store, _ = ingest(tmp_path, b"".join(lines))
    assert len(store) == 5999 and store.index_of_step(4322) == 4321
    assert [(b.lineno, b.reason[:14]) for b in store.bad] == [(4322, "malformed JSON")]
    assert math.isnan(store.value(4999, "loss"))


def _ingest(tmp_path: Path, data: bytes) -> tuple[Follower, RunStore, Path]:
    path = tmp_path / "runs" / "arm" / "metrics.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    f = Follower([tmp_path / "runs"])
    f.scan()
    return f, f.stores["arm/metrics.jsonl"], path


def _consistent(store: RunStore) -> None:
    n = len(store)
    assert len(store.wall_times) == n
    for k in store.keys:
        assert len(store.column(k)) == n, k


def test_step_beyond_int64_is_a_bad_line_not_a_lost_run(tmp_path: Path) -> None:
    # One hostile line is a bad line, not an OverflowError in the store ("internal error") that loses every row.
    data = loss_line(0) + b'{"step": 1000000000000000000000000000000, "loss": 9.5}\n' + loss_line(2)
    f, store, _ = _ingest(tmp_path, data)
    assert list(store.steps) == [0, 0, 2] or list(store.steps) == [0, 2]
    assert store.value(len(store) - 1, "loss") == 2.5
    assert not any("internal error" in e for e in f.errors)
    _consistent(store)


def test_step_beyond_int64_on_the_fast_path_keeps_the_store_consistent(tmp_path: Path) -> None:
    data = b"".join(loss_line(i) for i in range(50))
    f, store, path = _ingest(tmp_path, data)
    with open(path, "ab") as fh:  # a later chunk, decoded by the typed fast path: msgspec ints reach 2**64-1
        fh.write(b'{"step": 18446744073709551615, "loss": 1.5}\n' + loss_line(50))
    f.scan()
    assert not any("internal error" in e for e in f.errors)
    assert list(store.steps)[-1] == 50 and store.value(len(store) - 1, "loss") == 50.5
    _consistent(store)
