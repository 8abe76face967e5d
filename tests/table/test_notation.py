"""One number notation per column (steptable.table.notation): chosen from the column's range, kept while values stay
inside it, chosen again only when one leaves it; the live logger's from the values seen so far."""

from __future__ import annotations

import math
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from steptable.logger.consolecols import ConsoleLayout
from steptable.table import render
from steptable.table.columns import Col, with_notations
from steptable.table.formatting import format_value
from steptable.table.notation import LOW_RUN, Column, Notation, choose, of_values, unit
from steptable.table.running import SPIKE_APART, Running


def texts(values: list[float | None], width: int = 8, key: str = "x") -> list[str]:
    """Each value's cell in a column of ``values`` shown whole (as tail and the app show it)."""
    rows = [{key: v} for v in values]
    cols = with_notations([Col(key, width, key)], rows)
    return [render.cells(cols, r)[0].strip() for r in rows]


def test_the_mixed_loss_column_is_written_in_one_notation() -> None:
    # the column: -0.03, -.00011, -5.5e-5, .00408 (three notations, per cell)
    got = texts([-0.03, -0.00011, -5.5e-5, 0.00408])
    assert got == ["-.0300", "-.0001", "-.0001", ".0041"]
    assert len({len(t.lstrip("-")) for t in got}) == 1  # the points line up


def test_a_tenfold_gradient_spike_reads_as_ten_times_wider() -> None:
    got = texts([1.0123, 12.1, 1.0501])
    assert got == ["1.0", "12.1", "1.1"]  # not 1.0e0 beside 1.2e1: one more integer digit
    assert len(got[1]) == len(got[0]) + 1


def test_a_column_out_of_the_positional_range_shares_one_exponent() -> None:
    assert texts([2e-8, 4e-7, 1.23e-6], width=13) == [".02e-6", ".40e-6", "1.23e-6"]
    assert texts([3.2e9, 1.25e8]) == ["3.20e9", ".12e9"]


def test_never_more_than_three_significant_digits_whatever_the_width() -> None:
    assert texts([0.123456, 0.654321], width=20) == [".123", ".654"]
    assert texts([123.456, 7.5], width=20) == ["123", "8"]
    assert texts([1234.5678, 999.9], width=20) == ["1235", "1000"]  # whole numbers show whole
    assert choose(0.5, 20) is not None and choose(0.5, 20).decimals == 3  # type: ignore[union-attr]


def test_exact_values_keep_their_own_digits() -> None:
    assert texts([2.5, 1.0, 0.25]) == ["2.50", "1.00", ".25"]
    assert texts([1.5, 3.0, 4.5]) == ["1.5", "3.0", "4.5"]
    assert texts([1.0, 2.0, 30.0]) == ["1", "2", "30"]


def test_nan_inf_and_not_logged_are_unchanged() -> None:
    assert texts([0.5, math.nan, math.inf, -math.inf, None, 0.0, 0.2513]) == [
        ".500", "NaN", "inf", "-inf", "", "0", ".251"]


def test_a_narrow_column_gets_fewer_decimals_not_a_per_cell_form() -> None:
    assert texts([0.0021, 0.0049, 0.0013], width=5) == [".0021", ".0049", ".0013"]
    assert texts([0.0021, -0.0049, 0.0013], width=5) == [".002", "-.005", ".001"]
    assert texts([0.5, 0.25, 0.125]) == [".500", ".250", ".125"]


def test_a_value_inside_the_range_never_changes_earlier_cells() -> None:
    base = [0.41, -0.073, 0.298, 0.0051]
    before = texts(base)
    for inside in (0.5, -0.9, 0.0003, 0.123456, 0.0):
        assert texts([*base, inside])[:-1] == before, inside


def test_a_value_far_outside_the_range_changes_the_notation_once() -> None:
    base = [0.41, -0.073, 0.298]
    far = texts([*base, 15.3])
    assert far == [".4", "-.1", ".3", "15.3"]
    assert texts([*base, 15.3, 12.0, 0.5])[:4] == far  # later values inside the new range change nothing


