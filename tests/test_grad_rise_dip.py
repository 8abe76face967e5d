"""The grad-norm rise after a dip: a GRPO stretch of zero-advantage groups puts the grad norm near 0 for tens of
steps; its lowest 50-row median falls to a fifth of the usual level, and the end of the stretch read as a rise
("W rise to .967 (x4.51 its lowest level .215)"). A rise must also pass twice the level held before that low, or
that of the older half of the last 300 rows when lower (a run settled below an early level): so a dip of more than
about 120 rows is at last read as the level the rise is measured from, and its end said as a rise 150-200 rows
after it."""

from __future__ import annotations

import random

import pytest

from steptable.alerts.engine import AlertConfig, AlertEngine
from tests.alerts.helpers import lines, resumed


def _dipped(seed: int, dip: int, after: list[float] | None = None) -> list[float]:
    """300 steps of a grad norm ~1, ``dip`` steps ~0.2, then 200 steps ~1 (or ``after``'s levels)."""
    rng = random.Random(seed)
    tail = after if after is not None else [1.0] * 200
    return ([abs(rng.gauss(1.0, 0.15)) for _ in range(300)] + [abs(rng.gauss(0.2, 0.05)) for _ in range(dip)]
            + [abs(rng.gauss(level, 0.15 * level)) for level in tail])


@pytest.mark.parametrize("dip", [26, 30, 40, 90, 120])
def test_the_end_of_a_dip_is_no_rise(dip: int) -> None:
    # before: every seed read a rise for dips of 30 rows and more (2 in 10 at 26)
    for seed in range(10):
        got = [line for line in lines("grad_norm", _dipped(seed, dip)) if "rise" in line]
        assert got == [], (seed, got)


def test_a_blow_up_after_a_dip_is_still_a_rise() -> None:
    # back to ~1 for 100 steps, then climbing 0.05 a step: a W once the level passes twice the level before the dip
    # (and 4x its lowest), quoting that lowest level
    for seed in range(10):
        got = [line for line in lines("grad_norm", _dipped(seed, 40, [1.0] * 100 + [1 + i / 20 for i in range(100)]))
               if "rise" in line]
        assert len(got) == 1, (seed, got)
        level = float(got[0].split("rise to ")[1].split()[0])
        assert 1.8 < level < 2.8 and "its lowest level .2" in got[0], got


def test_a_blow_up_without_a_dip_is_said_at_four_times_its_lowest_level() -> None:
    for seed in range(10):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(1.0, 0.15)) for _ in range(300)] + [abs(rng.gauss(1 + i / 20, 0.15)) for i in range(100)]
        got = [line for line in lines("grad_norm", xs) if "rise" in line]
        assert len(got) == 1 and "(x4." in got[0], got


def test_a_grad_norm_that_decays_then_blows_up_is_a_rise() -> None:
    # a decay from 10 to .5 over 600 steps: the level before each new low follows it down
    for seed in range(10):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(10 * 0.99**i + 0.5, 0.05)) for i in range(600)]
        xs += [abs(rng.gauss(0.5 + i / 40, 0.05)) for i in range(150)]
        got = [line for line in lines("grad_norm", xs) if "rise" in line]
        assert len(got) == 1 and "(x4." in got[0], got


def test_a_resume_after_a_dip_carries_the_level_before_it() -> None:
    # the dip at steps 300-339 lies in rows the resumed engine does not replay; the return after the resume is no
    # rise there either, and a resumed engine says what one engine reading the kept and new rows says
    xs = _dipped(3, 40, [1.0] * 3000)
    kept = list(enumerate(xs[:3000]))
    crashed = kept + [(s, 1.0) for s in range(3000, 3100)]
    new = [(s, x) for s, x in enumerate(xs[3000:], start=3000)]
    got, want = resumed("grad_norm", crashed, kept, new)
    assert got == want
    assert not [line for line in got if "rise" in line]


