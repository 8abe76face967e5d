"""First frame of a large W&B run: ``steptable watch`` against W&B's own terminal viewer ``wandb leet`` on the same
``.wandb`` file, in the same run, each in a real terminal (a detached 200x50 tmux session).

    python bench/bench_leet.py                       # 100,000 steps x 42 keys (about 350 MB; written once, kept)
    python bench/bench_leet.py --steps 20000 --repeat 2

The run is logged offline by wandb itself (``run.log`` of 42 keys per step: minutes to write, so it is kept under
``--data`` and reused). "First frame" is the time from launching the command to its screen showing the run's last
step: LEET's summary panel showing ``_step <last>``, steptable's table showing the row of the last step. Goal: at
most half of LEET's time. Each command's time is printed, and the ratio of each pair, run one after the other.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench_records import write_wandb
from bench_sweep import pty_first_frame


def generate(root: Path, steps: int) -> Path:
    """The run's ``.wandb`` file under ``root`` (written by wandb offline on the first call)."""
    done = root / "written"
    if not (done.exists() and done.read_text() == str(steps)):
        shutil.rmtree(root / "wandb", ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        t = write_wandb(root, steps, "leet-bench")
        print(f"  wandb wrote {steps} steps in {t:.0f} s", file=sys.stderr)
        done.write_text(str(steps))
    (path,) = (root / "wandb").glob("offline-run-*/run-*.wandb")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for either command's last step")
    ap.add_argument("--data", type=Path, help="where the run is written once (default /tmp/steptable-leet-STEPS)")
    args = ap.parse_args()
    wandb = shutil.which("wandb")
    if wandb is None or subprocess.run([wandb, "leet", "--help"], capture_output=True).returncode != 0:
        sys.exit("wandb leet is not installed here (pip install 'wandb>=0.22'): no anchor to measure against")
    path = generate(args.data or Path(f"/tmp/steptable-leet-{args.steps}"), args.steps)
    last = args.steps - 1
    print(f"{path.stat().st_size / 1e6:.0f} MB, {args.steps} steps x 42 keys: first frame with step {last} on screen")
    leet_cmd = [wandb, "leet", str(path)]
    ours_cmd = [sys.executable, "-m", "steptable", "watch", str(path)]
    leet_needle = re.compile(rf"_step\s+{last}\b")
    ours_needle = re.compile(rf"(?m)^{last}\s")
    worst = 0.0
    for i in range(args.repeat):
        leet = pty_first_frame(leet_cmd, leet_needle, args.timeout)
        ours = pty_first_frame(ours_cmd, ours_needle, args.timeout)
        worst = max(worst, ours / leet)
        print(f"  run {i + 1}: wandb leet {leet:6.2f} s   steptable watch {ours:6.2f} s   = {ours / leet:.2f}x LEET")
    print(f"worst ratio {worst:.2f}x LEET (goal <= 0.5x)")


if __name__ == "__main__":
    main()
