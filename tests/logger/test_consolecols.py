"""steptable.logger.consolecols: a declared width is a maximum. Each printed column is as wide as its values so far,
never past its declared width (narrower only under a header printed anyway); a long header is abbreviated to fit, a
short key joined, the legend naming its key."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest

from steptable import Col, StepLogger
from steptable.logger.consolecols import KEEP_HEADER, ConsoleLayout, joined, need
from steptable.table import render


def _rows(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if re.match(r"I +\d+ ", line)]


def _headers(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if re.match(r"I +step ", line)]


def test_a_long_header_over_narrow_values_is_abbreviated_and_the_legend_names_its_key(captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("completion_len_max", 18, "completion_len_max"),
            Col("grad_norm", 9, "grad_norm", None, "gradient norm before clipping")]
    with StepLogger(cols, alerts=False) as sl:
        line = sl.log({"step": 1, "completion_len_max": 1451.0, "grad_norm": 0.344})
    text = "".join(captured)
    assert sl.header() == "step  clm   gn" and line == "   1 1451 .344"
    assert " clm  completion_len_max\n" in text and " gn   grad_norm: gradient norm before clipping\n" in text
    assert text.index("columns:") < text.index("step  clm")  # the legend comes before the first header


def test_a_column_widens_up_to_its_declared_width_and_the_header_comes_again(captured: list[str]) -> None:
    cols = [Col("step", 4, "step", "d"), Col("kl", 6, "kl"), Col("reward_std", 10, "reward_std")]
    values = [0.0030001, 0.00298, 0.5, 0.41, -0.000123456, 12345678.0, 23456789.0]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for i, kl in enumerate(values):
            sl.log({"step": i, "kl": kl, "reward_std": 0.25 if i < 4 else 0.123456})
    text = "".join(captured).split("end of run")[0]
    rows, headers = _rows(text), _headers(text)
    # .00300 (the 3-digit form) from the first row: the next value's .00298 needs no new header; .5, a lone value
    # past the notation's top, is written on its own, and .41 after it leaves that notation (thousandths now, .5
    # among them), printed in the wider column until a header is due anyway: rs widens at the next row, and under
    # that header kl is as narrow as its values need (-.000123, which thousandths would write '-.000', is written on
    # its own in the cells the column has: -1e-4); 1.2e7, on its own, widens it again, and 2.3e7 leaves the
    # notation for an exponent, written once in the header, its 3 digits measured as the cell shows them (235 under
    # "kl e5", not 2.35e7's 7 cells with the sign)
    assert rows == ["   0 .00300 .25", "   1 .00298 .25", "   2     .5 .25", "   3   .410 .25", "   4 -1e-4 .123",
                    "   5 1.23e7 .123", "   6   235 .123"]
    assert headers == ["step     kl  rs", "step    kl   rs", "step     kl   rs", "step kl e5   rs"]
    assert sl.header() == headers[-1]


def test_the_rows_after_a_gradient_norm_spike_keep_their_digits(captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("grad_norm", 9, "grad_norm")]
    rnd = random.Random(3)
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for step in range(1, 61):
            sl.log({"step": step, "grad_norm": 12.37 if step == 30 else rnd.uniform(0.3, 0.6)})
    rows = [line.split() for line in _rows("".join(captured).split("end of run")[0])]
    assert rows[29] == ["30", "12.4"]  # the spike, on its own: it still reads 30x bigger
    assert all(re.fullmatch(r"\.\d{3}", gn) for _, gn in rows[:29] + rows[30:]), rows


def test_an_lr_warmup_reads_in_the_unit_of_its_header_on_every_row(captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("learning_rate", 13, "learning_rate")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for step in range(1, 81):
            sl.log({"step": step, "learning_rate": 1e-6 * min(1.0, step / 50)})
    printed = "".join(captured).split("end of run")[0]
    assert _headers(printed) == ["step lr e-8"]
    lrs = [line.split()[1] for line in _rows(printed)]
    # 2e-8 a step, crossing 1e-7 and reaching 1e-6: whole numbers of e-8, never one with its own exponent
    assert lrs == [str(2 * min(step, 50)) for step in range(1, 81)], lrs


def test_an_lr_decay_in_a_narrow_column_shows_each_step_of_its_schedule(captured: list[str]) -> None:
    """A schema's 6-cell lr column, decaying linearly from 1e-6 (TRL's default schedule): 9.9e-7 needs 7 cells with
    its exponent, but its cell under "lr e-8" is 99 (2 cells): the cells are measured as they are printed."""
    cols = [Col("step", 5, "step", "d"), Col("learning_rate", 6, "lr")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for step in range(30):
            sl.log({"step": step, "learning_rate": 1e-6 * (100 - step) / 100})
    printed = "".join(captured).split("end of run")[0]
    assert _headers(printed)[-1] == "step lr e-8"
    assert [line.split()[1] for line in _rows(printed)][1:] == [str(100 - step) for step in range(1, 30)]


def test_columns_never_narrow_and_a_header_is_shown_whole_once_it_fits(captured: list[str]) -> None:
    layout = ConsoleLayout([Col("step", 5, "step", "d"), Col("entropy", 8, "entropy")])
    assert layout.update({"step": 0, "entropy": 0.5})
    assert [(c.header, c.width) for c in layout.cols] == [("step", 4), ("ent", 3)]
    assert not layout.update({"step": 1, "entropy": 0.25})
    assert layout.update({"step": 2, "entropy": -1234.5})  # "-1234" / "-1235" : 5 cells
    assert [(c.header, c.width) for c in layout.cols] == [("step", 4), ("ent", 5)]
    # a value below the whole numbers' notation is written on its own ('0' would read as a true zero)
    assert layout.update({"step": 3, "entropy": -0.0001234})  # "-.000123": 8 cells, the declared width
    assert [(c.header, c.width) for c in layout.cols] == [("step", 4), ("entropy", 8)]
    assert render.row(layout.cols, {"step": 3, "entropy": -0.0001234}).split()[-1] == "-.000123"
    assert not layout.update({"step": 4, "entropy": 0.5})
    assert layout.cols[1].width == 8


def test_a_short_header_is_kept_whole_and_abbreviations_never_read_like_another_header() -> None:
    cols = [Col("step", 5, "step", "d"), Col("rs", 4, "rs"), Col("reward_std", 10, "reward_std"),
            Col("reward_s", 8, "rew_s"), Col("reward", 6, "reward"), Col("rewards", 7, "rewards")]
    layout = ConsoleLayout(cols)
    layout.update({"step": 1, "rs": 1.0, "reward_std": 0.5, "reward_s": 0.5, "reward": 0.5, "rewards": 0.5})
    shown = [c.header for c in layout.cols]
    # at most KEEP_HEADER cells: whole (a header given for the column, not its key, is never joined either)
    assert shown[:2] == ["step", "rs"] and shown[3] == "rew_s"
    assert len(set(shown)) == len(shown) and shown[2] not in ("rs", "rew_s") and shown[4] != shown[5]
    assert all(len(h) <= KEEP_HEADER or h == c.header for h, c in zip(shown, cols, strict=True))
    assert render.width(layout.cols) == len(render.row(layout.cols, {"step": 1}))


def test_a_short_key_over_narrower_values_is_printed_without_its_joins_until_they_fill_it(
        captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("t_gen", 5, "t_gen"), Col("lr/x", 4, "lr/x"), Col("tgen", 6, "tgen"),
            Col("a_b", 5, "a_b"), Col("r1_5", 4, "r1_5"), Col("x_2", 3, "x_2")]
    row = {"t_gen": 27.2, "lr/x": 0.5, "tgen": 0.5, "a_b": 0.5, "r1_5": 0.5, "x_2": 0.5}
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        sl.log({"step": 1, **row})
        sl.log({"step": 2, **row, "t_gen": -27.5})
    text = "".join(captured).split("end of run")[0]
    # "t_gen" over 27.2 is "tgen" only where no other column reads so: here it is cut as a long header is; "a_b"
    # and "x_2" over ".5" are "ab" and "x2"; "lr/x" and "r1_5" have no underscore that joins words (r15 would read
    # as another number): whole; the legend names each key; at -27.5 (5 cells, the header's width) "t_gen" is
    # shown whole
    assert _headers(text)[0] == "step   tg lr/x tgen ab r1_5 x2"
    assert _rows(text)[0] == "   1 27.2   .5   .5 .5   .5 .5"
    assert re.search(r"^ tg +t_gen$", text, flags=re.M) and re.search(r"^ ab +a_b$", text, flags=re.M)
    assert _headers(text)[1] == "step t_gen lr/x tgen ab r1_5 x2" and _rows(text)[1].startswith("   2 -27.5   .5")
    captured.clear()
    with StepLogger([Col("step", 5, "step", "d"), Col("t_gen", 5, "t_gen")], alerts=False) as sl:
        sl.log({"step": 1, "t_gen": 27.2})
    assert sl.header() == "step tgen" and " tgen  t_gen\n" in "".join(captured)
    assert [joined(h) for h in ("t_gen", "_", "a_1", "1_a", "1_2", "__x")] == ["tgen", "_", "a1", "1a", "1_2", "x"]


def test_a_value_missing_from_the_first_row_starts_its_column_blank(captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("eval/accuracy", 13, "eval/accuracy")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        sl.log({"step": 0})
        sl.log({"step": 1, "eval/accuracy": math.nan})
        sl.log({"step": 2, "eval/accuracy": 0.6125})
    text = "".join(captured).split("end of run")[0]
    assert _headers(text) == ["step  ea", "step   ea"]
    assert [r.rstrip() for r in _rows(text)] == ["   0", "   1 NaN", "   2 .613"]  # not logged: blank
    assert " ea  eval/accuracy\n" in text


def test_a_column_without_a_width_still_grows_past_its_header(captured: list[str]) -> None:
    with StepLogger([Col("step"), Col("x")], alerts=False, header_every=0) as sl:
        for i, x in enumerate([1.0, 123.0, 123456.0]):
            sl.log({"step": i, "x": x})
    rows = _rows("".join(captured).split("end of run")[0])
    assert rows == ["   0 1", "   1 123", "   2 123456"]
    assert [c.width for c in sl.cols] == [4, 6]  # the run's description gets the fitted widths


def test_the_header_repeats_header_every_rows_after_the_last_one(captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("v", 8, "v")]
    with StepLogger(cols, alerts=False, header_every=3) as sl:
        for i in range(8):
            sl.log({"step": i, "v": 1234.0 if i >= 2 else 1.0})
    lines = "".join(captured).split("end of run")[0].splitlines()
    at = [i for i, line in enumerate(lines) if re.match(r"I +step ", line)]
    # at row 0, at row 2 (widened), then three rows after each header
    assert [lines[i + 1].split()[1] for i in at] == ["0", "2", "5"]


def test_the_dump_shows_the_streamed_columns_as_printed(tmp_path: Path, captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("completion_len", 14, "completion_len"),
            Col("seconds", 7, "seconds", stream=False)]
    with StepLogger(cols, run_dir=tmp_path, alerts=False) as sl:
        sl.log({"step": 3, "completion_len": 509.0, "seconds": 2.5})
    dump = sl.dump().splitlines()
    assert dump[1] == "step  cl seconds" and dump[2] == "   3 509     2.5"
    table = (tmp_path / "table.txt").read_text().splitlines()  # table.txt keeps the declared columns
    assert table[0].split() == ["step", "completion_len", "seconds"]


def test_the_band_a_row_is_checked_by_never_holds_a_value_too_wide_for_the_column() -> None:
    """update() skips formatting a float inside its width's band: every such value must fit (decade edges,
    rounding up into the next decade, negatives one cell narrower)."""
    import random

    from steptable.logger.consolecols import _band, need

    rng = random.Random(7)
    edges = [s * 10.0 ** e * m for e in range(-6, 8) for m in (1.0, 0.9995, 0.99951, 0.99949, 9.995, 9.9951)
             for s in (1, -1)]
    values = edges + [rng.choice((-1, 1)) * 10 ** rng.uniform(-6, 7) for _ in range(20000)]
    for w in range(1, 12):
        lo, hi = _band(w)
        nlo, nhi = _band(w - 1)
        for v in values:
            if lo <= v < hi or -nhi < v <= -nlo:
                assert need(v, None, 30) <= w, (v, w)


def test_a_shared_exponent_is_printed_once_in_the_header_and_each_change_of_it_brings_the_header_again(
    tmp_path: Path, captured: list[str]
) -> None:
    cols = [Col("step", 4, "step", "d"), Col("learning_rate", 13, "learning_rate", None, "learning rate")]
    lrs = [1e-6, 1e-6, 2e-5, 1.25e-5, 1.25e-5, 0.0]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for step, lr in enumerate(lrs):
            sl.log({"step": step, "learning_rate": lr})
    text = "".join(captured)
    printed = text.split("end of run")[0]
    # 1e-6 is "1" under "lr e-6" (its exact digits); 2e-5, past that notation's top, is a change of range the same
    # unit writes (a schedule grows; it is no spike); 1.25e-5 after it needs a finer unit: the header comes again
    assert _headers(printed) == ["step lr e-6", "step lr e-7"]
    assert [line.split()[1] for line in _rows(printed)] == ["1", "1", "20", "125", "125", "0"]
    # the legend, printed once, names the column without a power of ten (that is the header's)
    assert re.search(r"^ lr +learning_rate: learning rate$", printed, flags=re.M)
    # without table.txt the console gets the dump, which chooses its own notation under the bare header
    dump = text.split("end of run")[1].splitlines()
    assert dump[1].split() == ["step", "lr"] and [line.split()[1] for line in dump[2:]] == [
        ".10e-5", "2.00e-5", "1.25e-5", "1.25e-5", "0"]


def test_a_description_that_names_its_key_is_not_told_it_twice_in_the_legend(captured: list[str]) -> None:
    cols = [Col("step", 4, "step", "d"),
            Col("rewards/acc/mean", 16, "rewards/acc/mean", None, "mean of one reward (rewards/acc/mean)"),
            Col("reward", 6, "reward", None, "mean reward")]
    with StepLogger(cols, alerts=False) as sl:
        sl.log({"step": 1, "rewards/acc/mean": 0.5, "reward": 0.25})
    legend = sl.legend()
    assert "mean of one reward (rewards/acc/mean)" in legend and legend.count("rewards/acc/mean") == 1
    assert "reward: mean reward" in legend  # a word of the description is no naming of the key "rew" stands for


def test_the_console_legend_leaves_out_a_column_printed_under_its_own_key(captured: list[str]) -> None:
    cols = [Col("step", 4, "step", "d", "optimizer step"), Col("loss", 6, "loss", None, "policy-gradient loss"),
            Col("grad_norm", 9, "grad_norm", None, "gradient norm"), Col("secs", 5, "secs", None, "seconds",
                                                                         stream=False)]
    with StepLogger(cols, alerts=False) as sl:
        sl.log({"step": 1, "loss": 0.5, "grad_norm": 0.25, "secs": 3.0})
    legend = "".join(captured).split("step  loss")[0]
    # "gn" needs its line; "step" and "loss" read as what was logged; the dump-only column is not in the rows
    assert re.findall(r"^ (\S+)", legend, flags=re.M) == ["gn", "secs"]
    captured.clear()
    with StepLogger(cols[:2], alerts=False) as sl:  # nothing to explain: no legend at all
        sl.log({"step": 1, "loss": 0.5})
    assert "columns:" not in "".join(captured)


def test_a_value_that_rounds_to_no_whole_unit_keeps_its_sign_and_a_wider_value_under_the_header_prints_no_header(
    captured: list[str]
) -> None:
    cols = [Col("step", 4, "step", "d"), Col("learning_rate", 13, "learning_rate")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for step, lr in enumerate([1.5e-6, 1e-12, -1e-12, 1.23e-6]):
            sl.log({"step": step, "learning_rate": lr})
    printed = "".join(captured).split("end of run")[0]
    # 1e-12 has more places than 1.5e-6 had: a finer unit, its header; the first negative needs a sign cell, which
    # the 6-cell column under "lr e-8" has: no header for it
    assert _headers(printed) == ["step lr e-7", "step lr e-8"]
    assert [line.split()[1] for line in _rows(printed)] == ["15", "+0", "-0", "123"]


def test_a_growing_value_its_notation_holds_leaves_the_layout_as_it_is_and_a_first_negative_widens_it() -> None:
    """An epoch or a token count grows every step: while its column's notation and width hold it, the printed
    columns are the same object (nothing rebuilt, no header); its first negative value needs the sign's cell."""
    layout = ConsoleLayout([Col("step", 4, "step", "d"), Col("ep", 8, "ep"), Col("tokens", 9, "tokens")])
    assert layout.update({"step": 0, "ep": 0.101, "tokens": 100512.0})
    shown = layout.cols
    for step in range(1, 80):
        assert not layout.update({"step": step, "ep": 0.101 + step / 100, "tokens": 100512.0 + 512 * step})
        assert layout.cols is shown
        row = {"step": step, "ep": 0.101 + step / 100, "tokens": 100512.0 + 512 * step}
        assert render.row(layout.cols, row) == render.SEP.join(render.cells(layout.cols, row))
    width = layout.cols[1].width
    assert layout.update({"step": 80, "ep": -0.9, "tokens": 141472.0})
    assert layout.cols[1].width == width + 1
    assert render.row(layout.cols, {"ep": -0.9}).split()[0] == "-.900"


