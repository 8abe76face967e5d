"""steptable.diagnostics._dist: RoutingMonitor under torch.distributed: 2 gloo processes on CPU give the
single-process values on the concatenated rollouts (unequal N per rank, including an empty rank; padded gathers),
qmass of DTensor (FSDP2) gradients is the full tensors' on every rank, and a process alone needs no collective."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from steptable.diagnostics import COLUMNS, RoutingMonitor, quarantine_mass
from steptable.diagnostics._dist import pad_size, world_size

dist = pytest.importorskip("torch.distributed")

D = 12
STEPS = 5
CONFIGS: dict[str, dict[str, Any]] = {
    # max-N agreed by a CPU all_reduce each step; DDP-like gradients (the same on both ranks)
    "auto_pad": {"capacity": 128, "warmup": 60},
    # static pad_to, sharded gradients, a nan activation row dropped
    "static_pad": {"capacity": 128, "warmup": 60, "pad_to": 40, "sharded_grads": True, "nan_policy": "drop"},
}


def rows_on(rank: int, t: int) -> int:
    return (20 + 3 * t) if rank == 0 else (0 if t == 3 else 31 - 2 * t)


def make_step(rank: int, t: int, name: str) -> dict[str, Any]:
    """The rank's inputs of step t (deterministic, so the test can rebuild every rank's data)."""
    gv = torch.Generator().manual_seed(1000 + t)
    v = torch.randn(D, generator=gv)
    g = torch.Generator().manual_seed(100 * t + rank)
    n = rows_on(rank, t)
    hack = torch.rand(n, generator=g) < 0.3
    act = torch.randn(n, D, generator=g) + 0.5 * hack[:, None] * v
    if name == "static_pad" and rank == 0 and t == 2:
        act[1, 0] = float("nan")
    adv = torch.randn(n, generator=g)
    gg = torch.Generator().manual_seed(7 + t)
    full = [torch.randn(7, generator=gg), torch.randn(2, 3, generator=gg)]
    if CONFIGS[name].get("sharded_grads"):  # each rank holds a shard of each gradient
        keep = [full[0][:4] if rank == 0 else full[0][4:]]
        quar = [full[1][rank]]
    else:
        keep, quar = [full[0]], [full[1]]
    return {"act": act, "v_act": v, "hack": hack, "adv": adv, "g_keep": keep, "g_quar": quar}


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        results = {}
        for name, cfg in CONFIGS.items():
            mon = RoutingMonitor(**cfg)
            results[name] = [mon.step(**make_step(rank, t, name), refreshed=t == 2) for t in range(STEPS)]
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))
        dist.barrier()  # neither rank tears gloo down while the other still has traffic in flight
    finally:
        dist.destroy_process_group()


def _close(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def _run_ranks(tmp_path: Path, worker: str) -> list[dict[str, Any]]:
    """Run ``worker(rank, init_file, out_dir)`` of this module in 2 gloo processes; their rank{r}.json results."""
    root = Path(__file__).resolve().parents[2]
    # The worker returns after a barrier and destroy_process_group; the process then leaves by os._exit, so no
    # C++ destructor of torch's process-group registries runs at interpreter exit. A rank aborted once in CI and
    # once in 20 runs here ("terminate called without an active exception", SIGABRT, no Python traceback: torch's
    # gloo teardown, after the values). An exception in the worker still exits 1 with its traceback.
    code = (
        "import os, sys; sys.path[:0] = [{root!r}]; "
        "from tests.diagnostics.test_dist import {worker}; {worker}({rank}, {init!r}, {out!r}); "
        "sys.stdout.flush(); sys.stderr.flush(); os._exit(0)"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                code.format(
                    root=str(root),
                    worker=worker,
                    rank=r,
                    init=str(tmp_path / "init"),
                    out=str(tmp_path),
                ),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-3000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


def test_gloo_two_ranks_equal_single_process(tmp_path: Path) -> None:
    ranks = _run_ranks(tmp_path, "_worker")

    for name, cfg in CONFIGS.items():
        single_cfg = {k: v for k, v in cfg.items() if k not in ("pad_to", "sharded_grads")}
        single = RoutingMonitor(**single_cfg, distributed=False)
        for t in range(STEPS):
            parts = [make_step(r, t, name) for r in range(2)]
            joined = {k: torch.cat([p[k] for p in parts]) for k in ("act", "hack", "adv")}
            if cfg.get("sharded_grads"):  # the full gradients, rebuilt from the shards
                grads = {k: [torch.cat([p[k][0].reshape(-1) for p in parts])] for k in ("g_keep", "g_quar")}
            else:
                grads = {k: parts[0][k] for k in ("g_keep", "g_quar")}
            want = single.step(v_act=parts[0]["v_act"], **joined, **grads, refreshed=t == 2)
            for r in range(2):
                got = ranks[r][name][t]
                assert list(got) == list(COLUMNS)
                assert all(_close(got[k], want[k]) for k in COLUMNS), (name, t, r, got, want)
        assert not math.isnan(want["tlo"])  # the later steps are past warmup


def _dtensor_full() -> dict[str, Any]:
    """The full gradients of the DTensor test: a (Shard), b0 + b1 (Partial addends), c (replicate x shard), d."""
    g = torch.Generator().manual_seed(21)
    shapes = {"a": (7, 3), "b0": (4,), "b1": (4,), "c": (5, 2), "d": (6,)}
    return {k: torch.randn(*s, generator=g) for k, s in shapes.items()}


def _dtensor_grads(rank: int) -> tuple[list[Any], list[Any]]:
    """FSDP2-like gradients on 2 ranks: Shard(0) of a 1-D mesh (uneven rows), Partial (each rank holds an addend),
    replicate x shard on a (2, 1) mesh (both ranks hold the whole tensor), and a plain tensor the same on both
    ranks."""
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor, init_device_mesh

    full = _dtensor_full()
    mesh = init_device_mesh("cpu", (2,))
    mesh2 = init_device_mesh("cpu", (2, 1), mesh_dim_names=("dp", "fsdp"))
    keep = [distribute_tensor(full["a"], mesh, [Shard(0)]), DTensor.from_local(full[f"b{rank}"], mesh, [Partial()])]
    quar = [distribute_tensor(full["c"], mesh2, [Replicate(), Shard(0)]), full["d"]]
    return keep, quar


def _dtensor_worker(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        keep, quar = _dtensor_grads(rank)
        qm = quarantine_mass(keep, quar)
        results = {"type": type(qm).__name__, "quarantine_mass": qm.item()}
        for sharded in (False, True):
            mon = RoutingMonitor(capacity=64, warmup=8, sharded_grads=sharded)
            g = torch.Generator().manual_seed(rank)
            act, v, hack = torch.randn(10, 4, generator=g), torch.ones(4), torch.rand(10, generator=g) < 0.5
            results[f"sharded={sharded}"] = mon.step(act, v, hack, g_keep=keep, g_quar=quar)["qmass"]
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))
        dist.barrier()  # neither rank tears gloo down while the other still has traffic in flight
    finally:
        dist.destroy_process_group()


def test_gloo_two_ranks_dtensor_grads(tmp_path: Path) -> None:
    """DTensor norms are the full tensors' norms on every rank, and sharded_grads=True sums only the plain
    tensors' squared norms across ranks (a DTensor's is global already)."""
    pytest.importorskip("torch.distributed.tensor")
    ranks = _run_ranks(tmp_path, "_dtensor_worker")
    full = _dtensor_full()
    sq = {k: float((t.double() ** 2).sum()) for k, t in full.items()}
    keep = math.sqrt(sq["a"] + float(((full["b0"] + full["b1"]).double() ** 2).sum()))

    def qmass(quar_sq: float) -> float:
        return math.sqrt(quar_sq) / (keep + math.sqrt(quar_sq))

    for got in ranks:
        assert got["type"] == "Tensor"  # not a DTensor
        assert _close(got["quarantine_mass"], qmass(sq["c"] + sq["d"]), 1e-12), got
        assert _close(got["sharded=False"], qmass(sq["c"] + sq["d"]), 1e-12), got
        assert _close(got["sharded=True"], qmass(sq["c"] + 2 * sq["d"]), 1e-12), got  # d is summed over 2 ranks


def test_without_an_initialised_group_the_world_is_one_process() -> None:
    assert not dist.is_initialized()
    assert world_size(None, None) == 1 and world_size(False, None) == 1
    with pytest.raises(RuntimeError, match="not initialised"):
        world_size(True, None)


def test_a_static_pad_size_needs_no_collective_and_bounds_the_rows() -> None:
    assert pad_size(7, 40, None, torch.device("cpu")) == 40  # no group needed: no all_reduce
    with pytest.raises(ValueError, match="41 rollouts on this rank exceed pad_to=40"):
        pad_size(41, 40, None, torch.device("cpu"))

