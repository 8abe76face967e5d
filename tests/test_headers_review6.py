"""Review 6, findings 3 and 4: short headers of verl validation keys and of TRL's eval_ keys.

verl names validation metrics ``val-core|val-aux/<data source>/<variable>/<stat>@<n>[/mean|std]``; a header must keep
the variable and the statistic (they tell the columns apart), not the data source. TRL's GRPOTrainer logs eval metrics
as ``eval_`` + the train key; their headers must say they are evaluation metrics.
"""

from __future__ import annotations

import pytest

from steptable.schemas import SCHEMAS, layout
from steptable.schemas.headers import MAX_HEADER, short_headers
from steptable.table.formatting import ELLIPSIS, display_width
from tests.schemas.helpers import verl_validation_keys


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


def test_verl_validation_layout() -> None:
    """Through the verl schema's layout (declared headers reserved): same headers, none with a counter."""

    class Run:
        def __init__(self, keys: list[str]) -> None:
            self.keys = keys
            self.meta: dict[str, str] = {}

        def column(self, key: str) -> list[float]:
            return [0.5, 0.25]

        def __len__(self) -> int:
            return 2

    keys = ["step", "actor/entropy", "critic/score/mean", "timing_s/step", *verl_validation_keys(["openai/gsm8k"])]
    cols = layout([Run(keys)], SCHEMAS["verl"])  # type: ignore[list-item]
    headers = {c.key: c.header.strip() for c in cols}
    assert len(set(headers.values())) == len(headers)
    assert headers["val-aux/openai/gsm8k/acc/worst@2/std"] == "acc/worst@2/std"
    assert not [h for h in headers.values() if "~" in h or "opena" in h]


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
    assert hs["rewards/accuracy_reward/mean"] == "accuracy_reward"  # its eval twin no longer drags it to grow
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
    metric's name (it showed ``val/dataloader_id…``, every dataloader's loss and accuracy alike)."""
    keys = ["val_loss/dataloader_idx_0", "val_loss/dataloader_idx_1", "val_acc/dataloader_idx_0",
            "test_acc/dataloader_idx_0"]
    got = short_headers(keys)
    assert got == {"val_loss/dataloader_idx_0": "val/loss/dl0", "val_loss/dataloader_idx_1": "val/loss/dl1",
                   "val_acc/dataloader_idx_0": "val/acc/dl0", "test_acc/dataloader_idx_0": "test/acc/dl0"}
    assert short_headers(["val_loss/dataloader_idx_0"]) == {"val_loss/dataloader_idx_0": "val/loss/dl0"}
