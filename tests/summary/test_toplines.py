"""The sweep's top lines (steptable.summary.toplines): short names, and a report that stays short for any sweep."""

from __future__ import annotations

from steptable.summary.sweep import RunDigest
from steptable.summary.toplines import MAX_CHARS, short_name, top_text


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
    assert short_name("a" * 100).count("…") == 1 and len(short_name("a" * 100)) == 36