def test_the_live_notation_comes_from_the_values_seen_so_far() -> None:
    running = Running(8)
    changed = [running.see(v) for v in (0.4137, -0.0731, 0.2983, 0.00512, 0.6271)]
    assert changed == [True, False, False, False, False]  # the first negative fits the width: kept
    n = running.notation
    assert n is not None and [n.text(v) for v in (0.4137, -0.0731, 0.00512)] == [".414", "-.073", ".005"]
    assert running.see(15.3) is False and not running.held  # a lone value past the top: written on its own
    assert running.see(0.4137) is False and running.held and running.notation == n
    assert running.see(12.01) is True  # a second within 100 values: chosen again, once, with the first
    assert running.notation is not None and running.notation.text(15.3) == "15.3"
    assert [running.see(v) for v in (0.4137, 12.01, -3.2213)] == [False, False, False]


def test_a_lone_spike_leaves_the_live_notation_and_its_digits_as_they_were() -> None:
    """A gradient norm of .3-.6 with one spike of 12: the values after it keep their 3 digits (chosen again with
    the spike, they would read .4 until LOW_RUN of them had passed)."""
    running = Running(4)
    for i in range(40):
        running.see(0.3 + (i % 7) / 23)
    before = running.notation
    assert before is not None and before.text(0.4123) == ".412"
    assert running.see(12.0) is False and not running.held
    for i in range(SPIKE_APART):
        assert running.see(0.35 + (i % 5) / 31) is False and running.held
    assert running.notation == before
    # more than SPIKE_APART values later a spike is lone again; two within them are a new range
    assert running.see(14.0) is False and not running.held
    assert running.see(0.41) is False
    assert running.see(13.0) is True and running.held
    assert running.notation is not None and running.notation.text(14.0) == "14.0"
    assert running.notation.text(0.4123) == ".4"


def test_a_shared_exponent_shown_in_the_header_is_measured_by_the_cells_it_prints() -> None:
    """9.87e-7 in 6 cells: written with its exponent in each cell, 2 significant digits fit (9.9e-7); shown as
    whole units under the header's power of ten, all 3 do (987 under e-9)."""
    alone = choose(9.87e-7, 6)
    shown = choose(9.87e-7, 6, scaled=True)
    assert alone is not None and alone.text(9.87e-7) == "9.9e-7"
    assert shown is not None and shown.in_header().text(9.87e-7) == "987" and shown.in_header().exp == -9
    # the sign cell counts too; a positional column is not affected
    negative = choose(9.87e-7, 4, negative=True, scaled=True)
    assert negative is not None and negative.in_header().text(-9.87e-7) == "-987"
    assert choose(0.412, 4, scaled=True) == choose(0.412, 4)


def test_a_schedule_past_its_top_is_a_new_range_in_the_same_unit_where_the_unit_is_in_the_header() -> None:
    """An lr warmup (exact values, 2e-8 a step): 1e-7 after 8e-8 is past the notation's top. Shown scaled (the
    console's ``lr e-8``), the unit writes it as ``10``: a change of range, chosen at once with the unit kept.
    Unscaled (each cell with its exponent), the same value is a lone spike, as before."""
    warmup = [2e-8 * k for k in range(1, 5)]
    scaled, plain = Running(13, scaled=True), Running(13)
    for v in warmup:
        scaled.see(v)
        plain.see(v)
    assert scaled.notation == plain.notation and scaled.notation is not None
    unit = scaled.notation.in_header()
    assert unit.text(8e-8) == "8" and not unit.holds(1e-7)
    assert scaled.see(1e-7) is True and scaled.held
    assert scaled.notation is not None and scaled.notation.in_header().exp == unit.exp
    assert scaled.notation.in_header().text(1e-7) == "10"
    assert plain.see(1e-7) is False and not plain.held  # (unscaled: written on its own, the notation kept)
    # a measured column's spike stays a spike scaled too: its unit already writes the biggest in 3 digits
    kl = Running(13, scaled=True)
    for i in range(30):
        kl.see(3.1e-5 + i * 1.7e-7)
    assert kl.see(4.2e-3) is False and not kl.held


