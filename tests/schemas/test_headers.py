"""steptable.schemas.headers: short, distinct headers for undeclared keys: bare names, fitting and kept endings,
suffixes, look-alike keys (invisible characters, decompositions, blanks) told apart or counted, evaluation leads."""

from __future__ import annotations

import itertools
import random

import pytest

from steptable.schemas import (
    SCHEMAS,
    short_headers,
)
from steptable.schemas.headers import MAX_HEADER, clean, look, order_free, short_header
from steptable.table.formatting import ELLIPSIS, display_width
from tests.schemas.helpers import seen, verl_validation_keys


def test_a_key_of_slashes_only_shows_its_own_text() -> None:
    # no segment to shorten: the key itself says most; the key with no text at all is named by its escapes
    assert short_header("/") == "/" and short_header("//") == "//" and short_header("") == '""'
    assert short_headers(["/", "//", ""]) == {"/": "/", "//": "//", "": '""'}


def test_keys_with_no_visible_character_are_headed_by_their_escapes_each_its_own() -> None:
    keys = ["\u200b", " ", "\t", "\u2060", "\x1b[2J"]
    assert short_headers(keys) == {"\u200b": '"\\u200b"', " ": '"\\x20"', "\t": '"\\t"', "\u2060": '"\\u2060"',
                                   "\x1b[2J": '"\\x1b[2J"'}


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
    # " café" and " loss" alike: the script does not decide
    assert look(" loss ") == "loss" and look(" caf\u00e9") == "caf\u00e9"


#: keys that read alike: seven that read "loss", two that read "café", one homoglyph (Cyrillic dze)
LOSSES = ["loss", "loss\u200c", "loss\u034f", "loss\ufe00", "lo\u200dss", "loss\U000e0100", "loss\u180b"]


CAFES = ["caf\u00e9", "cafe\u0301"]


DZE = "los\u0455"


def test_invisible_and_decomposed_twins_are_counted() -> None:
    hs = short_headers([*LOSSES, *CAFES, DZE])
    assert len({seen(h) for h in hs.values()}) == len(hs)
    assert hs["loss"] == "loss" and hs["caf\u00e9"] == "caf\u00e9"  # the first of each keeps the plain header
    assert sorted(seen(hs[k]) for k in LOSSES[1:]) == [f"loss~{n}" for n in range(2, 8)]
    assert seen(hs["cafe\u0301"]) == "caf\u00e9~2"
    assert hs[DZE] == DZE  # a homoglyph is drawn differently enough to be left alone (no confusables table)


def test_twin_of_a_declared_header_is_counted() -> None:
    assert seen(short_headers(["step\u200c"], reserved=["step"])["step\u200c"]) == "step~2"


def test_twins_grow_a_segment_before_taking_a_counter() -> None:
    """Like any two keys whose last segments read alike, they are told apart by the segment before (the joiner,
    which joins no two emoji, is not shown)."""
    assert short_headers(["a/loss", "b/loss\u200d"]) == {"a/loss": "a/loss", "b/loss\u200d": "b/loss"}


def test_cut_headers_that_read_alike_are_counted() -> None:
    """Too wide to show whole, two keys whose cut forms differ only in a joiner must not both take them."""
    keys = ["ab\u200ccdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz"]
    hs = short_headers(keys)
    assert len({seen(h) for h in hs.values()}) == 2
    assert seen(hs[keys[1]]).endswith("~2")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("\U0001f468\u200d\U0001f4bb", "\U0001f468\U0001f4bb"),  # one glyph (man technologist) vs two emoji
        ("\u2764\ufe0f", "\u2764"),  # the selector widens the heart to its 2-cell emoji form
    ],
)
def test_joiners_and_selectors_that_change_the_glyph_keep_headers_apart(a: str, b: str) -> None:
    assert short_headers([a, b]) == {a: a, b: b}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ab", "a\u200db"),  # a joiner between letters joins nothing
        ("\U0001f44d", "\U0001f44d\ufe0f"),  # already drawn as an emoji: the selector changes nothing
        ("loss", "loss\u2800"),  # a trailing braille blank is no cell anyone reads
    ],
)
def test_headers_that_differ_in_nothing_drawn_are_counted(a: str, b: str) -> None:
    hs = short_headers([a, b])
    assert hs[a] == a and hs[b].endswith("~2")


