"""steptable.ingest.readers.csvlog: CSV metrics logs (SB3's progress.csv and monitor.csv, Lightning's
metrics.csv): comment lines before the header, a file rewritten from the top, cells read by the number rule, quoted
newlines and stray quotes."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from stable_baselines3.common.logger import CSVOutputFormat

import steptable.ingest.readers.csvlog as csvlog
from steptable.ingest import Follower, load
from steptable.ingest.parse import number
from steptable.ingest.readers.csvlog import CsvParser, cell, ends_quoted
from tests.ingest.helpers import NOT_NUMBERS, NUMBERS, check_steps, follower_store
from tests.trainer_logs import write_sb3_monitor


@pytest.mark.parametrize("step_key", ["time/total_timesteps", "global_step", "_step", None])
def test_a_followed_csv_rewritten_from_the_top_keeps_its_steps(tmp_path: Path, step_key: str | None) -> None:
    """SB3's start-up: train/* appears at iteration 2, rollout/* at 4, each rewriting the file (the step column
    read nan after every rewrite: the copied rows carried the ``step`` the store shows, which became a real key)."""
    path = tmp_path / "PPO_1" / "progress.csv"
    path.parent.mkdir()
    writer = CSVOutputFormat(str(path))  # SB3's own: kept open across writes, rewritten from the top on new keys
    fo = Follower([tmp_path])
    want: list[int] = []
    for it in range(1, 9):
        kv: dict[str, Any] = {"time/fps": 1500 + it, "time/iterations": it}
        if step_key is not None:
            kv[step_key] = 2048 * it
        if it >= 2:
            kv["train/loss"] = 5.0 - it / 10
        if it >= 4:
            kv["rollout/ep_rew_mean"] = 20.0 + it
        writer.write(kv, dict.fromkeys(kv), it)
        fo.scan()
        want.append(2048 * it if step_key is not None else it - 1)
        store = follower_store(fo)
        check_steps(store, want)
    writer.close()
    assert store.generation == 0 and list(store.column("time/fps")) == [1500.0 + it for it in range(1, 9)]
    assert list(store.column("rollout/ep_rew_mean"))[3:] == [24.0, 25.0, 26.0, 27.0, 28.0]


@pytest.mark.parametrize("head", ["\ufeff", "\ufeff\n\n", "\n  \n", "# written by hand\n\n"])
def test_a_bom_blank_and_comment_lines_before_the_header(tmp_path: Path, head: str) -> None:
    path = tmp_path / "0.monitor.csv"
    write_sb3_monitor(path, 3, head)
    parser = CsvParser(str(path))
    parsed = parser.parse(path.read_bytes(), 1)
    assert parser.header == ["r", "l", "t"] and parser.step_key is None and not parsed.bad
    assert list(parsed.steps) == [0, 1, 2] and parsed.rows == [
        {"r": 10.0, "l": 10, "t": 0.0}, {"r": 11.0, "l": 11, "t": 0.5}, {"r": 12.0, "l": 12, "t": 1.0}
    ]


def test_comment_lines_and_header_split_over_chunks(tmp_path: Path) -> None:
    """Followed as it is written: a chunk may end after the comment line, before the header."""
    parser = CsvParser("m.csv")
    assert parser.parse(b'#{"t_start": 1.0}\n', 1).steps == []
    assert parser.parse(b"\n", 2).steps == []
    parsed = parser.parse(b"r,l,t\n1.5,3,0.1\n", 3)
    assert parser.header == ["r", "l", "t"] and parsed.rows == [{"r": 1.5, "l": 3, "t": 0.1}]


def test_a_header_written_as_a_comment_numpy_savetxt(tmp_path: Path) -> None:
    """``np.savetxt(path, a, delimiter=",", header="step,loss")`` writes ``# step,loss``: the rows are numbers, so
    the last comment is the header; a comment followed by a header line stays a comment."""
    parser = CsvParser("a.csv")
    parsed = parser.parse(b"# step,loss\n0.000000000000000000e+00,2.5e-01\n1,0.125\n", 1)
    assert parser.header == ["step", "loss"] and parser.step_key == "step" and not parsed.bad
    assert list(parsed.steps) == [0, 1] and [r["loss"] for r in parsed.rows or []] == [0.25, 0.125]
    parser = CsvParser("b.csv")
    parsed = parser.parse(b"# step,loss\nstep,loss,acc\n3,0.5,0.9\n", 1)
    assert parser.header == ["step", "loss", "acc"] and parsed.rows == [{"step": 3, "loss": 0.5, "acc": 0.9}]
    # a commented header over rows with a text column: the first row is a row, not the header
    parser = CsvParser("c.csv")
    parsed = parser.parse(b"#step,phase,loss\n0,warmup,1.0\n1,main,0.9\n", 1)
    assert parser.header == ["step", "phase", "loss"] and list(parsed.steps) == [0, 1]
    assert [r["phase"] for r in parsed.rows or []] == ["warmup", "main"]


def test_csv_cells_read_numbers_by_the_rule() -> None:
    for text in [*NUMBERS, *NOT_NUMBERS]:
        c = cell(text)
        if not text.strip():
            assert c is None
        elif number(text) is not None:
            assert type(c) in (int, float) and c == number(text), text
        else:
            assert c == text, text


def test_a_csv_record_cut_by_a_read_is_joined_with_its_rest(tmp_path: Path) -> None:
    """Followed live, the rest of a record whose quoted cell holds a newline may come in a later read."""
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text('step,loss,note,acc\n1,0.9,a,0.1\n2,0.8,"multi\n')
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["r/metrics.csv"]
    assert list(store.steps) == [1]
    with open(path, "a") as fh:
        fh.write('line",0.2\n3,0.7,b,0.3\n')
    f.scan()
    assert list(store.steps) == [1, 2, 3] and not store.bad
    assert [store.value(1, k) for k in ("loss", "note", "acc")] == [0.8, "multi\nline", 0.2]


def test_a_stray_quote_costs_its_line_not_the_rows_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quote that is never closed holds at most MAX_RECORD_LINES lines; then its line is a bad line and the lines
    after it are rows again (also when they came in later reads)."""
    monkeypatch.setattr(csvlog, "MAX_RECORD_LINES", 4)
    p = CsvParser("m.csv")
    first = p.parse(b'step,loss,note\n0,0.5,"stray\n1,0.4,a\n', 1)
    assert first.steps == [] and not first.bad
    rest = p.parse(b"2,0.3,b\n3,0.2,c\n4,0.1,d\n", 4)
    assert rest.steps == [1, 2, 3, 4] and [r["loss"] for r in rest.rows or []] == [0.4, 0.3, 0.2, 0.1]
    assert [str(b) for b in rest.bad] == ["m.csv:2: quote not closed within 4 lines: line skipped"]