def test_a_spike_below_zero_in_a_column_that_never_was_is_a_new_range() -> None:
    running = Running(8)
    for v in (0.41, 0.37, 0.52):
        running.see(v)
    assert running.see(-7.5) is True  # its sign cell: the notation is chosen again at once
    assert running.held and running.notation is not None and running.notation.text(-7.5) == "-7.50"


def test_the_live_notation_follows_a_loss_that_decayed_by_decades() -> None:
    running = Running(8)
    running.see(0.9137)
    for i in range(LOW_RUN - 1):
        assert running.see(0.0012 + i * 1.1e-6) is False
    assert running.see(0.00131) is True
    assert running.notation is not None and running.notation.text(0.00131) == ".00131"


def test_a_reader_follows_a_loss_that_decayed_by_decades_as_the_live_logger_does() -> None:
    """A whole column whose newest LOW_RUN values would show one significant digit in the notation of its first,
    bigger ones is written in the notation of those newest values, as the live logger writes it: ``tail -n 5`` at
    the end of a run reads the loss still falling (.0630 .0628 ...), not ``.06`` five times."""
    loss = [2.3 * math.exp(-s / 250) + 0.02 for s in range(1000)]
    n = of_values(loss, 8)
    assert n is not None and [n.text(x) for x in loss[-3:]] == [".0626", ".0625", ".0623"]
    live = Running(8)
    for x in loss:
        live.see(x)
    assert live.notation == n  # the same digits as the console's row
    # the first rows, outside it, are written on their own
    shown = texts(loss)
    assert not n.holds(loss[0]) and (shown[0], shown[-1]) == ("2.32", ".0623")
    # one run of the column not decayed (another arm): the notation is chosen from every run's values
    both, still = Column(), [0.5 + 0.01 * math.sin(s) for s in range(1000)]
    both.take_all(array("d", loss))
    both.take_all(array("d", still))
    kept = both.notation(8)
    assert kept == of_values(loss + still, 8) != n and kept is not None and kept.text(loss[-1]) == ".06"
    # fewer than LOW_RUN low values at the end, or a zero among them: as before
    for tail in (loss[-(LOW_RUN - 1):], [*loss[-LOW_RUN:-5], 0.0, *loss[-5:]]):
        assert of_values(loss[:1] + tail, 8) == of_values(loss[:1], 8)


def test_a_column_crossing_zero_keeps_its_notation() -> None:
    running = Running(8)
    running.see(0.0513)
    running.see(-0.0417)
    for i in range(200):
        v = 0.000417 if i % 5 else -0.0417  # small values, never LOW_RUN of them in a row
        assert running.see(v) is False


def test_the_live_row_writes_each_column_in_its_running_notation() -> None:
    layout = ConsoleLayout([Col("step", 4, "step", "d"), Col("gn", 6, "gn")])
    shown = []
    for step, gn in enumerate([1.0123, 1.2, 12.1, 1.05]):
        layout.update({"step": step, "gn": gn})
        shown.append(render.cells(layout.cols, {"step": step, "gn": gn})[1].strip())
    # from the values seen so far (3 digits); a lone spike is written on its own, the notation kept
    assert shown == ["1.01", "1.20", "12.1", "1.05"]


def test_of_values_takes_numbers_only() -> None:
    assert of_values(["text", None, math.nan, True, 3], 8) is None
    assert of_values([0.0, 0.0], 8) is None


def test_a_rare_spike_is_written_on_its_own_not_every_other_value_as_a_whole_number() -> None:
    values = [0.5 + i / 1000 for i in range(199)] + [1234.5]
    got = texts(values)
    assert got[:3] == [".500", ".501", ".502"] and got[-1] == "1234"  # still reads 2000x bigger
    assert len({len(t) for t in got[:-1]}) == 1


