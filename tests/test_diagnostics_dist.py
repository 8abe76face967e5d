"""RoutingMonitor under torch.distributed: 2 gloo processes on CPU give the single-process values on the
concatenated rollouts (unequal N per rank, including an empty rank; padded gathers)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from steptable.diagnostics import COLUMNS, RoutingMonitor  # noqa: E402

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
    finally:
        dist.destroy_process_group()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def test_gloo_two_ranks_equal_single_process(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys; sys.path[:0] = [{root!r}, {tests!r}]; "
        "from test_diagnostics_dist import _worker; _worker({rank}, {init!r}, {out!r})"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                code.format(
                    root=str(root), tests=str(root / "tests"), rank=r, init=str(tmp_path / "init"), out=str(tmp_path)
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
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]

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
