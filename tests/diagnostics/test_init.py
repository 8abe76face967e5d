"""steptable.diagnostics: importing the package does not import torch (its names load on first use)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_is_lazy() -> None:
    code = "import sys, steptable.diagnostics; assert 'torch' not in sys.modules; print('ok')"
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