def test_the_compiled_row_writes_what_the_cells_write_in_every_notation() -> None:
    import random

    rng = random.Random(7)
    specials = [math.nan, math.inf, -math.inf, None, 0.0, -0.0, 3, True, "text", 2**60, 1e-300]
    for _ in range(300):
        scale = 10.0 ** rng.randint(-9, 9)
        col = [rng.choice([1.0, -1.0]) * rng.random() * scale for _ in range(20)]
        if rng.random() < 0.3:
            col = [round(v, rng.randint(0, 3)) for v in col]  # exact values: a notation with their own places
        width = rng.randint(3, 12)
        cols = with_notations([Col("x", width, "x")], [{"x": v} for v in col])
        row = render.compile_row(cols)
        for v in [*col, *specials, rng.random() * scale * 50, rng.random() * scale / 1e4]:
            assert row({"x": v}) == render.cells(cols, {"x": v})[0], (cols[0].notation, v)


def test_the_extreme_decades_of_a_double_have_a_notation() -> None:
    """A column holding 1e308 (whose next decade is past the largest double) or 5e-324 (whose decade's power of ten
    is 0 as a double) is written, not an OverflowError or a division by zero."""
    for biggest, text in ((1e308, "1.00e308"), (1.7976931348623157e308, "1.80e308"), (5e-324, "5e-324")):
        n = choose(biggest, 12)
        assert n is not None and n.text(biggest) == text
        assert n.half() >= 0 and n.low() > 0


@settings(max_examples=500, deadline=None)
@given(st.floats(1e-12, 1e12), st.integers(1, 12), st.booleans(), st.integers(0, 12), st.booleans())
def test_a_chosen_notation_writes_the_biggest_value_in_its_width_with_a_digit_of_its_own(
        biggest: float, width: int, negative: bool, places: int, scaled: bool) -> None:
    """A column's notation holds the value it was chosen from, in the cells it was chosen for, and shows at least
    one of its digits: a KL column of 1.04e-4 in 3 cells got '.00' decimals, held none of its values and printed
    every one as ``###``."""
    from steptable.table.notation import places_of

    places = max(places, places_of(biggest))
    n = choose(biggest, width, negative, places, scaled)
    if n is None:
        return
    shown = n.in_header() if scaled else n
    for x in (biggest, -biggest) if negative else (biggest,):
        assert shown.holds(x), (n, x)
        text = shown.text(x)
        assert len(text) <= width, (n, text)
        assert any(ch in "123456789" for ch in text), (n, text)


def test_a_kl_growing_past_the_positional_range_in_a_narrow_column_keeps_its_digits() -> None:
    """The console's KL column, 3 cells wide at its first row (0), growing from 3e-6 to 1.2e-4: the unit in the
    header follows it (``kl e-6`` over ``104``), never a column of ``###``."""
    lay = ConsoleLayout([Col("kl", 3, "kl")])
    cells = []
    for s in range(40):
        v = 0.001 * (1 - math.exp(-s / 300))
        lay.update({"kl": v})
        cells.append((lay.cols[0].header, lay.row({"kl": v}).strip()))
    assert all("#" not in c for _, c in cells)
    assert cells[33] == ("kl e-6", "104")


def test_a_shared_exponent_moved_to_the_header_leaves_whole_numbers_that_mean_the_same() -> None:
    n = choose(1e-6, 13)
    assert n is not None and n.text(1e-6) == "1.00e-6"
    m = n.in_header()
    assert (m.exp, m.scaled, unit("lr", m)) == (-8, True, "lr e-8")
    assert [m.text(x) for x in (1e-6, 2e-8, 2.4e-7, 0.0)] == ["100", "2", "24", "0"]
    # the values held are the same; a non-zero value that rounds to no whole unit keeps its sign, never reads as 0
    for x in (1e-6, 2e-8, 9.99e-6, 1e-5, 3e-12, -3e-12):
        assert m.holds(x) == (n.holds(x) or 0 < abs(x) < n.half())
    assert (m.text(3e-12), m.text(-3e-12)) == ("+0", "-0")
    assert (m.low(), m.half(), m.top) == (n.low(), n.half(), n.top)
    # a positional notation has no exponent to move; a scaled one stays as it is
    p = choose(0.5, 6)
    assert p is not None and p.in_header() is p and unit("rew", p) == "rew" and m.in_header() is m
    assert unit("rew", None) == "rew"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 0.25, -2.5, 1e-6, 3.0, 1451.0, 0.1 + 0.2, 5.5e-5]),
    st.integers(-5, 5).map(lambda k: k / 4),
), max_size=300))
def test_a_float_array_taken_in_bulk_gives_what_taking_each_value_gives(values: list[float]) -> None:
    one, bulk = Column(), Column()
    for v in values:
        one.take(v)
    bulk.take_all(array("d", values))
    assert (bulk.biggest, bulk.negative, bulk.places, bulk.floats, list(bulk.magnitudes)) == \
        (one.biggest, one.negative, one.places, one.floats, list(one.magnitudes))
    for width in (3, 5, 8):
        assert bulk.notation(width) == one.notation(width)


