"""Bad input, one test each: every good row is kept, every bad line is reported as ``path:line: reason``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.files.tail as tail_mod
from steptable.ingest import Follower, RunStore
from tests.ingest.helpers import assert_rows, train_line


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
    _, store, _ = ingest(tmp_path, train_line(0) + b'{"step": 1, "loss": 1.5, "big": 1e999}\n' + train_line(2))
    assert_rows(store, [0, 1, 2])
    assert store.value(1, "big") == math.inf and math.isnan(store.column("big")[0])
    assert [(b.lineno, b.reason) for b in store.bad] == [(2, "number out of range read as inf (row kept)")]


def test_rows_without_a_step(tmp_path: Path) -> None:
    _, store, path = ingest(tmp_path, train_line(0) + train_line(1) + b'{"loss": 1.5, "extra": 7}\n' + train_line(2))
    assert list(store.steps) == [0, 1, 2]
    assert store.value(1, "extra") == 7  # kept under the previous step, merged into that row
    assert [str(b) for b in store.bad] == [f"{path}:3: step 'step' missing: row kept under step 1"]


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


def test_unreadable_file_is_reported_once_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs" / "arm" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(train_line(0) + train_line(1))
    real_open = tail_mod.open_binary

    def denied(p: Path) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tail_mod, "open_binary", denied)
    f = Follower([tmp_path / "runs"])
    f.scan()
    f.scan()
    store = f.stores["arm/metrics.jsonl"]
    assert len(store) == 0
    assert f.errors == [f"{path}: unreadable (Permission denied)"] and store.bad_count == 1
    monkeypatch.setattr(tail_mod, "open_binary", real_open)
    f.scan()
    assert_rows(store, [0, 1])


def test_directory_that_does_not_exist_yet(tmp_path: Path) -> None:
    root = tmp_path / "later"
    f = Follower([root])
    assert f.scan() == set() and f.stores == {} and f.errors == []
    (root / "armB").mkdir(parents=True)
    (root / "armB" / "metrics.jsonl").write_bytes(train_line(0))
    assert f.scan() == {"armB/metrics.jsonl"}
    assert f.stores["armB/metrics.jsonl"].arm == "armB"


def test_bad_lines_in_a_big_file_keep_their_numbers(tmp_path: Path) -> None:
    """Bad lines deep in a file that the fast path reads in chunks: same numbers, all good rows."""
    lines = [train_line(i) for i in range(6000)]
    lines[4321] = b'{"step": 4321, "loss": oops}\n'
    lines[5000] = b'{"step": 5000, "loss": NaN, "phase": "train"}\n'
    _, store, _ = ingest(tmp_path, b"".join(lines))
    assert len(store) == 5999 and store.index_of_step(4322) == 4321
    assert [(b.lineno, b.reason[:14]) for b in store.bad] == [(4322, "malformed JSON")]
    assert math.isnan(store.value(4999, "loss"))


def test_unreadable_directory_is_reported_once_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory discovery cannot list (permission, I/O error) is skipped with one report; the other runs load,
    and the skipped one arrives once it can be read."""
    import os

    root = tmp_path / "runs"
    for arm in ("armA", "armB"):
        (root / arm).mkdir(parents=True)
        (root / arm / "metrics.jsonl").write_bytes(train_line(0))
    locked = root / "armB"
    real_scandir = os.scandir

    def scandir(p: Any = ".") -> Any:
        if Path(p) == locked:
            raise PermissionError(13, "Permission denied", str(p))
        return real_scandir(p)

    monkeypatch.setattr(os, "scandir", scandir)
    f = Follower([root])
    assert f.scan() == {"armA/metrics.jsonl"}
    f.scan()
    assert f.errors == [f"{locked}: unreadable (Permission denied); skipped"]
    monkeypatch.setattr(os, "scandir", real_scandir)
    assert f.scan() == {"armB/metrics.jsonl"} and len(f.errors) == 1