def test_keys_that_differ_only_in_their_kind_of_blank_are_counted() -> None:
    # a no-break space and an en space are the same blank cell: both are "_" in a header, the second counted
    assert short_headers(["lo\u00a0ss", "lo\u2002ss"]) == {"lo\u00a0ss": "lo_ss", "lo\u2002ss": "lo_ss~2"}


def test_a_lead_behind_a_grouping_namespace_stays_in_the_header() -> None:
    # verl's perf/mfu/<stage> read as "actor_infer", "ref", "critic": the names of other metric families
    h = short_headers(["perf/mfu/actor_infer", "perf/mfu/ref", "perf/throughput", "train/eval/loss", "env/all/reward"])
    assert h == {"perf/mfu/actor_infer": "mfu/actor_infer", "perf/mfu/ref": "mfu/ref", "perf/throughput": "thru",
                 "train/eval/loss": "eval/loss", "env/all/reward": "reward"}


def check_sane(headers: dict[str, str], reserved: tuple[str, ...] = ()) -> None:
    assert len(set(headers.values())) == len(headers)
    assert not set(headers.values()) & set(reserved)
    for h in headers.values():
        assert h and display_width(h) <= MAX_HEADER and h.isprintable() and " " not in h


def test_verl_validation_headers_keep_variable_and_statistic() -> None:
    keys = verl_validation_keys(["openai/gsm8k"])
    hs = short_headers(keys)
    check_sane(hs)
    for k, h in hs.items():
        assert "~" not in h and ELLIPSIS not in h, (k, h)  # no counters, no cuts: every part fits whole
        assert "openai" not in h and "gsm8k" not in h, (k, h)  # the one data source tells nothing apart
        var, stat = k.split("/")[3], k.split("/", 4)[4]
        assert var in h, (k, h)
        name, _, reading = stat.partition("/")
        assert (name[len("mean"):] if name.startswith("mean@") else name) in h, (k, h)
        assert h.endswith("/std") == (reading == "std"), (k, h)
    assert hs["val-aux/openai/gsm8k/reward/best@2/std"] == "reward/best@2/std"
    assert hs["val-aux/openai/gsm8k/reward/maj@4/std"] == "reward/maj@4/std"
    assert hs["val-aux/openai/gsm8k/score/worst@2/std"] == "score/worst@2/std"
    assert hs["val-aux/openai/gsm8k/reward/worst@2/mean"] == "reward/worst@2"
    assert hs["val-aux/openai/gsm8k/reward/best@2/mean"] == "vaux/reward/best@2"  # fits: the lead stays
    assert hs["val-core/openai/gsm8k/acc/mean@4"] == "val/acc@4"


def test_verl_validation_headers_two_data_sources() -> None:
    """With two data sources the source does tell columns apart: it is shortened, the statistic is kept whole."""
    keys = verl_validation_keys(["openai/gsm8k", "lighteval/MATH"])
    hs = short_headers(keys)
    check_sane(hs)
    for k, h in hs.items():
        assert "~" not in h and "openai" not in h and "lighteval" not in h, (k, h)
        src = k.split("/")[2]
        assert h.startswith((src[:1], "val/", "vaux/")), (k, h)
        if h.startswith(("val/", "vaux/")):
            assert h.split("/")[1] == src, (k, h)
        name = k.split("/")[4]
        assert (name[len("mean"):] if name.startswith("mean@") else name) in h, (k, h)
        assert h.endswith("/std") == k.endswith("/std"), (k, h)
    assert hs["val-aux/lighteval/MATH/acc/best@2/std"] == f"MA{ELLIPSIS}/acc/best@2/std"
    assert hs["val-aux/openai/gsm8k/reward/best@2/mean"] == f"gsm{ELLIPSIS}/reward/best@2"


