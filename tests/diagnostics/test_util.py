"""steptable.diagnostics._util: the argument checks (nan policy, bin counts, 1-D shapes, masks) and the dtypes the
statistics and projections run in, checked on the host without reading any value."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from steptable.diagnostics._util import (
    STAT_DTYPE,
    as_1d,
    as_mask,
    as_stat,
    check_nan_policy,
    check_nbins,
    labels_to_bool,
    nan_like,
    no_autocast,
    proj_dtype,
    to_device,
)

CPU = torch.device("cpu")


def test_a_nan_policy_is_propagate_or_drop() -> None:
    assert check_nan_policy("propagate") == "propagate" and check_nan_policy("drop") == "drop"
    with pytest.raises(ValueError, match="nan_policy must be 'propagate' or 'drop', got 'omit'"):
        check_nan_policy("omit")


@pytest.mark.parametrize("nbins", [3, 256, np.int64(16)])
def test_a_bin_count_is_an_int_of_at_least_three(nbins: int) -> None:
    assert check_nbins(nbins) == int(nbins) and type(check_nbins(nbins)) is int


@pytest.mark.parametrize(("nbins", "error"), [(256.0, TypeError), (True, TypeError), ("8", TypeError), (2, ValueError)])
def test_other_bin_counts_are_refused(nbins: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_nbins(nbins)  # type: ignore[arg-type]


def test_shapes_are_checked_by_name() -> None:
    t = torch.zeros(4)
    assert as_1d(t, "scores") is t and as_1d(t, "scores", 4) is t
    with pytest.raises(TypeError, match=r"scores must be a torch\.Tensor, got list"):
        as_1d([0.0], "scores")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"scores must be 1-D, got shape \(2, 2\)"):
        as_1d(torch.zeros(2, 2), "scores")
    with pytest.raises(ValueError, match="scores has length 4, expected 5"):
        as_1d(t, "scores", 5)


def test_labels_are_positive_where_non_zero_and_counted_where_finite() -> None:
    pos, fin = labels_to_bool(torch.tensor([0.0, 1.0, 2.0, math.nan, math.inf]))
    assert pos.tolist() == [False, True, True, True, True] and fin.tolist() == [True, True, True, False, False]
    pos, fin = labels_to_bool(torch.tensor([0, 3]))
    assert pos.tolist() == [False, True] and fin.tolist() == [True, True]
    flags = torch.tensor([True, False])
    pos, fin = labels_to_bool(flags)
    assert pos is flags and fin.tolist() == [True, True]


def test_a_mask_is_all_true_when_none_is_given_and_bool_otherwise() -> None:
    assert as_mask(None, 3, CPU).tolist() == [True, True, True]
    assert as_mask(torch.tensor([1, 0, 2]), 3, CPU).tolist() == [True, False, True]
    with pytest.raises(ValueError, match="keep has length 2, expected 3"):
        as_mask(torch.tensor([True, False]), 3, CPU, "keep")


def test_statistics_run_in_float64_and_projections_in_float64_on_the_host() -> None:
    assert as_stat(torch.zeros(2, dtype=torch.float16)).dtype == STAT_DTYPE == torch.float64
    assert proj_dtype(torch.zeros(2, dtype=torch.bfloat16)) == torch.float64  # the host: float64
    assert proj_dtype(torch.zeros(2), torch.float32) == torch.float32  # an override wins


def test_a_tensor_already_on_the_device_is_not_copied() -> None:
    t = torch.zeros(3)
    assert to_device(t, CPU) is t
    assert to_device(t, CPU, torch.float64).dtype == torch.float64


def test_nan_like_is_a_0d_nan_of_the_dtype() -> None:
    n = nan_like(torch.zeros(3, dtype=torch.float32))
    assert n.shape == () and n.dtype == torch.float32 and math.isnan(n.item())


def test_no_autocast_turns_autocast_and_autograd_off() -> None:
    w = torch.ones(2, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16), no_autocast(CPU):
        out = torch.ones(2, 2) @ w
    assert out.dtype == torch.float32 and not out.requires_grad