def test_unreadable_unnamed_jsonl_is_reported_once_and_retried(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``*.jsonl`` whose content must say whether it holds metrics, but which cannot be opened, is not silently
    waited on forever."""
    import builtins

    path = tmp_path / "runs" / "exp7.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(train_line(0) + train_line(1))
    real_open = builtins.open

    def denied(p: Any, *a: Any, **k: Any) -> Any:
        if Path(p) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real_open(p, *a, **k)

    monkeypatch.setattr(builtins, "open", denied)
    f = Follower([tmp_path / "runs"])
    assert f.scan() == set()
    f.scan()
    assert f.errors == [f"{path}: unreadable (Permission denied); skipped"]
    monkeypatch.setattr(builtins, "open", real_open)
    assert f.scan() == {"exp7.jsonl"}
    assert_rows(f.stores["exp7.jsonl"], [0, 1])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["other.jsonl", "trainer_state.json", "urandom"])
def test_fifos_and_devices_are_reported_not_read(tmp_path: Path, name: str) -> None:
    """A FIFO would block an open or a read forever and a device never ends: reported as not a regular file, and
    the one-shot commands still return (run in a child with a deadline, so a hang fails instead of stalling)."""
    run = tmp_path / "runs" / "arm"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_bytes(train_line(0))
    if name == "urandom":
        if not os.path.exists("/dev/urandom"):
            pytest.skip("no /dev/urandom")
        target = run / "trainer_state.json"
        os.symlink("/dev/urandom", target)
    else:
        target = run / name
        os.mkfifo(target)
    proc = subprocess.run([sys.executable, "-m", "steptable", "summary", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=60)
    assert "arm" in proc.stdout and "not a regular file" in proc.stderr, (proc.stdout, proc.stderr)


def test_unnamed_jsonl_with_a_malformed_first_line_is_still_read(tmp_path: Path) -> None:
    """exp.jsonl whose first row was cut by a crash: judged by its first well-formed row, the bad one reported."""
    path = tmp_path / "runs" / "exp7.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"step": 0, "loss": NaN\n' + train_line(1) + train_line(2))
    f = Follower([tmp_path / "runs"])
    assert f.scan() == {"exp7.jsonl"}
    assert_rows(f.stores["exp7.jsonl"], [1, 2])
    assert len(f.errors) == 1 and f.errors[0].startswith(f"{path}:1: ")


def test_unnamed_jsonl_of_garbage_is_not_a_run(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "notes.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not json\n" * 20)
    f = Follower([tmp_path / "runs"])
    assert f.scan() == set() and f.stores == {} and f.errors == []


def test_trainer_state_entries_it_cannot_use_are_reported_once(tmp_path: Path) -> None:
    """Entries that are not objects are skipped, an entry without an integer step is kept under the step before it
    (as in JSONL), and each is reported once, though the Trainer rewrites the file at every checkpoint."""
    run = tmp_path / "runs" / "hf"
    run.mkdir(parents=True)
    path = run / "trainer_state.json"
    history: list[Any] = [1, "x", None, {"step": 3, "loss": 0.5}, {"loss": 0.2}, {"step": "4", "loss": 0.1},
                          {"step": 5.5, "loss": 1.0}]
    path.write_text(json.dumps({"log_history": history}))
    f = Follower([tmp_path / "runs"])
    f.scan()
    assert f.errors == [
        f"{path}: log_history[0]: not an object (int); skipped",
        f"{path}: log_history[1]: not an object (str); skipped",
        f"{path}: log_history[2]: not an object (NoneType); skipped",
        f"{path}: log_history[4]: step missing: entry kept under step 3",
        f"{path}: log_history[6]: step not an integer (5.5): entry kept under step 4",
    ]
    store = f.stores["hf/trainer_state.json"]
    assert list(store.steps) == [3, 4] and store.bad_count == 5
    history.append({"step": 6, "loss": 0.05})
    path.write_text(json.dumps({"log_history": history}))
    f.scan()
    assert len(f.errors) == 5 and store.bad_count == 5 and list(store.steps) == [3, 4, 6]


def test_a_file_bad_on_every_line_is_told_a_few_times_not_on_every_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that logged a fractional step on every row: 10,000 lines of stderr for an agent to read. Now the first
    BAD_TOLD of each file, one line saying the rest are counted, and the count in the summary."""
    from steptable.ingest.files.follow import BAD_TOLD
    from tests.helpers import run_cli

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.jsonl").write_text("".join(json.dumps({"step": i / 4, "loss": i}) + "\n"
                                                         for i in range(400)))
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "bad 300" in out
    lines = err.splitlines()
    assert len(lines) == 2 * (BAD_TOLD + 1), lines[-3:]
    assert sum("the rest are counted, not told" in x for x in lines) == 2
    # a file's problems as a whole (not a line of it) are always told
    (tmp_path / "c.jsonl").write_bytes(b"\xff\xfe garbage\n" * 50)
    _, _, err = run_cli(["legend", str(tmp_path)], capsys)
    assert len(err.splitlines()) <= 3 * (BAD_TOLD + 1)