TRL_TRAIN = [
    "loss", "grad_norm", "learning_rate", "num_tokens", "completions/mean_length", "completions/min_length",
    "completions/max_length", "completions/clipped_ratio", "completions/mean_terminated_length",
    "completions/min_terminated_length", "completions/max_terminated_length", "rewards/accuracy_reward/mean",
    "rewards/accuracy_reward/std", "reward", "reward_std", "frac_reward_zero_std", "kl", "entropy",
    "clip_ratio/low_mean", "clip_ratio/low_min", "clip_ratio/high_mean", "clip_ratio/high_max",
    "clip_ratio/region_mean",
]


def test_trl_eval_keys_keep_an_eval_marker() -> None:
    keys = [*TRL_TRAIN, *(f"eval_{k}" for k in TRL_TRAIN)]
    reserved = tuple(c.header for c in SCHEMAS["trl"].cols)
    hs = short_headers(keys, reserved=reserved)
    check_sane(hs, reserved)
    for k in TRL_TRAIN:
        assert hs[f"eval_{k}"].startswith(("eval/", "eval_")), (k, hs[f"eval_{k}"])
        assert not hs[k].startswith("eval"), (k, hs[k])
    assert hs["eval_completions/mean_length"] == "eval/mean_length"
    assert hs["eval_completions/clipped_ratio"] == "eval/clipped_ratio"
    assert hs["eval_clip_ratio/high_max"] == "eval/clip/high_max"  # not an unknown eval metric "high_max"
    assert hs["eval_clip_ratio/region_mean"] == f"eval/clip/region_{ELLIPSIS}"
    assert hs["eval_completions/min_terminated_length"] == f"eval/min_terminat{ELLIPSIS}"
    assert hs["rewards/accuracy_reward/mean"] == "accuracy_reward"  # its eval twin does not drag it to grow
    assert hs["eval_rewards/accuracy_reward/mean"].startswith("eval/accuracy")


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("eval_completions/mean_length", "eval/mean_length"),
        ("test_clip_ratio/high_max", "test/clip/high_max"),
        ("val_metrics/acc", "val/acc"),
        ("eval_timing_s/gen", "eval/gen"),
        ("eval_loss", "eval_loss"),  # a flat key keeps its own marker
        ("val_loss", "val_loss"),
    ],
)
def test_fused_eval_prefix_reads_like_a_lead(key: str, expected: str) -> None:
    assert short_headers([key])[key] == expected
    slash = key.replace("_", "/", 1)
    if "/" in key:  # eval_x/y reads as eval/x/y does
        assert short_headers([slash])[slash] == expected


def test_eval_twins_of_one_name_stay_apart() -> None:
    """eval_ and eval/ spellings of one metric in one file still get distinct headers."""
    keys = ["eval_completions/mean_length", "eval/completions/mean_length", "completions/mean_length"]
    hs = short_headers(keys)
    check_sane(hs)
    assert all(hs[k].startswith("eval") for k in keys[:2])