def test_a_resume_carries_the_level_before_the_low_with_the_low() -> None:
    # ~1, the dip, then 1.5 for 3000 steps (all the resumed engine replays), then 2.5 after the resume: 2.5x the
    # level before the dip is a rise, as one engine reading it all says; the replay alone knows only 1.5
    xs = _dipped(4, 40, [1.5] * 2700 + [2.5] * 200)
    kept = list(enumerate(xs[:3040]))
    crashed = kept + [(s, 1.5) for s in range(3040, 3100)]
    new = [(s, x) for s, x in enumerate(xs[3040:], start=3040)]
    got, want = resumed("grad_norm", crashed, kept, new)
    assert got == want
    assert [line for line in got if "rise" in line]


def test_the_level_before_the_low_is_the_config_s_multiple() -> None:
    xs = _dipped(5, 40, [1.0] * 50 + [1.6] * 150)
    assert not [line for line in lines("grad_norm", xs) if "rise" in line]
    eng = AlertEngine(AlertConfig(flat_rows=0, grad_rise_pre=1.5))
    said = [a.line() for i, x in enumerate(xs) for a in eng.update(i, {"grad_norm": x})]
    assert [line for line in said if "rise" in line]


def _rises(xs: list[float]) -> list[str]:
    return [line for line in lines("grad_norm", xs) if "rise" in line]


def test_a_blow_up_long_after_an_early_drop_is_a_rise() -> None:
    # the level before the low (5, the first 40 steps) is long gone: 2,000 steps at .5 are where a rise is read from
    for seed in range(3):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(5, 0.5)) for _ in range(40)] + [abs(rng.gauss(0.5, 0.05)) for _ in range(2000)]
        got = _rises(xs + [abs(rng.gauss(3.0, 0.3)) for _ in range(200)])
        assert len(got) == 1 and got[0].startswith("W step 204"), got


def test_a_fast_warmup_decay_then_a_climb_is_said_at_four_times_the_low() -> None:
    for seed in range(3):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(1 + 9 * 0.955**i, 0.1)) for i in range(1600)]
        got = _rises(xs + [abs(rng.gauss(1 + i / 50, 0.1)) for i in range(400)])
        assert len(got) == 1 and "(x4.0" in got[0], got


def test_a_blow_up_after_a_lasting_drop_below_the_early_level_is_a_rise() -> None:
    # 1, then 0.1 for 3,000 steps (a learning-rate cut), then x8 of that: below the early level, still a rise
    for seed in range(3):
        rng = random.Random(seed)
        xs = [abs(rng.gauss(1, 0.15)) for _ in range(300)] + [abs(rng.gauss(0.1, 0.015)) for _ in range(3000)]
        assert len(_rises(xs + [abs(rng.gauss(0.8, 0.1)) for _ in range(200)])) == 1


@pytest.mark.parametrize(("start", "length"), [(200, 100), (200, 140), (215, 100), (215, 140), (245, 60)])
def test_a_resume_whose_replay_begins_inside_a_dip_says_what_one_engine_says(start: int, length: int) -> None:
    # the replay reads the first 20 rows and the last 80 before the resume at 300 (inside the dip); the crashed
    # run's rows went on in the dip, so the old engine's lowest was set after the resume
    for seed in range(8):
        rng = random.Random(seed)

        def level(s: int, rng: random.Random = rng) -> float:
            return abs(rng.gauss(0.2, 0.05)) if start <= s < start + length else abs(rng.gauss(1.0, 0.15))

        xs = [level(s) for s in range(600)]
        kept = list(enumerate(xs[:300]))
        crashed = kept + [(s, level(s)) for s in range(300, 400)]
        got, want = resumed("grad_norm", crashed, kept, list(enumerate(xs[300:], start=300)))
        assert got == want, (seed, got, want)
        assert length > 120 or not [line for line in got if "rise" in line]  # (longer dips: see the module doc)
