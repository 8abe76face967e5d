"""steptable.diagnostics.measures: keep/resid/rout shares (a partition of the rows, also with tlo > thi), the
mean cosine to v_act, and the quarantine mass of gradients given as lists, bare tensors, 0-d tensors or a dict
(refused with what was meant)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import steptable.diagnostics._grads as grads_mod
from steptable.diagnostics import cosine_mean, measures, quarantine_mass, shares
from tests.diagnostics.helpers import CUDA, NAN, same


def test_quarantine_mass_takes_a_bare_tensor_as_one_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """An FSDP flat_param.grad (or a torch.cat of the grads) is one gradient, not iterated element by element
    (one norm per element would take seconds for 1e6 elements)."""
    g = torch.Generator().manual_seed(9)
    keep, quar = torch.randn(100_000, generator=g), torch.randn(100_000, generator=g)
    expected = quarantine_mass([keep], [quar])
    seen: list[int] = []
    real = grads_mod._sq_norm

    def counting(t: Any) -> Any:
        seen.append(t.numel())
        return real(t)

    monkeypatch.setattr(grads_mod, "_sq_norm", counting)
    got = quarantine_mass(keep, quar)
    assert seen == [100_000, 100_000]  # two norms, each of a whole tensor
    assert float(got) == float(expected)


def test_quarantine_mass_takes_0d_tensors() -> None:
    assert float(quarantine_mass(torch.tensor(3.0), torch.tensor(-4.0))) == pytest.approx(4 / 7)
    assert float(quarantine_mass(torch.tensor(0.0), [torch.tensor(2.0), None])) == 1.0


@pytest.mark.parametrize("which", ["keep", "quar", "both"])
def test_quarantine_mass_dict_of_grads_says_what_was_meant(which: str) -> None:
    """A dict iterates over its names: it is refused by the type check, saying what was meant, before the
    default-device lookup would read ``"w".device``."""
    named = {"w": torch.randn(3), "b": torch.randn(2)}
    listed = [torch.randn(3)]
    keep = named if which in ("keep", "both") else listed
    quar = named if which in ("quar", "both") else listed
    with pytest.raises(TypeError, match="gradients must be tensors"):
        quarantine_mass(keep, quar)  # type: ignore[arg-type]


def _digitize_shares(z: np.ndarray, tlo: float, thi: float) -> list[float]:
    bins = np.digitize(z, [tlo, max(tlo, thi)])
    return list(np.bincount(bins, minlength=3) / len(z))


@pytest.mark.parametrize(
    ("tlo", "thi"),
    [(5.0, 1.5), (1.5, 5.0), (2.0, 2.0), (11.0, 0.0), (-math.inf, math.inf), (math.inf, -math.inf), (3.0, -math.inf)],
)
def test_shares_partition_the_rows_even_when_tlo_is_above_thi(tlo: float, thi: float) -> None:
    """tlo > thi counted a row as both keep and rout: [0.667, 0.0, 0.667] for the first case."""
    z = np.array([0.0, 1, 2, 3, 10, 11])
    got = shares(torch.tensor(z), tlo, thi).tolist()
    assert got == pytest.approx(_digitize_shares(z, tlo, thi))
    assert sum(got) == pytest.approx(1.0)


def test_shares_tlo_above_thi_random_against_numpy() -> None:
    rng = np.random.default_rng(9)
    for _ in range(50):
        z = rng.normal(size=int(rng.integers(1, 40)))
        tlo, thi = rng.normal(size=2)
        mask = rng.random(z.shape[0]) < 0.7
        got = shares(torch.tensor(z), torch.tensor(tlo), torch.tensor(thi), torch.tensor(mask)).tolist()
        if mask.any():
            assert got == pytest.approx(_digitize_shares(z[mask], tlo, thi))
        else:
            assert all(math.isnan(v) for v in got)


def test_shares_of_int64_past_2_53_are_exact() -> None:
    """int64 z (and thresholds) were compared as float64: 2**53 + 1 rounds to 2**53, so z = [2**53, 2**53 + 1] with
    tlo = 2**53 + 1 gave [0, 1, 0] (both resid) where numpy.digitize gives [0.5, 0.5, 0]. The reference is Python's
    own comparison of ints and floats, which is exact (numpy's digitize casts int z to float64 for float bins)."""
    rng = np.random.default_rng(3)
    for base in (0, 2**53, 2**62, -(2**62)):
        z = rng.integers(0, 12, 40) + base
        for tlo, thi in [(base + 3, base + 7), (float(base + 4), float(base + 9)), (base + 5, float(base + 2)),
                         (-math.inf, base + 1), (float(base) + 0.5, math.inf), (2.0**63, 2.0**64)]:
            lo = torch.tensor(tlo, dtype=torch.float64) if isinstance(tlo, float) else tlo  # tensors and numbers
            got = shares(torch.tensor(z), lo, thi).tolist()
            keep = [int(v) < tlo for v in z]
            rout = [not k and int(v) >= max(tlo, thi) for k, v in zip(keep, z, strict=True)]
            want = [sum(keep) / len(z), (len(z) - sum(keep) - sum(rout)) / len(z), sum(rout) / len(z)]
            assert got == want, (base, tlo, thi)
    assert shares(torch.tensor([2**53, 2**53 + 1]), 2**53 + 1, 2**60).tolist() == [0.5, 0.5, 0.0]


def test_shares() -> None:
    z = torch.tensor([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0], dtype=torch.float64)
    got = shares(z, -0.5, 1.0).tolist()  # digitize: z == tlo is resid, z == thi is rout
    assert got == [2 / 8, 3 / 8, 3 / 8]
    assert shares(z, torch.tensor(-0.5), torch.tensor(1.0)).tolist() == got
    assert shares(z, -math.inf, math.inf).tolist() == [0.0, 1.0, 0.0]  # warmup convention
    assert all(math.isnan(v) for v in shares(z, NAN, 1.0).tolist())  # never a silent "all resid"
    assert all(math.isnan(v) for v in shares(z[:0], -1.0, 1.0).tolist())
    zb = z.clone()
    zb[0] = NAN
    assert all(math.isnan(v) for v in shares(zb, -0.5, 1.0).tolist())
    assert shares(zb, -0.5, 1.0, nan_policy="drop").tolist() == [1 / 7, 3 / 7, 3 / 7]
    mask = torch.tensor([True] * 4 + [False] * 4)
    assert shares(z, -0.5, 1.0, mask).tolist() == [0.5, 0.5, 0.0]


def test_cosine_mean() -> None:
    g = torch.Generator().manual_seed(0)
    act = torch.randn(64, 32, generator=g, dtype=torch.float64)
    v = torch.randn(32, generator=g, dtype=torch.float64)
    a, vv = act.numpy(), v.numpy()
    want = float(np.mean(a @ vv / (np.linalg.norm(a, axis=1) * np.linalg.norm(vv))))
    assert same(cosine_mean(act, v).item(), want, 1e-12)
    got16 = cosine_mean(act.to(torch.bfloat16), v.to(torch.bfloat16)).item()
    assert abs(got16 - want) < 1e-2
    act[5] = 0.0  # a zero row has no direction: nan, not a clamped 0
    assert math.isnan(cosine_mean(act, v).item())
    rest = np.delete(a, 5, axis=0)
    want_rest = float(np.mean(rest @ vv / (np.linalg.norm(rest, axis=1) * np.linalg.norm(vv))))
    assert same(cosine_mean(act, v, nan_policy="drop").item(), want_rest, 1e-12)
    assert math.isnan(cosine_mean(act, torch.zeros(32, dtype=torch.float64), nan_policy="drop").item())


def test_quarantine_mass() -> None:
    keep = [torch.full((3,), 1.0), torch.full((2, 2), 1.0), None]  # |g_keep| = sqrt(7)
    quar = [torch.full((9,), 1.0, dtype=torch.bfloat16)]  # |g_quar| = 3
    assert same(quarantine_mass(keep, quar).item(), 3 / (3 + math.sqrt(7)), 1e-12)
    assert quarantine_mass(keep, []).item() == 0.0
    assert quarantine_mass([], quar).item() == 1.0
    assert math.isnan(quarantine_mass([torch.zeros(3)], [torch.zeros(3)]).item())  # 0/0
    assert math.isnan(quarantine_mass([], []).item())
    assert math.isnan(quarantine_mass([torch.tensor([math.inf])], quar).item())  # not a silent 0
    assert math.isnan(quarantine_mass(keep, [torch.tensor([NAN])]).item())
    big = [torch.full((1000,), 300.0, dtype=torch.float16)]  # squares overflow fp16: norms are upcast
    assert same(quarantine_mass(big, big).item(), 0.5, 1e-12)


@CUDA
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_project_upcasts_big_batches_in_chunks_on_cuda(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch larger than the accelerator's chunk is upcast a chunk at a time: scores and cosines as accurate as
    one whole upcast, with at most one chunk's float32 copy allocated beside the inputs."""
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(21)
    act = torch.randn(3001, 1024, device=dev, generator=g).to(dtype)
    v = torch.randn(1024, device=dev, generator=g).to(dtype)
    whole = measures.project(act, v)
    monkeypatch.setattr(measures, "_ACCEL_CHUNK", 1 << 18)  # 256 rows of 1024 a chunk: 12 chunks
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    chunked = measures.project(act, v)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    assert extra < act.numel(), extra  # a whole float32 copy would be 4 bytes an element
    a64, v64 = act.double(), v.double()
    dot64 = a64 @ v64
    cos64 = dot64 / (torch.linalg.vector_norm(a64, dim=1) * torch.linalg.vector_norm(v64))
    bound = 1e-6 * (a64.abs() @ v64.abs())  # float32 sums (gemv orders them by the batch's shape)
    for dot, cos in (whole, chunked):
        assert dot.dtype == cos.dtype == torch.float64 and dot.shape == cos.shape == (3001,)
        assert ((dot - dot64).abs() <= bound).all() and ((cos - cos64).abs() <= 1e-6).all()