def test_lightning_dataloader_metrics_keep_their_name() -> None:
    """Lightning logs a metric of several dataloaders as ``val_loss/dataloader_idx_0``: the header keeps the
    metric's name (not ``val/dataloader_id…``, which reads every dataloader's loss and accuracy alike)."""
    keys = ["val_loss/dataloader_idx_0", "val_loss/dataloader_idx_1", "val_acc/dataloader_idx_0",
            "test_acc/dataloader_idx_0"]
    got = short_headers(keys)
    assert got == {"val_loss/dataloader_idx_0": "val/loss/dl0", "val_loss/dataloader_idx_1": "val/loss/dl1",
                   "val_acc/dataloader_idx_0": "val/acc/dl0", "test_acc/dataloader_idx_0": "test/acc/dl0"}
    assert short_headers(["val_loss/dataloader_idx_0"]) == {"val_loss/dataloader_idx_0": "val/loss/dl0"}


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["actor/pg_loss"], ["pg_loss"]),
        (["env/all/reward/total"], ["reward"]),
        (["critic/score/mean"], ["score"]),
        (["response_length/mean"], ["resp_len"]),
        (["critic/rewards/mean", "critic/score/mean"], ["rewards", "score"]),
        (["critic/rewards/max", "critic/score/max"], ["rewards/max", "score/max"]),
        (["timing_s/gen", "timing_per_token_ms/gen"], ["t/gen", "tpt/gen"]),
        (["env/all/reward/total", "test/env/all/reward/total"], ["reward", "test/reward"]),
        (["train/loss", "eval/loss"], ["loss", "eval/loss"]),
        (["val/test_score/openai/gsm8k"], ["val/gsm8k"]),
        (["val-core/openai/gsm8k/reward/mean@4"], ["val/reward@4"]),
        (["prompt_length/clip_ratio"], ["prompt_len/clip"]),
        (["a/x/loss", "b/x/loss"], ["a/x/loss", "b/x/loss"]),
        # a data split names no metric: add_scalars("loss", {"train", "val"}) curves are loss/train, loss/val
        (["loss/train", "loss/val"], ["loss", "loss/val"]),
        (["accuracy/Test", "f1/validation"], ["accuracy/Test", "f1/validation"]),
        # an index names no metric: a bare 0 over a column of numbers reads as a value
        (["layers/grad/0", "layers/grad/1"], ["grad/0", "grad/1"]),
        (["grad/3"], ["grad/3"]),
        # ... also behind a namespace that only groups (per-device throughput, per-shard sizes)
        (["perf/0", "perf/1"], ["perf/0", "perf/1"]),
        (["train/3"], ["train/3"]),
    ],
)
def test_short_headers(keys: list[str], expected: list[str]) -> None:
    assert list(short_headers(keys).values()) == expected


def test_short_headers_distinct_bounded_and_inert() -> None:
    keys = [
        "time/do_group_rollout:mean", "time/do_group_rollout:max", "time/do_group_rollout:count", "loss", "x/loss",
        "y/loss", "a very long key name that goes on and on", "a very long key name that goes on and on!",
        "bad\x1b[2Jkey", "\x1b]0;title\x07", "", "日本語の長いキーの名前です/値",
    ]
    hs = short_headers(keys, reserved=["loss"])
    assert len(set(hs.values())) == len(keys)
    assert "loss" not in hs.values()
    for h in hs.values():
        assert h and display_width(h) <= MAX_HEADER
        assert h.isprintable() and " " not in h and "\x1b" not in h
    assert hs["time/do_group_rollout:count"].endswith(":count")


ORDER_CASES = [
    (["loss", "kl", "timing_s/gen", "env/all/m0", "env/all/m1"], ["step"], True),
    (["a/loss", "b/loss", "loss"], ["step"], True),  # grown apart in the first pass
    (["reward/mean", "kl", "x/kl"], ["step", "reward", "kl"], True),  # reserved: numbered, each on its own header
    (["grp/verylongmetricnamenumber1", "grp/verylongmetricnamenumber2"], [], False),  # cut forms both want
    (["very_long_metric_name_alpha/x", "very_long_metric_name_beta/x", "y"], ["step"], False),
]


@pytest.mark.parametrize(("keys", "reserved", "free"), ORDER_CASES)
def test_order_free_says_whether_the_headers_depend_on_the_keys_order(keys: list[str], reserved: list[str],
                                                                      free: bool) -> None:
    assert order_free(keys, reserved) is free
    if free:  # every order heads every key alike
        want = short_headers(keys, reserved)
        for perm in itertools.permutations(keys):
            assert short_headers(perm, reserved) == want


def test_order_free_holds_only_where_every_order_gives_the_same_headers() -> None:
    rng = random.Random(4)
    pool = ["loss", "kl", "x/kl", "a/b/score/mean", "c/b/score/mean", "reward", "eval/reward", "val/reward",
            "grp/verylongmetricnamenumber1", "grp/verylongmetricnamenumber2", "timing_s/gen", "timing/gen",
            "response_length/mean", "critic/score/max", "critic/rewards/max", "t/gen"]
    for _ in range(200):
        keys = rng.sample(pool, rng.randint(2, 6))
        reserved = rng.sample(["step", "kl", "reward", "gen"], rng.randint(0, 3))
        if order_free(keys, reserved):
            want = short_headers(keys, reserved)
            assert all(short_headers(p, reserved) == want for p in itertools.permutations(keys)), (keys, reserved)