def test_the_running_notation_remembering_held_values_decides_as_it_does_without_them() -> None:
    """Values seen again (an exact column's lengths) are not checked again: on sequences with repeats, low runs,
    first negatives and values past the top, each step's notation and ``held`` are those of a Running that
    remembers nothing, scaled or not."""
    import random

    from steptable.table import running as nt

    rng = random.Random(5)
    remembered = 0
    for trial in range(300):
        # an exact column (lengths, fractions of a batch), now and then a value that leaves or shifts its notation
        pool = ([float(rng.randint(1, 99)) for _ in range(6)] if trial % 2 else
                [rng.randint(-8, 8) / 4 for _ in range(6)])
        odd = [round(rng.choice([1, -1]) * 10 ** rng.uniform(-6, 4), rng.randint(0, 4)), 0.0, 1e-7, 2e-7, 0.5]
        values = [rng.choice(odd if rng.random() < 0.03 else pool) for _ in range(rng.randint(1, 120))]
        width, scaled = rng.randint(3, 10), trial % 3 == 0  # (scaled: the console's unit in the header)
        fast = Running(width, scaled)
        ref = Running(width, scaled)
        for v in values:
            changed = fast.see(v)
            known_max, nt.KNOWN_MAX = nt.KNOWN_MAX, 0
            try:
                assert ref.see(v) == changed, (trial, v)
            finally:
                nt.KNOWN_MAX = known_max
            assert (fast.notation, fast.held) == (ref.notation, ref.held), (trial, v)
        remembered += len(fast._known)
    assert remembered  # the memo is used, not bypassed


def test_a_non_zero_value_is_never_written_as_zero_digits() -> None:
    """A value a column's fixed decimals would round away (``.0000``, ``-.000``: read as a true zero) is outside its
    notation and written on its own; zero is still ``0``."""
    assert texts([0.0123, 3e-6, -2.1e-5, 0.0]) == [".0123", "3e-6", "-2.1e-5", "0"]
    # a double at the half of the last decimal rounds either way ('{5e-7:.6f}' is '0.000000'): outside too
    for decimals in range(1, 13):
        n = Notation(decimals)
        half = 0.5 * 10.0**-decimals
        for x in (math.nextafter(half, 0), half, math.nextafter(half, 1), -half):
            assert not n.holds(x) or n.text(x).strip("-.0"), (decimals, x)
    # the review's case: a run decayed to 5e-6 beside a run of thousandths, one notation chosen from both (tail -f
    # with a second run in the project): the first run's values are written on their own, not '.00000'
    column = Column()
    column.take_all(array("d", [1 / (i + 1) for i in range(199_000, 200_000)]))
    column.take_all(array("d", [2 / (i + 1) for i in range(500)]))
    n = column.notation(7)
    assert n is not None and not n.holds(4.99e-6)
    assert format_value(4.99e-6, None, 7, notation=n) == "4.99e-6"


def test_the_live_notation_writes_a_value_its_decimals_round_away_on_its_own_and_follows_the_decay() -> None:
    running = Running(8)
    running.see(0.0123)
    assert running.see(3e-6) is False and not running.held  # ('.0000'): written on its own, the notation kept
    assert running.see(0.0119) is False and running.held
    # a loss fallen past the decimals at once: its values still count as low ones, and the notation follows them
    for i in range(LOW_RUN - 1):
        assert running.see(4e-6 - i * 1e-8) is False and not running.held
    assert running.see(3.7e-6) is True and running.held
    assert running.notation is not None and running.notation.text(3.7e-6) == "3.70e-6"