@given(st.text(alphabet='a,"', max_size=16), st.booleans())
def test_ends_quoted_reads_quotes_as_the_csv_module_does(line: str, quoted: bool) -> None:
    text = ('"' if quoted else "") + line
    swallowed = len(list(csv.reader(io.StringIO(text + "\nX\n")))) == 1 and text != ""  # the next line joined it
    assert ends_quoted(line, quoted) == swallowed


def test_rows_after_a_stray_quote_are_shown_live_after_a_few_lines() -> None:
    # tail -f shows the rows after a stray quote within a few lines (not after 100 more lines), and says the quote
    p = CsvParser("m.csv")
    first = p.parse(b'step,loss,note\n1,0.5,ok\n2,0.4,"quoted start\n', 1)
    assert first.steps == [1]
    got = [p.parse(f"{s},0.{s},ok\n".encode(), s) for s in range(3, 8)]
    assert [st for g in got for st in g.steps] == [3, 4, 5, 6, 7]
    assert [str(b) for g in got for b in g.bad] == ["m.csv:3: quote not closed within 4 lines: line skipped"]
    # a real cell with newlines is still one cell
    q = CsvParser("q.csv")
    rows = q.parse(b'step,loss,note\n1,0.5,"a\n2,0.4,b\n3,0.3,c\nend"\n4,0.2,ok\n', 1)
    assert rows.steps == [1, 4] and rows.rows is not None and rows.rows[0]["note"] == "a\n2,0.4,b\n3,0.3,c\nend"


def _read_as_the_csv_module_does(text: str) -> list[dict[str, Any]]:
    """The rows of a CSV text as ``csv.DictReader`` reads them, each cell by the number rule, empty cells absent."""
    return [{k: cell(v) for k, v in r.items() if v} for r in csv.DictReader(io.StringIO(text, newline=""))]


def test_lightning_keys_with_a_newline_a_comma_or_a_quote_read_as_the_csv_module_reads_them(tmp_path: Path) -> None:
    """``self.log("val\\nloss", ...)`` makes Lightning's CSVLogger write that key as a quoted cell over two lines of
    the header: every row was misread (the header cut at the newline, the rest of it read as a row). Now ``tail`` and
    ``summary`` read each key and cell as the csv module does."""
    torch = pytest.importorskip("torch")
    L = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.loggers import CSVLogger

    class Fit(L.LightningModule):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def training_step(self, batch: Any, i: int) -> Any:
            loss = torch.nn.functional.mse_loss(self.layer(batch[0]), batch[1])
            self.log("train\nloss", loss)
            self.log('lr,"base"', 0.05)
            return loss

        def validation_step(self, batch: Any, i: int) -> None:
            self.log("val\nloss", torch.nn.functional.mse_loss(self.layer(batch[0]), batch[1]))

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.05)

    torch.manual_seed(0)
    x = torch.randn(64, 1)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, 2 * x + 1), batch_size=8)
    trainer = L.Trainer(max_steps=12, log_every_n_steps=2, val_check_interval=4, limit_val_batches=2,
                        logger=CSVLogger(tmp_path, name="run"), enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1)
    trainer.fit(Fit(), data, data)
    text = (Path(trainer.logger.log_dir) / "metrics.csv").read_bytes().decode()
    keys = {"epoch", "step", "train\nloss", 'lr,"base"', "val\nloss"}
    assert set(csv.DictReader(io.StringIO(text, newline="")).fieldnames or ()) == keys
    want: dict[int, dict[str, Any]] = {}
    for row in _read_as_the_csv_module_does(text):  # (a train row and a val row at one step are one step)
        want.setdefault(row["step"], {}).update(row)
    (store,) = load([tmp_path]).values()
    assert not store.bad and store.step_key == "step" and set(store.keys) == keys
    assert store.rows() == list(want.values())


