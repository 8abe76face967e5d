"""The demo's routing diagnostics, computed by the real RoutingMonitor on synthetic activations (needs torch)."""

from __future__ import annotations

import torch

from steptable.diagnostics import RoutingMonitor


class SyntheticRouting:
    """Rollout activations in which hacks lean along a probe direction; the direction is refreshed every 50 steps."""

    def __init__(self, seed: int, n: int = 256, dim: int = 64, refresh_every: int = 50) -> None:
        self.gen = torch.Generator().manual_seed(1000 + seed)
        self.n, self.dim, self.refresh_every = n, dim, refresh_every
        self.true_dir = self._unit(torch.randn(dim, generator=self.gen))
        self.v_act = self.true_dir.clone()
        self.monitor = RoutingMonitor(capacity=4096, warmup=512)

    @staticmethod
    def _unit(v: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = v / v.norm()
        return out

    def synthetic_step(self, step: int, hack_p: float) -> dict[str, float | int]:
        """The routing columns of one monitor step on fresh rollouts, hacks drawn at rate ``hack_p`` (``stale``
        as an int)."""
        g = self.gen
        refreshed = step % self.refresh_every == 0
        if refreshed:  # re-extract the probe: a noisy estimate of the true hack direction
            self.v_act = self._unit(self.true_dir + 0.3 * torch.randn(self.dim, generator=g) / self.dim**0.5)
        hack = torch.rand(self.n, generator=g) < hack_p
        act = torch.randn(self.n, self.dim, generator=g) + 2.0 * hack[:, None] * self.true_dir
        adv = torch.randn(self.n, generator=g) + 0.5 * hack
        g_keep = [torch.randn(32, 32, generator=g)]
        g_quar = [torch.randn(32, 32, generator=g) * float(hack.float().mean()) * 2]
        out: dict[str, float | int] = dict(
            self.monitor.step(act, self.v_act, hack, adv, g_keep=g_keep, g_quar=g_quar, refreshed=refreshed)
        )
        stale = out.get("stale")
        if isinstance(stale, float) and stale == stale:
            out["stale"] = int(stale)
        return out