def test_a_row_cut_short_does_not_take_the_row_written_after_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Two arms share a file; armA is killed mid-row and armB appends its row to the cut one: armB's whole row was
    lost with it (one malformed line). A cut row's own nested object is not taken for a row."""
    from tests.helpers import run_cli

    rows = [json.dumps({"step": s, "arm": arm, "rew": 0.5}) for s in range(10) for arm in ("armA", "armB")]
    glued = '{"step": 10, "arm": "armA", "rew": 0.' + json.dumps({"step": 10, "arm": "armB", "rew": 0.7})
    cut_nested = '{"step": 11, "arm": "armB", "rew": 0.5, "cfg": {"a": 1}'  # cut before its last brace
    (tmp_path / "metrics.jsonl").write_text("\n".join([*rows, glued, cut_nested]) + "\n")
    _, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    got = [(r["arm"], r["step"], r["rew"]) for r in map(json.loads, out.splitlines())]
    assert ("armB", 10, 0.7) in got and ("armA", 10, 0.7) not in got
    assert not any(r[1] == 11 for r in got) and not any("a" in json.loads(x) for x in out.splitlines())
    assert "ran into this one" in err and ":22: malformed JSON" in err


def test_a_row_cut_right_after_a_nested_object_is_not_taken_for_a_glued_row() -> None:
    """{"step": 3, "loss": .4, "eval": {"step": 3, "loss": .9}  (killed before the last brace): the nested eval
    object named a step and ran to the line's end, so it was kept as the row (loss .9 in the train column)."""
    from steptable.ingest.parse import LineError, decode_line

    with pytest.raises(LineError, match="malformed JSON"):
        decode_line(b'{"step": 3, "loss": 0.4, "eval": {"step": 3, "loss": 0.9}')
    with pytest.raises(LineError, match="malformed JSON"):
        decode_line(b'{"step": 3, "a": {"b": {"step": 3, "loss": 0.9}}')
    told: list[str] = []  # a glued row is still found
    assert decode_line(b'{"step": 9, "rew": 0.{"step": 9, "rew": 0.7}', told.append) == {"step": 9, "rew": 0.7}
    assert told


def test_a_row_cut_after_a_colon_in_a_shared_file_keeps_the_next_arms_row() -> None:
    """Cut right after `"rew":` and another arm's row appended: the line also reads as one row cut after a nested
    object; the appended object names its arm, as a shared file's rows do, so it is kept."""
    from steptable.ingest.parse import decode_line

    told: list[str] = []
    line = b'{"step":6,"arm":"A","loss":0.5,"rew":{"step":6,"arm":"B","loss":0.6,"rew":0.2}'
    assert decode_line(line, told.append) == {"step": 6, "arm": "B", "loss": 0.6, "rew": 0.2} and told
