"""Edges of automatic headers that a mutation run left unpinned: bare names, fitting, suffixes, look-alikes."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from steptable.schemas.headers import MAX_HEADER, clean, look, short_header, short_headers
from steptable.table.formatting import display_width
from tests.helpers import run_cli, write_rows


def test_a_key_of_slashes_only_shows_its_own_text() -> None:
    # no segment to shorten: the key itself says most, and "?" is kept for the key with no text at all
    assert short_header("/") == "/" and short_header("//") == "//" and short_header("") == "?"
    assert short_headers(["/", "//", ""]) == {"/": "/", "//": "//", "": "?"}


@pytest.mark.parametrize("key", ["loss", "mean", "total", "avg", "mean@4", "dataloader_idx_0", "val", "eval",
                                 "timing_s"])
def test_a_bare_name_is_its_own_header(key: str) -> None:
    # a statistic, a Lightning suffix or a lead with nothing before or after it is the metric's whole name
    assert short_header(key) == key


def test_a_statistic_namespace_alone_behind_an_eval_lead_is_the_metric() -> None:
    # TRL's clip_ratio: under eval it is still one metric, not a namespace waiting for a tail
    assert short_headers(["clip_ratio", "eval/clip_ratio"]) == {"clip_ratio": "clip", "eval/clip_ratio": "eval/clip"}


def test_a_cut_header_keeps_an_eight_letter_ending() -> None:
    # the ending is what tells eval_clip_ratio/high_max from /low_mean; "eval_clip_ratio/h…" says neither
    assert clean("eval_clip_ratio/high_max") == "eval_cli…/high_max"
    assert clean("eval_clip_ratio/low_mean") == "eval_cli…/low_mean"


def test_a_kept_ending_takes_at_most_half_the_header() -> None:
    # five wide characters (11 cells) would leave the name before them unreadable
    h = clean("rollout_reward_of_group_members/" + "\u5956\u52b1\u5747\u503c\u5dee")
    assert h == "rollout_reward_of…" and display_width(h) == MAX_HEADER


def test_suffixed_headers_stay_within_the_width() -> None:
    # a ~N counter on a long header must not push the column past MAX_HEADER
    hs = short_headers(["a_very_long_header_name_x\u200b", "a_very_long_header_name_x"])
    assert all(display_width(h) <= MAX_HEADER for h in hs.values()), hs
    assert hs["a_very_long_header_name_x"].endswith("~2") and len({look(h) for h in hs.values()}) == 2


def test_a_header_taken_by_a_declared_column_grows_back_to_the_key() -> None:
    # the schema's "loss" column is another metric: train/loss must not be shown under the same header
    assert short_headers(["train/loss"], reserved=["loss"]) == {"train/loss": "train/loss"}


def test_long_names_whose_cuts_coincide_are_told_apart_by_their_path() -> None:
    # both cut to "accuracy_of_the_f…" (start) and "accuracy…answer" (middle): the data source tells them apart,
    # and the grouping env/all never shows
    hs = short_headers(["env/all/gsm8k/answer/accuracy_of_the_final_strict_answer",
                        "env/all/math/answer/accuracy_of_the_final_loosed_answer"])
    assert list(hs.values()) == ["gsm8k/answer/accu…", "math/answer/accur…"]


def test_a_no_break_space_reads_as_a_gap() -> None:
    # "x y" and "xy" read differently: neither gets a counter
    assert short_headers(["lr\u00a0warmup", "lrwarmup"]) == {"lr\u00a0warmup": "lr_warmup", "lrwarmup": "lrwarmup"}


@pytest.mark.parametrize("blank", ["\u00a0", "\u2002", "\u2003", "\u3000", "\u2800", "\t", " "])
def test_a_header_is_one_word_whatever_blank_its_key_holds(blank: str) -> None:
    # an agent splits the table on whitespace (Python's str.split splits at a no-break space too): every blank
    # inside a key is "_" in its header, the edges go
    hs = short_headers([f"{blank}lr{blank}warmup{blank}", "reward"])
    assert hs[f"{blank}lr{blank}warmup{blank}"] == "lr_warmup"
    assert " ".join(hs.values()).split() == ["lr_warmup", "reward"]


def test_accented_headers_are_kept_apart_or_counted_by_look() -> None:
    # a joiner before a combining accent draws nothing: "cafe\u200d\u0301" reads "café" and is counted
    hs = short_headers(["caf\u00e9", "na\u00efve", "cafe\u200d\u0301"])
    assert hs["caf\u00e9"] == "caf\u00e9" and hs["na\u00efve"] == "na\u00efve"
    assert look(hs["cafe\u200d\u0301"]) == "caf\u00e9~2"


def test_edge_blanks_do_not_tell_columns_apart_in_any_script() -> None:
    # " café" was counted while " loss" was not: only the script decided
    assert look(" loss ") == "loss" and look(" caf\u00e9") == "caf\u00e9"


def test_csv_counts_a_name_that_differs_only_by_a_leading_space(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # "loss, loss" in the header line reads as two loss columns
    row = {"step": 0, "loss": 1.0, " loss": 2.0, "caf\u00e9": 3, " caf\u00e9": 4}
    write_rows(tmp_path / "r" / "metrics.jsonl", [row])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    header = next(csv.reader([out.splitlines()[0]]))
    assert rc == 0 and header == ["run", "arm", "step", "loss", " loss~2", "caf\u00e9", " caf\u00e9~2"], header
