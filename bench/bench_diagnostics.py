"""Per-step cost of steptable.diagnostics.RoutingMonitor against the CPU anchor (numpy + sklearn + skimage).

    python bench/bench_diagnostics.py [--sizes 1000 4096 65536] [--dim 256] [--reps 7] [--threads 1]

CPU: N rollouts x D=256 float32 activations, ring buffer of 65536 scores (already full), warmup 1024; one step =
scores and cosines from act @ v_act, AUROC on adv > 0, buffer update, z-scores, 3-class Otsu, shares, qmass.
The anchor does the same step on the same data with numpy (float64 projections), sklearn's roc_auc_score and
skimage's threshold_multiotsu. Reported: median ms per step and the ratio monitor / anchor (< 1: faster).

CUDA (only when available): N=4096, D=4096 bf16 activations, buffer 65536; GPU time of the step measured with
CUDA events (goal <= 1 ms/step), plus the wall time of a full ``step()`` including its one host sync.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from skimage.filters import threshold_multiotsu
from sklearn.metrics import roc_auc_score

from steptable.diagnostics import RoutingMonitor

CAPACITY = 65536
WARMUP = 1024


def median_ms(fn: Callable[[], object], reps: int) -> float:
    fn()  # warm
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def interleaved_ms(fns: list[Callable[[], object]], reps: int) -> list[float]:
    """Median ms of each function, run alternately (so drifting machine load hits all of them alike)."""
    for fn in fns:
        fn()  # warm
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for fn, acc in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            acc.append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(t) for t in times]


class Anchor:
    """The reference step on the host: numpy projections, sklearn AUROC, skimage Otsu, numpy ring buffer."""

    def __init__(self, fill: np.ndarray) -> None:
        self.buf = fill.copy()
        self.head = 0

    def step(
        self, act: np.ndarray, v: np.ndarray, hack: np.ndarray, adv: np.ndarray, gk: np.ndarray, gq: np.ndarray
    ) -> dict[str, float]:
        a = act.astype(np.float64)
        vv = v.astype(np.float64)
        s = a @ vv
        cos = float(np.mean(s / (np.linalg.norm(a, axis=1) * np.linalg.norm(vv))))
        sel = adv > 0
        au = float(roc_auc_score(hack[sel], s[sel]))
        n = min(s.size, CAPACITY)
        idx = (self.head + np.arange(n)) % CAPACITY
        self.buf[idx] = s[-n:]
        self.head = (self.head + n) % CAPACITY
        mean, std = self.buf.mean(), self.buf.std()
        tlo, thi = threshold_multiotsu((self.buf - mean) / std, classes=3, nbins=256)
        cls = np.digitize((s - mean) / std, [tlo, thi])
        nk, nq = np.linalg.norm(gk.astype(np.float64)), np.linalg.norm(gq.astype(np.float64))
        return {
            "auroc": au, "cos": cos, "qmass": float(nq / (nk + nq)),
            "keep": float(np.mean(cls == 0)), "resid": float(np.mean(cls == 1)), "rout": float(np.mean(cls == 2)),
            "tlo": float(tlo), "thi": float(thi),
        }  # fmt: skip


def bench_cpu(sizes: list[int], dim: int, reps: int) -> None:
    print(f"CPU, torch {torch.__version__}, {torch.get_num_threads()} threads, D={dim}, buffer {CAPACITY} (full)")
    print(f"{'N':>7} {'monitor ms':>11} {'anchor ms':>10} {'ratio':>7}  max |diff| of the columns")
    rng = np.random.default_rng(0)
    fill = rng.normal(size=CAPACITY)
    for n in sizes:
        v = rng.normal(size=dim).astype(np.float32)
        hack = rng.random(n) < 0.2
        act = (rng.normal(size=(n, dim)) + 0.3 * hack[:, None] * v).astype(np.float32)
        adv = rng.normal(size=n).astype(np.float32)
        gk = rng.normal(size=100_000).astype(np.float32)
        gq = rng.normal(size=20_000).astype(np.float32)
        t_act, t_v, t_hack, t_adv = map(torch.from_numpy, (act, v, hack, adv))

        mon = RoutingMonitor(capacity=CAPACITY, warmup=WARMUP)
        mon.step(scores=torch.from_numpy(fill), hack=torch.zeros(CAPACITY, dtype=torch.bool))  # fill the buffer
        anchor = Anchor(fill)
        run_mon = functools.partial(
            mon.step, t_act, t_v, t_hack, t_adv, g_keep=[torch.from_numpy(gk)], g_quar=[torch.from_numpy(gq)]
        )
        run_anchor = functools.partial(anchor.step, act, v, hack, adv, gk, gq)
        ms_mon, ms_anchor = interleaved_ms([run_mon, run_anchor], reps)
        # same buffer history on both sides (warm call + reps steps each): the values must agree
        got, want = run_mon(), run_anchor()
        diff = max(abs(got[k] - want[k]) for k in want)
        print(f"{n:>7} {ms_mon:>11.2f} {ms_anchor:>10.2f} {ms_mon / ms_anchor:>7.2f}  {diff:.1e}")


def bench_cuda(reps: int) -> None:
    """The GPU step (N=4096 rollouts x D=4096 bf16) against the host anchor on the same values in the same run."""
    if not torch.cuda.is_available():
        print("CUDA: not measured (no GPU available)")
        return
    dev = torch.device("cuda")
    n, dim = 4096, 4096
    rng = np.random.default_rng(1)
    fill = rng.normal(size=CAPACITY)
    hack_h = rng.random(n) < 0.2
    v_f = rng.normal(size=dim).astype(np.float32)
    act_f = (rng.normal(size=(n, dim)) + 0.05 * hack_h[:, None] * v_f).astype(np.float32)
    # both sides see the same (bf16-rounded) activations and probe
    act = torch.from_numpy(act_f).to(dev).to(torch.bfloat16)
    v = torch.from_numpy(v_f).to(dev).to(torch.bfloat16)
    act_h, v_h = act.float().cpu().numpy(), v.float().cpu().numpy()
    adv_h = rng.normal(size=n).astype(np.float32)
    gk_h = rng.normal(size=1 << 20).astype(np.float32)
    gq_h = rng.normal(size=1 << 18).astype(np.float32)
    hack, adv = torch.from_numpy(hack_h).to(dev), torch.from_numpy(adv_h).to(dev)
    gk, gq = [torch.from_numpy(gk_h).to(dev)], [torch.from_numpy(gq_h).to(dev)]

    anchor = Anchor(fill)
    run_anchor = functools.partial(anchor.step, act_h, v_h, hack_h, adv_h, gk_h, gq_h)
    print(f"CUDA {torch.cuda.get_device_name(dev)}, torch {torch.__version__}: N={n} D={dim} bf16, buffer {CAPACITY}")
    for graph in (True, False):
        mon = RoutingMonitor(capacity=CAPACITY, warmup=WARMUP, device=dev, cuda_graph=graph)
        mon.step(scores=torch.from_numpy(fill).to(dev), hack=torch.zeros(CAPACITY, dtype=torch.bool, device=dev))
        run_mon = functools.partial(mon.step, act, v, hack, adv, g_keep=gk, g_quar=gq)
        for _ in range(3):
            run_mon()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        queued = max(reps, 50)
        start.record()
        pending = [mon.step_async(act, v, hack, adv, g_keep=gk, g_quar=gq) for _ in range(queued)]
        end.record()
        torch.cuda.synchronize()
        gpu_ms = start.elapsed_time(end) / queued
        pending[-1].get()
        wall_mon, wall_anchor = interleaved_ms([run_mon, run_anchor], reps)
        # the buffer holds CAPACITY / n = 16 copies of the batch on both sides once each has pushed it 16 times
        for _ in range(CAPACITY // n):
            run_anchor()
        got, want = run_mon(), run_anchor()
        diff = max(abs(got[k] - want[k]) for k in want)
        print(f"  {'graphed' if graph else 'eager  '}  GPU time per step (CUDA events over {queued} queued steps) "
              f"{gpu_ms:.3f} ms (goal <= 1 ms); step() wall with its host sync {wall_mon:.3f} ms; host anchor "
              f"(numpy/sklearn/skimage) {wall_anchor:.2f} ms; ratio {wall_mon / wall_anchor:.3f}; "
              f"max |diff| {diff:.1e}")  # fmt: skip


def bench_cuda_varying(reps: int) -> None:
    """Rollout counts that change every step (2048-4096, as after filtering): graphed (one bucket) against eager."""
    if not torch.cuda.is_available():
        return
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(2)
    sizes = torch.randint(2049, 4097, (200,)).tolist()
    batches = []
    for n in sizes[:20]:
        act = torch.randn(n, 4096, device=dev, generator=gen).to(torch.bfloat16)
        batches.append((act, torch.rand(n, device=dev, generator=gen) < 0.2, torch.randn(n, device=dev, generator=gen)))
    v = torch.randn(4096, device=dev, generator=gen).to(torch.bfloat16)
    out = []
    for graph in (True, False):
        mon = RoutingMonitor(capacity=CAPACITY, warmup=WARMUP, device=dev, cuda_graph=graph)
        for act, hack, adv in batches[:3]:
            mon.step(act, v, hack, adv)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(len(sizes)):
            act, hack, adv = batches[i % len(batches)]
            mon.step(act, v, hack, adv)
        out.append((time.perf_counter() - t0) * 1e3 / len(sizes))
    print(f"  varying N (2049-4096 rollouts a step, 200 steps): graphed {out[0]:.3f} ms/step, eager {out[1]:.3f} "
          f"ms/step (step() wall with its host sync)")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 4096, 65536])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument(
        "--threads", type=int, default=1,
        help="threads for torch and for numpy/scipy's BLAS/OpenMP pools (default 1: two OpenMP runtimes spinning "
        "on a small shared machine distort both sides; 0 leaves the libraries' defaults)",
    )  # fmt: skip
    args = p.parse_args()
    limits: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if args.threads:
        torch.set_num_threads(args.threads)
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=args.threads)
    with limits:
        bench_cpu(args.sizes, args.dim, args.reps)
        bench_cuda(args.reps)
        bench_cuda_varying(args.reps)


if __name__ == "__main__":
    main()