def test_the_header_cadence_counts_alert_lines_and_the_default_keeps_one_in_any_30_lines(captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f"), Col("gn", 6, "gn")]
    with StepLogger(cols, header_every=4) as sl:
        for step in range(6):
            sl.log({"step": step, "loss": math.nan if step == 1 else 1.0, "gn": 1.0})
    lines = [line.rstrip("\n") for line in captured][:9]
    # the alert after row 1 is a line of the log: the header comes again after 4 lines, before row 3
    assert [line.split()[1] if line[0] == "I" else line[:6] for line in lines] == [
        "step", "0", "1", "E step", "2", "step", "3", "4", "5"]
    captured.clear()
    with StepLogger(cols) as sl:
        for step in range(300):
            sl.log({"step": step, "loss": math.nan if step % 37 in (5, 6) else 1.0 + 0.01 * (step % 4), "gn": 1.0})
    out = [line for line in "".join(captured).split("end of run")[0].splitlines() if line]
    heads = [i for i, line in enumerate(out) if re.match(r"I +step ", line)]
    assert sum(line.startswith("E ") for line in out) > 5
    assert max(b - a for a, b in zip(heads, [*heads[1:], len(out)], strict=True)) <= 30  # (26: rows and alerts)
    assert len(heads) < 300 / 20  # fewer than the 20-row cadence printed before


def test_a_column_its_notation_narrows_is_printed_narrower_only_under_the_next_header_due(
        captured: list[str]) -> None:
    cols = [Col("step", 5, "step", "d"), Col("adv", 9, "adv")]
    with StepLogger(cols, alerts=False, header_every=3) as sl:
        for step, adv in enumerate([-0.000721, -0.0103, 0.0064, 0.0081, -0.0204]):
            sl.log({"step": step, "adv": adv})
    text = "".join(captured).split("end of run")[0]
    # -.0103 takes the column to ten-thousandths (6 cells, not 8): no header for that alone; the header due after
    # three rows prints the column as narrow as its values now need
    assert _headers(text) == ["step      adv", "step    adv"]
    assert _rows(text) == ["   0 -.000721", "   1   -.0103", "   2    .0064", "   3  .0081", "   4 -.0204"]


def test_an_abbreviated_key_with_a_newline_and_escapes_is_named_inert_in_the_legend_and_its_row_printed(
        captured: list[str]) -> None:
    """The legend line of an abbreviated header names its key: a newline in the key (a fake row in the legend, and
    a description the column set refuses: the first row was lost to the console) and escape sequences are made
    inert there, and the first row is printed."""
    key = "completion_len\nI    99 fake row\x1b]52;c;ZXZpbA==\x07\u202e"
    with StepLogger(alerts=False) as sl:
        line = sl.log({"step": 1, key: 1451.0, "loss": 0.5})
    text = "".join(captured)
    assert line is not None and "1451" in line and "log failed" not in text
    assert " cli  completion_len⏎I    99 fake row\n" in text  # named once, on one line
    assert not any(bad in text for bad in ("\x1b", "\x07", "\u202e"))
    assert not any(re.match(r"I +99 fake", ln) for ln in text.splitlines())


def test_a_value_a_fixed_spec_rounds_to_zero_is_written_within_its_column(captured: list[str]) -> None:
    """A tiny loss in a ``+.2f`` column reads as its magnitude in the cells the column has (``-.005``, never
    ``-0.00``), not at 3 digits in a wider column with its header again; a value that is too wide still widens."""
    cols = [Col("step", 4, "step", "d"), Col("loss", 7, "loss", "+.2f"), Col("cos", 6, "cos", "+.2f")]
    values = [(0.05, 0.08), (-0.00474, 0.00238), (0.03, -0.0007), (0.00196, 3e-9), (-0.02, 0.01)]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        for i, (loss, cos) in enumerate(values):
            sl.log({"step": i, "loss": loss, "cos": cos})
        sl.log({"step": 5, "loss": -12.345, "cos": 0.0})
    text = "".join(captured)
    rows, headers = _rows(text), _headers(text)
    assert rows[:5] == ["   0 +0.05 +0.08", "   1 -.005 .0024", "   2 +0.03 -7e-4", "   3  .002  3e-9",
                        "   4 -0.02 +0.01"]
    assert rows[5] == "   5 -12.35 +0.00" and len(headers) == 2  # (too wide for 5 cells: the column widens)


def test_a_fixed_spec_column_starts_as_wide_as_its_spec_writes_a_number(captured: list[str]) -> None:
    """A ``+.2f`` column whose first value is NaN or not logged yet (a gate warming up) is printed as wide as
    ``+0.00`` from the first row, and a fraction ``n/d`` as wide as ``d/d``: the numbers that follow need no header
    again. A column of the automatic format has no such width before its numbers come."""
    cols = [Col("step", 4, "step", "d"), Col("tlo", 6, "tlo", "+.2f"), Col("auroc", 6, "auroc", ".2f"),
            Col("hs", 6, "hs", "frac"), Col("kl", 6, "kl")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        sl.log({"step": 0, "tlo": math.nan, "hs": (1, 32)})
        for i in range(1, 12):
            sl.log({"step": i, "tlo": -0.51, "auroc": 0.84, "hs": (i, 32), "kl": 0.25})
    text = "".join(captured)
    headers = _headers(text)
    assert headers == ["step   tlo auroc    hs  kl"], headers
    assert _rows(text)[0] == "   0   NaN        1/32    "  # (auroc and kl not logged: blank)
    assert _rows(text)[-1] == "  11 -0.51  0.84 11/32 .25"


def test_a_value_rounded_away_is_measured_where_its_magnitude_shows() -> None:
    """Cells a value needs in a column of ``room`` cells (at most 7): its magnitude where it shows there, else its own
    form; never a text that reads as zero for a value that is not."""
    assert need(-0.00474, "+.2f", 7, room=5) == 5  # -.005
    assert need(0.00474, "+.2f", 7, room=6) == 6  # .00474 where the column has the cells
    assert need(0.004, ".0f", 6, room=1) == 4  # "0" would read as zero: .004
    assert need(6e-5, ".1%", 8, room=4) == 5  # "0.0%" would: .006%
    assert need(12.345, "+.2f", 7, room=5) == 6  # too wide, not rounded away: the spec's +12.35
    assert need(0.0, "+.2f", 7, room=3) == 5  # a true zero: the spec's +0.00


def test_a_float_subclass_rounded_away_is_measured_by_its_value(captured: list[str]) -> None:
    """A float subclass's own ``__format__`` and operators are never asked (they could raise, or print anything):
    a tiny one in a ``+.2f`` column is measured and written by its value, and the row is logged."""

    class Sneaky(float):
        def __format__(self, spec: str) -> str:
            raise RuntimeError("not asked")

        def __sub__(self, other: object) -> float:
            raise RuntimeError("not asked")

    cols = [Col("step", 4, "step", "d"), Col("loss", 7, "loss", "+.2f")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        lines = [sl.log({"step": i, "loss": Sneaky(v)}) for i, v in enumerate([0.05, -0.00474, 0.03])]
    assert lines == ["   0 +0.05", "   1 -.005", "   2 +0.03"]


def test_a_fraction_of_int_subclasses_is_measured_by_its_value(captured: list[str]) -> None:
    """Passes given as int subclasses whose comparisons raise are laid out by their values: every row logged."""

    class Sneaky(int):
        def __le__(self, other: object) -> bool:
            raise RuntimeError("not asked")

        __ge__ = __lt__ = __gt__ = __le__

    cols = [Col("step", 4, "step", "d"), Col("hs", 6, "hs", "frac")]
    with StepLogger(cols, alerts=False, header_every=0) as sl:
        lines = [sl.log({"step": i, "hs": (Sneaky(i), Sneaky(32))}) for i in (0, 10)]
    assert lines == ["   0  0/32", "  10 10/32"]


def test_a_value_the_decimals_round_away_is_written_in_the_cells_its_column_has() -> None:
    """A clip ratio of 9e-6 under ``.0149`` is written ``9e-6``, not ``.0000``, in the column's 5 cells: no wider
    column, no header for it (as a fixed spec's zero is, :func:`need`); a column too narrow for any form of it is
    widened to the fewest cells that show it."""
    layout = ConsoleLayout([Col("step", 4, "step", "d"), Col("clip_ratio", 10, "clip"), Col("x", 8, "x")])
    assert layout.update({"step": 0, "clip_ratio": 0.0149, "x": 0.25})
    before = layout.cols
    assert [c.width for c in before] == [4, 5, 3]
    assert not layout.update({"step": 1, "clip_ratio": 9e-6, "x": 0.5})
    assert layout.cols == before and render.row(layout.cols, {"step": 1, "clip_ratio": 9e-6, "x": 0.5}).split() == [
        "1", "9e-6", ".50"]
    assert layout.update({"step": 2, "clip_ratio": 0.0151, "x": 1.2e-5})  # ('.00' in 3 cells: '1e-5' needs 4)
    assert [c.width for c in layout.cols] == [4, 5, 4]
    assert render.row(layout.cols, {"step": 2, "clip_ratio": 0.0151, "x": 1.2e-5}).split() == ["2", ".0151", "1e-5"]


def test_numbered_keys_at_80_columns_are_headed_by_their_whole_number(
        captured: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """40 keys ``metric_0`` ... ``metric_39`` in an 80-column terminal: ``metric_10`` over 4-cell values is ``m10``,
    not a cut of its name (``metr``, ``met``...) nor a counter on ``metric_1``'s ``m1`` (``m1~2``)."""
    monkeypatch.setenv("COLUMNS", "80")
    rnd = random.Random(0)
    with StepLogger(alerts=False) as sl:
        for step in range(30):
            sl.log({"step": step, **{f"metric_{i}": rnd.uniform(0, 10 ** (i % 4)) for i in range(40)}})
    text = "".join(captured)
    legend = dict(re.findall(r"^ (\S+) +metric_(\d+)$", text, re.M))  # header -> the key's number
    assert len(legend) > 12 and all(h == f"m{n}" for h, n in legend.items())
    header = _headers(text)[0].split()
    assert len(set(header)) == len(header) and set(legend) <= set(header)


def test_sibling_statistics_over_narrow_values_keep_the_word_that_tells_them_apart() -> None:
    """verl's ``critic/score/max`` and ``/min`` (and TRL's ``completions/min_length`` and ``/max_length``) read
    ``smax``, ``smin``: their shared initials ``sm`` would not say which, nor would a cut ``scor``."""
    heads = {"critic/score/max": "score/max", "critic/score/min": "score/min", "critic/rewards/max": "rewards/max",
             "critic/rewards/min": "rewards/min", "completions/min_length": "compl/min_length",
             "completions/max_length": "compl/max_length", "layer_11/grad_norm": "layer_11/gnorm"}
    layout = ConsoleLayout([Col("step", 4, "step", "d"), *(Col(k, 18, h) for k, h in heads.items())])
    values = [303.0, 4.05, 4.05, 259.0, 1024.0, 2048.0, 303.0]  # 3 or 4 cells each
    layout.update({"step": 0, **dict(zip(heads, values, strict=True))})
    assert [c.header for c in layout.cols] == ["step", "smax", "smin", "rmax", "rmin", "minl", "maxl", "l11"]
