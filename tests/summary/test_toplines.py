"""The sweep's top lines (steptable.summary.toplines): short names, and a report that stays short for any sweep."""

from __future__ import annotations

from steptable.summary.sweep import RunDigest
from steptable.summary.toplines import MAX_CHARS, MAX_NAME, top_text
from steptable.table.formatting import display_width


def test_top_text_stays_short_for_any_sweep() -> None:
    ds = [RunDigest("x" * 80 + str(i), "x" * 80 + str(i), "jsonl", 1, 1, True, 10**9, 0.0, None, "", 1,
                    last={"loss": float(i)}, mean={"loss": float(i)}, errors=i % 3, warnings=i % 2)
          for i in range(5000)]
    text = top_text(ds, "loss", 50, "mean", False, 0.0)
    assert len(text) <= MAX_CHARS
    lines = text.splitlines()
    assert lines[0].startswith("5000 runs: 5000 ended; 3333 with errors")
    assert lines[2] == "best:" and lines[3].startswith("1. ") and " 0 " in lines[3]
    assert "runs between" in text and "worst:" in text


def test_a_run_name_is_made_inert_then_cut_in_the_middle_to_its_cells() -> None:
    """Cut first, an escape sequence across the cut showed as text, and a wide name took twice its cells."""
    names = ["a" * 100, "a" * 16 + "\x1b]0;EVIL-TITLE\x07" + "b" * 40, "実験" * 30]
    ds = [RunDigest(n, n, "jsonl", 1, 1, True, 10**9, 0.0, None, "", 1, last={"loss": 1.0}, mean={"loss": 1.0})
          for n in names]
    shown = [line.split(" ")[1] for line in top_text(ds, "loss", 3, "mean", False, 0.0).splitlines()[3:6]]
    # (two-cell characters fill 35 of the 36 cells)
    assert sorted(map(display_width, shown)) == [MAX_NAME - 1, MAX_NAME, MAX_NAME], shown
    assert all(s.count("…") == 1 for s in shown)
    assert not any("\x1b" in s or "EVI" in s or "0;" in s for s in shown)


def test_top_text_says_when_which_way_is_better_is_not_known() -> None:
    """A metric whose schema says no direction (an RL loss) is ranked highest first, and the text does not call
    that better; known either way (the schema's word, or --lower), it does."""
    ds = [RunDigest(f"r{i}", f"r{i}", "jsonl", 1, 1, True, 10**9, 0.0, None, "", 1,
                    last={"loss": float(i)}, mean={"loss": float(i)}) for i in range(6)]
    unknown = top_text(ds, "loss", 2, "last", True, 0.0, known=False).splitlines()
    assert unknown[1] == "by loss (last value, highest first: which way is better is not known):"
    assert unknown[2] == "highest:" and unknown[3].startswith("1. r5 ") and unknown[5] == "lowest:"
    assert "best" not in "\n".join(unknown) and "worst" not in "\n".join(unknown)
    lower = top_text(ds, "loss", 2, "last", False, 0.0, known=True).splitlines()
    assert lower[1] == "by loss (last value, lower is better):"
    assert lower[2] == "best:" and lower[3].startswith("1. r0 ")


def test_a_key_with_no_visible_character_is_named_by_its_escapes() -> None:
    """``--by`` a zero-width key: the ranking's line and the lines of runs without it or with NaN named it by nothing
    (``by  (last value ...``), as the console and the legend no longer do."""
    ds = [RunDigest(f"r{i}", f"r{i}", "jsonl", 1, 1, True, 10**9, 0.0, None, "", 1,
                    last={"\u200b": float(i)}, mean={"\u200b": float(i)}) for i in range(3)]
    ds.append(RunDigest("nan", "nan", "jsonl", 1, 1, True, 10**9, 0.0, None, "", 1, last={"\u200b": float("nan")}))
    ds.append(RunDigest("none", "none", "jsonl", 1, 1, True, 10**9, 0.0, None, "", 1, last={"loss": 1.0}))
    lines = top_text(ds, "\u200b", 1, "last", True, 0.0).splitlines()
    assert lines[1] == 'by "\\u200b" (last value, higher is better):'
    assert lines[-2].startswith('1 run with "\\u200b" NaN or inf at the newest row: nan')
    assert lines[-1] == '1 run without "\\u200b"'
    assert top_text(ds[-1:], "\u200b", 1, "last", True, 0.0).splitlines()[-1] == 'no run logs "\\u200b"'