@pytest.mark.parametrize("piece", [1, 7, 64])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig"])
def test_a_growing_csv_with_quoted_newlines_shows_whole_rows_only(tmp_path: Path, piece: int, encoding: str) -> None:
    """A CSV that ``csv.DictWriter`` writes (quoted newlines, commas and quotes in the header and in cells; a BOM
    with ``utf-8-sig``, before a quoted first name), followed as it grows ``piece`` characters at a time: a record
    cut by a read waits for its rest, in the header too (its first line was the header, and every row was misread).
    Every poll shows rows as the csv module reads them, and the whole file all of them."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, ["train\nloss", "step", 'lr,"base"', "note"])
    w.writeheader()
    notes = ["ok", "multi\nline", 'say "hi", bye', "two\n\nblank lines", "", "end\n", ",\n,"]
    w.writerows({"step": s, "train\nloss": 1 / s, 'lr,"base"': 0.1, "note": n} for s, n in enumerate(notes, 1))
    text = buf.getvalue()
    want = _read_as_the_csv_module_does(text)
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_bytes(b"")
    data = text.encode(encoding)
    fo = Follower([tmp_path])
    for at in range(0, len(data), piece):
        with open(path, "ab") as fh:
            fh.write(data[at : at + piece])
        fo.scan()
        if fo.stores:
            shown = follower_store(fo).rows()
            assert shown == want[: len(shown)], at
    store = follower_store(fo)
    assert store.rows() == want and not store.bad


def test_a_header_quote_never_closed_is_said_and_its_rows_keep_their_columns(tmp_path: Path) -> None:
    """A header whose quote never closes (a hand-made file): its record is held a few lines at most, then said as a
    bad line; the header is its line alone and the rows after it are shown live, each as it comes."""
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text('step,loss,"note\n', encoding="utf-8")
    fo = Follower([tmp_path])
    fo.scan()
    for s in range(1, 9):
        with open(path, "a") as fh:
            fh.write(f"{s},0.{s},x\n")
        fo.scan()
        if s > csvlog.STRAY_ROWS:
            assert list(follower_store(fo).steps) == list(range(1, s + 1)), s
    store = follower_store(fo)
    assert store.rows()[0] == {"step": 1, "loss": 0.1, "note": "x"}
    assert [str(b) for b in store.bad] == [f"{path}:1: quote not closed within 4 lines: line read alone"]


def test_a_header_quote_before_lines_that_are_no_rows_is_held_only_so_long(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines that do not read as rows after a header's open quote are its cell's lines up to MAX_RECORD_LINES (or
    MAX_RECORD_CHARS): past that, the header is its line alone (said) and those lines are read again on their own."""
    monkeypatch.setattr(csvlog, "MAX_RECORD_LINES", 5)
    p = CsvParser("m.csv")
    seen = [p.parse(b'step,"note\n', 1), *(p.parse(f"{n},x,y\n".encode(), n) for n in range(2, 6))]
    assert p.header == ["step", "note"] and [str(b) for b in seen[-1].bad] == [
        "m.csv:1: quote not closed within 5 lines: line read alone",
        *(f"m.csv:{n}: 3 cells under a header of 2" for n in range(2, 6))]
    monkeypatch.setattr(csvlog, "MAX_RECORD_CHARS", 100)
    q = CsvParser("q.csv")
    got = q.parse(b'step,"note\n' + b"x" * 101 + b"\n3,a\n", 1)
    assert [str(b) for b in got.bad][:1] == ["q.csv:1: quote not closed within 2 lines: line read alone"]
    assert got.steps[-1:] == [3] and got.rows is not None and got.rows[-1] == {"step": 3, "note": "a"}


def test_a_finished_files_header_quote_never_closed_is_said_and_its_rows_read(tmp_path: Path) -> None:
    """A whole file read once whose header quote never closes, its rows not reading as rows of that header: the
    held header was dropped at the end without a word (`tail` said "no rows yet", status 0); it is given up as a
    header read alone, said, and the lines after it are read (here: bad lines, each said)."""
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text('step,"val,loss\n' + "".join(f"{s},0.{s},1\n" for s in range(1, 51)), encoding="utf-8")
    fo = Follower([tmp_path])
    fo.scan()
    fo.finish()  # (a file that will not grow, as tail and summary read it)
    store = follower_store(fo)
    said = [str(b) for b in store.bad]
    assert said[0] == f"{path}:1: quote not closed by the end of the file: line read alone", said
    assert said[1] == f"{path}:2: 3 cells under a header of 2" and store.bad_count == 51
