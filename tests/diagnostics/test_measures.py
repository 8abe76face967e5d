"""steptable.diagnostics' standalone functions (ninth review): a bare gradient tensor in quarantine_mass, the
non-blocking copies of host-side inputs, shares with tlo > thi, a float nbins in multiotsu."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import steptable.diagnostics._grads as grads_mod  # noqa: E402
from steptable.diagnostics import RoutingMonitor, auroc, cosine_mean, multiotsu, quarantine_mass, shares  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ------------------------------------------------------------------------------------------ quarantine_mass


def test_quarantine_mass_takes_a_bare_tensor_as_one_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """An FSDP flat_param.grad (or a torch.cat of the grads) was iterated element by element: one norm per
    element, 38 s for 1e6 elements."""
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
    """A dict iterates over its names: the default-device lookup read ``"w".device`` before the type check."""
    named = {"w": torch.randn(3), "b": torch.randn(2)}
    listed = [torch.randn(3)]
    keep = named if which in ("keep", "both") else listed
    quar = named if which in ("quar", "both") else listed
    with pytest.raises(TypeError, match="gradients must be tensors"):
        quarantine_mass(keep, quar)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ copies onto the device


class CopyRecorder(TorchDispatchMode):
    """Records every copy across devices as (source, destination, non_blocking)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[str, str, bool]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name == "_to_copy" and kwargs.get("device") is not None:
            dst = torch.device(kwargs["device"])
            if dst.type != args[0].device.type:
                self.copies.append((args[0].device.type, dst.type, bool(kwargs.get("non_blocking", False))))
        if name == "copy_" and args[0].device.type != args[1].device.type:
            blocking = bool(args[2]) if len(args) > 2 else bool(kwargs.get("non_blocking", False))
            self.copies.append((args[1].device.type, args[0].device.type, blocking))
        return func(*args, **kwargs)


def test_copy_recorder_sees_blocking_copies() -> None:
    with CopyRecorder() as rec:
        torch.ones(3).to("meta")
        torch.ones(3).to(device="meta", dtype=torch.float64, non_blocking=True)
    assert rec.copies == [("cpu", "meta", False), ("cpu", "meta", True)]


_HOST_MASK = torch.tensor([True, False] * 4)
_CALLS = {
    # the "meta" device stands in for an accelerator: the data is on it, the small inputs on the host
    "auroc": lambda: auroc(torch.randn(8, device="meta"), torch.tensor([0, 1] * 4), _HOST_MASK),
    "shares": lambda: shares(torch.randn(8, device="meta"), torch.tensor(-0.5), torch.tensor(0.5), _HOST_MASK),
    "multiotsu": lambda: multiotsu(torch.randn(8, device="meta"), mask=_HOST_MASK),
    "cosine_mean": lambda: cosine_mean(torch.randn(8, 4, device="meta"), torch.randn(4), _HOST_MASK),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_host_inputs_are_copied_to_the_device_without_blocking(name: str) -> None:
    """A blocking host-to-device copy synchronises a CUDA stream; auroc promises no host synchronisation."""
    with CopyRecorder() as rec:
        _CALLS[name]()
    assert rec.copies, "nothing was copied: the test would prove nothing"
    assert all(src == "cpu" and dst == "meta" and non_blocking for src, dst, non_blocking in rec.copies), rec.copies


def test_copies_to_the_host_stay_blocking() -> None:
    """The other way (scores on the host, labels elsewhere) a non-blocking copy could be read before it lands."""
    labels, scores = torch.tensor([0, 1, 1, 0], device="meta"), torch.randn(4)
    with CopyRecorder() as rec:
        # meta labels hold no data, so the copy is checked here, not the value
        with pytest.raises((NotImplementedError, RuntimeError)):
            auroc(scores, labels)
    assert rec.copies == [("meta", "cpu", False)]


# -------------------------------------------------------------------------------------------------- shares


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


# ------------------------------------------------------------------------------------------ multiotsu nbins


@pytest.mark.parametrize("nbins", [8.0, True, "8"])
def test_multiotsu_non_int_nbins_is_a_type_error(nbins: Any) -> None:
    with pytest.raises(TypeError, match="nbins must be an int"):
        multiotsu(torch.randn(50), nbins=nbins)
    with pytest.raises(TypeError, match="nbins must be an int"):  # the monitor's check is the same one
        RoutingMonitor(nbins=nbins)


def test_multiotsu_numpy_int_nbins_is_an_int() -> None:
    x = torch.randn(200, generator=torch.Generator().manual_seed(3))
    from_numpy = multiotsu(x, nbins=np.int64(16))  # type: ignore[arg-type]
    assert [float(t) for t in from_numpy] == [float(t) for t in multiotsu(x, nbins=16)]
