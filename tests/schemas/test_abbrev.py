"""steptable.schemas.abbrev: headers for columns narrower than their header: readable forms that fit (initials with
numbers whole, a word kept whole), chosen together so that siblings keep what tells them apart, none two alike."""

from __future__ import annotations

import random

import pytest

from steptable.schemas.abbrev import abbreviate, abbreviations
from steptable.schemas.headers import look
from steptable.table.formatting import display_width


@pytest.mark.parametrize(("header", "room", "want"), [
    ("completion_len_max", 4, "clm"), ("learning_rate", 4, "lr"), ("grad_norm", 4, "gn"), ("entropy", 4, "ent"),
    ("throughput", 4, "thru"), ("train/loss", 5, "loss"), ("actor/pg_loss", 5, "pl"), ("gradNorm", 3, "gn"),
    ("reward", 6, "reward"), ("中文中文", 3, "中"),
])
def test_abbreviate_fits_the_room(header: str, room: int, want: str) -> None:
    assert abbreviate(header, room) == want and display_width(want) <= room


def test_abbreviate_never_reads_like_a_taken_header() -> None:
    # the initials taken: the word that tells it from reward kept whole, not the header cut ("rewa")
    assert abbreviate("reward_std", 4, {"rs"}) == "rstd"
    assert abbreviate("reward", 1, {"r"}) == "rew~2"  # nothing else fits: a counter, wider than the room
    assert abbreviate("x\x1b[2Jy_z", 3) == "xz"  # made terminal-safe first


def test_numbered_keys_keep_their_whole_number() -> None:
    """``metric_10`` is ``m10``, not ``m1`` (``metric_1``'s) nor a cut ``metr``; a number before the last word is
    kept with the words before it (``layer_10/gnorm`` -> ``l10``), over 3-cell values as over 4."""
    metrics = [f"metric_{i}" for i in range(40)]
    assert abbreviations([(h, 4) for h in metrics], {look(h) for h in metrics}) == [f"m{i}" for i in range(40)]
    layers = [f"layer_{i}/gnorm" for i in range(32)]
    wanted = [(h, 3 + i % 2) for i, h in enumerate(layers)]
    assert abbreviations(wanted, {look(h) for h in layers}) == [f"l{i}" for i in range(32)]


def test_siblings_that_differ_by_a_word_keep_that_word() -> None:
    """verl's batch statistics and TRL's completion lengths: initials shared by two siblings (``sm``, ``ml``) go to
    neither; each keeps the word that tells it apart, a cell wider than 3-cell values where only that reads."""
    headers = ["score/max", "score/min", "rewards/max", "rewards/min", "compl/min_length", "compl/max_length"]
    rooms = [3, 4, 4, 3, 4, 4]
    got = abbreviations(list(zip(headers, rooms, strict=True)), {look(h) for h in headers})
    assert got == ["smax", "smin", "rmax", "rmin", "minl", "maxl"]


def test_a_form_that_is_one_header_s_last_readable_one_goes_to_it() -> None:
    # "ent" is all that reads of either in 3 cells: the first has it, the second is cut
    assert abbreviations([("entropy", 3), ("entrance", 3)]) == ["ent", "en"]


@pytest.mark.parametrize("seed", range(8))
def test_no_two_abbreviations_read_alike_nor_like_a_taken_header(seed: int) -> None:
    rnd = random.Random(seed)
    words = ["score", "min", "max", "mean_length", "min_length", "grad_norm", "layer", "reward", "std", "rs", "s"]
    headers = list(dict.fromkeys(
        rnd.choice(["/", "_"]).join(rnd.choice(words) + rnd.choice(["", str(rnd.randrange(12))])
                                    for _ in range(rnd.randint(1, 3))) for _ in range(30)))
    taken = {look(h) for h in headers} | {"sm", "rs", "m1"}
    got = abbreviations([(h, rnd.randint(1, 5)) for h in headers], taken)
    assert len({look(a) for a in got}) == len(got) and not {look(a) for a in got} & taken
